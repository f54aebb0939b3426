// sm90 GEMM dispatcher (samebits::cuda::dense::gemm): fills GemmTmaParams
// (TMA descriptors included), picks the tile from gemm_tile_configs.h and
// launches one configuration.
//
// Operands the TMA cannot read directly (a row start or a stride not a
// multiple of 16 bytes) and B in the (k, n) layout are first copied by a
// packing kernel into a stream-ordered scratch buffer in the (rows, k) layout
// with a 16-byte-aligned row stride; the same kernel then runs on the copy.
// The copy holds the same values, so the bits are those of the direct path:
// one kernel, one order, for every layout and alignment.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/backend.h"
#include "cuda/driver_entry_points.h"
#include "cuda/dense/dense_cuda.h"
#include "cuda/dense/gemm_launch_sm90.h"

namespace samebits::cuda::dense {
namespace sm90 {
namespace {

int sm_count(int device) {
  static int cache[64] = {};
  const int d = device & 63;
  if (cache[d] == 0) {
    int n = 0;
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    cache[d] = n > 0 ? n : 1;
  }
  return cache[d];
}

// A 16-bit (rows, k) operand, possibly batched: element (z, r, c) at
// ptr[z * batch_stride + r * row_stride + c].
struct Operand {
  const void* ptr;
  int64_t rows, k, row_stride, batch_stride;
  int32_t batches;  // 1 when broadcast over the batch
};

bool tma_readable(const Operand& o) {
  return (reinterpret_cast<uintptr_t>(o.ptr) & 15) == 0 && o.row_stride % 8 == 0 &&
         (o.batches == 1 || o.batch_stride % 8 == 0) && o.row_stride > 0;
}

// `o` as a 3-D tensor map (x = k, y = row, z = batch) of box_k x box_rows x 1
// boxes, 128-byte swizzle unless `swizzle` says otherwise, zero fill outside.
CUresult encode_map(CUtensorMap* map, const Operand& o, sb_dtype dt, int box_k, int box_rows,
                    CUtensorMapL2promotion promotion, CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  auto fn = samebits::cuda::tensor_map_encode_fn();
  if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  const cuuint64_t dims[3] = {cuuint64_t(o.k > 0 ? o.k : 1), cuuint64_t(o.rows), cuuint64_t(o.batches)};
  const int64_t rs = o.row_stride * 2;
  const int64_t bs = o.batches > 1 ? o.batch_stride * 2 : rs * o.rows;
  const cuuint64_t strides[2] = {cuuint64_t(rs), cuuint64_t(bs)};
  const cuuint32_t box[3] = {cuuint32_t(box_k), cuuint32_t(box_rows), 1};
  const cuuint32_t estr[3] = {1, 1, 1};
  return fn(map, dt == SB_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3,
            const_cast<void*>(o.ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle, promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// An operand's load map: boxes of 64 k x box_rows rows.
sb_status encode(CUtensorMap* map, const Operand& o, sb_dtype dt, int box_rows) {
  if (samebits::cuda::tensor_map_encode_fn() == nullptr)
    return fail(SB_CUDA_ERROR, "gemm: cuTensorMapEncodeTiled is not available from the driver");
  const CUresult r = encode_map(map, o, dt, kBK, box_rows, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  if (r != CUDA_SUCCESS) return fail(SB_CUDA_ERROR, "gemm: cuTensorMapEncodeTiled failed (" + std::to_string(int(r)) + ")");
  return SB_OK;
}

// ---- packing: (rows, k) or (k, rows) source -> (rows, ld) contiguous copy ---
int64_t packed_ld(int64_t k) { return ((k > 0 ? k : 1) + 7) / 8 * 8; }

__global__ void pack_rows_kernel(const uint16_t* __restrict__ src, uint16_t* __restrict__ dst, int64_t rows,
                                 int64_t k, int64_t ld, int64_t row_stride, int64_t batch_stride, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % ld, rr = i / ld, z = rr / rows, r = rr % rows;
    dst[i] = c < k ? src[z * batch_stride + r * row_stride + c] : uint16_t(0);
  }
}

// src element (z, kk, j) at src[z * batch_stride + kk * row_stride + j] ->
// dst[(z * n + j) * ld + kk]; 32 x 32 tiles through shared memory.
__global__ void transpose_kn_kernel(const uint16_t* __restrict__ src, uint16_t* __restrict__ dst, int64_t n,
                                    int64_t k, int64_t ld, int64_t row_stride, int64_t batch_stride) {
  __shared__ uint16_t t[32][33];
  const int64_t z = blockIdx.z, j0 = int64_t(blockIdx.x) * 32, k0 = int64_t(blockIdx.y) * 32;
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int64_t kk = k0 + r, j = j0 + threadIdx.x;
    t[r][threadIdx.x] = (kk < k && j < n) ? src[z * batch_stride + kk * row_stride + j] : uint16_t(0);
  }
  __syncthreads();  // tile loaded
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int64_t j = j0 + r, kk = k0 + threadIdx.x;
    if (j < n && kk < ld) dst[(z * n + j) * ld + kk] = t[threadIdx.x][r];
  }
}

// Copies `o` (or its (k, rows) transpose when `kn`) into scratch at `dst`
// and rewrites `o` to describe the copy.
void pack(Operand& o, bool kn, uint16_t* dst, cudaStream_t s) {
  const int64_t ld = packed_ld(o.k);
  if (kn) {
    dim3 grid(unsigned((o.rows + 31) / 32), unsigned((ld + 31) / 32), unsigned(o.batches));
    transpose_kn_kernel<<<grid, dim3(32, 8), 0, s>>>(static_cast<const uint16_t*>(o.ptr), dst, o.rows, o.k, ld,
                                                    o.row_stride, o.batch_stride);
  } else {
    const int64_t total = int64_t(o.batches) * o.rows * ld;
    const int64_t blocks = (total + 255) / 256 < 65536 ? (total + 255) / 256 : 65536;
    pack_rows_kernel<<<unsigned(blocks), 256, 0, s>>>(static_cast<const uint16_t*>(o.ptr), dst, o.rows, o.k, ld,
                                                     o.row_stride, o.batch_stride, total);
  }
  o.ptr = dst;
  o.row_stride = ld;
  o.batch_stride = o.rows * ld;
}

// SAMEBITS_GEMM_TILE=<name> forces one table entry (tests and benchmarks use
// it to prove that every entry gives the same bits). Read on every call. An
// unknown name is an error, not a silent fallback to the default choice: a
// check that forces an entry this build lacks must fail, not pass vacuously.
sb_status forced_tile(GemmTile* t, bool* forced) {
  *forced = false;
  const char* e = std::getenv("SAMEBITS_GEMM_TILE");
  if (e == nullptr || *e == 0) return SB_OK;
  std::string known;
  for (int i = 0; i < int(GemmTile::kCount); ++i) {
    if (std::strcmp(e, gemm_tile_name(GemmTile(i))) == 0) {
      if (!gemm_tile_built(GemmTile(i)))
        return fail(SB_UNSUPPORTED, std::string("SAMEBITS_GEMM_TILE: '") + e +
                                        "' is a measurement entry this build leaves out (configure with "
                                        "-DSAMEBITS_GEMM_RESEARCH_TILES=ON to build it)");
      *t = GemmTile(i);
      *forced = true;
      return SB_OK;
    }
    known += (i ? ", " : "") + std::string(gemm_tile_name(GemmTile(i)));
  }
  return fail(SB_INVALID_ARGUMENT, std::string("SAMEBITS_GEMM_TILE: unknown tile entry '") + e + "' (known: " + known + ")");
}

// Which epilogue stores the output. Unset: the entries with kTmaStore stage
// it through shared memory where the output allows (16-bit, rows TMA can
// address), the others store it directly. SAMEBITS_GEMM_EPILOGUE=direct:
// every entry stores directly. =staged: the staged epilogue is required, and
// a call that cannot take it is an error (so a check that asks for it cannot
// pass on the direct one). =staged-rem-direct: staged, but a fragment's
// columns past its last whole 64-column block (128x96, 128x160, 128x168, ...)
// go straight from the accumulators, as before the thirty-first session
// (measurements). All give the same bits (one function computes the
// values); tests and benchmarks compare them. Read on every call; an
// unknown value is an error.
enum class Epilogue { kAuto, kDirect, kStaged, kStagedRemDirect };

// Whether a call runs its entry's lean kernel (kLean,
// gemm_kernel_sm90_tma_wgmma.cuh: only the common call's epilogue compiled
// in, the same bits). Unset: wherever it applies (no bias, the output in the
// operands' dtype; an entry with the staged epilogue staged, the remainder
// columns' map encoded; not the ping-pong entries).
// SAMEBITS_GEMM_LEAN=0: never (measurements). =require: a call it cannot
// run is an error (so a check that asks for it cannot pass on the generic
// kernel). Read on every call; an unknown value is an error.
enum class LeanChoice { kAuto, kOff, kRequire };
sb_status lean_choice(LeanChoice* lean) {
  *lean = LeanChoice::kAuto;
  const char* e = std::getenv("SAMEBITS_GEMM_LEAN");
  if (e == nullptr || *e == 0) return SB_OK;
  if (std::strcmp(e, "0") == 0) {
    *lean = LeanChoice::kOff;
    return SB_OK;
  }
  if (std::strcmp(e, "require") == 0) {
    *lean = LeanChoice::kRequire;
    return SB_OK;
  }
  return fail(SB_INVALID_ARGUMENT, std::string("SAMEBITS_GEMM_LEAN: unknown value '") + e + "' (known: 0, require)");
}
sb_status epilogue_choice(Epilogue* epi) {
  *epi = Epilogue::kAuto;
  const char* e = std::getenv("SAMEBITS_GEMM_EPILOGUE");
  if (e == nullptr || *e == 0) return SB_OK;
  if (std::strcmp(e, "direct") == 0) {
    *epi = Epilogue::kDirect;
    return SB_OK;
  }
  if (std::strcmp(e, "staged") == 0) {
    *epi = Epilogue::kStaged;
    return SB_OK;
  }
  if (std::strcmp(e, "staged-rem-direct") == 0) {
    *epi = Epilogue::kStagedRemDirect;
    return SB_OK;
  }
  return fail(SB_INVALID_ARGUMENT, std::string("SAMEBITS_GEMM_EPILOGUE: unknown epilogue '") + e +
                                       "' (known: staged, staged-rem-direct, direct)");
}

// The output as a TMA store target: (m rows, n columns, batch) seen as an
// operand, boxes of kEpiBlock rows x `cols` columns laid out in shared
// memory as store_tile_staged_body writes them (cols = kEpiBlock: the 64 x
// 64 blocks, 128-byte swizzle; 32: 64-byte swizzle; otherwise unswizzled
// rows). False (and no map) where TMA cannot address it (not 16-bit, a base
// or a stride not a multiple of 16 bytes) or the driver refuses the map.
bool encode_out(CUtensorMap* map, const sb_gemm_params& p, int cols = kEpiBlock) {
  if (p.out_dtype != SB_BF16 && p.out_dtype != SB_F16) return false;
  const Operand o{p.out, p.m, p.n, p.out_row_stride, p.out_batch_stride, p.batch};
  const CUtensorMapSwizzle sw = cols == kEpiBlock ? CU_TENSOR_MAP_SWIZZLE_128B
                                : cols == 32      ? CU_TENSOR_MAP_SWIZZLE_64B
                                                  : CU_TENSOR_MAP_SWIZZLE_NONE;
  return tma_readable(o) &&
         encode_map(map, o, p.out_dtype, cols, kEpiBlock, CU_TENSOR_MAP_L2_PROMOTION_NONE, sw) == CUDA_SUCCESS;
}

template <bool kF16>
cudaError_t launch_tile(GemmTile t, GemmTmaParams& kp, int dev, int sms, cudaStream_t s) {
  return visit_gemm_tile(t, [&](auto cfg) -> cudaError_t {
    using Cfg = decltype(cfg);
    if constexpr (kGemmCfgBuilt<Cfg>)
      return launch_gemm_tma_wgmma<Cfg, kF16>(kp, dev, sms, s);
    else
      return cudaErrorNotSupported;  // not reached: gemm_16bit checks gemm_tile_built first
  });
}

// What the host needs of an entry: the TMA box rows of A and B, and the rows
// of one scheduling unit (a cluster tile: kClusterM CTA tiles along M).
struct TileBoxes {
  int a_rows, b_rows, sched_bm, bn;
  bool tma_store;  // the entry has the staged epilogue
  int rem_cols;    // its fragment's columns past the last whole 64-column block (0: none)
  bool lean;       // the entry has lean kernels (gemm_kernel_sm90_tma_wgmma.cuh, kLean)
};
TileBoxes tile_boxes(GemmTile t) {
  return visit_gemm_tile(t, [](auto cfg) {
    using Cfg = decltype(cfg);
    return TileBoxes{Cfg::BM, Cfg::kBBoxRows, Cfg::BM * Cfg::kClusterM, Cfg::BN, Cfg::kTmaStore,
                     Cfg::kTmaStore ? Cfg::WN % kEpiBlock : 0, !Cfg::kPingPong};
  });
}

// Bytes [lo, hi) that an (m, n) operand of p (out or bias) may touch.
struct Span {
  uintptr_t lo, hi;
};
Span span_of(const sb_gemm_params& p, const void* ptr, sb_dtype dt, int64_t batch_stride, int64_t row_stride) {
  if (p.m <= 0 || p.n <= 0) return {0, 0};
  const int64_t last = int64_t(p.batch - 1) * batch_stride + (p.m - 1) * row_stride + p.n;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
  return {lo, lo + uintptr_t(last * (dt == SB_F32 ? 4 : 2))};
}
bool overlaps(Span x, Span y) { return x.lo < y.hi && y.lo < x.hi; }

sb_status gemm_16bit(const sb_gemm_params& p) {
  cudaStream_t s = static_cast<cudaStream_t>(p.stream);
  int dev = 0;
  cudaGetDevice(&dev);
  const int sms = sm_count(dev);

  Operand a{p.a, p.m, p.k, p.a_row_stride, p.a_batch_stride, p.a_batch_stride == 0 ? 1 : p.batch};
  Operand b{p.b, p.n, p.k, p.b_row_stride, p.b_batch_stride, p.b_batch_stride == 0 ? 1 : p.batch};
  if (p.batch == 1) a.batches = b.batches = 1;
  const bool kn = p.b_layout == SB_B_KN;
  const bool pack_a = p.k > 0 && !tma_readable(a);
  const bool pack_b = p.k > 0 && (kn || !tma_readable(b));
  if (p.k == 0) {  // no k tile is loaded; the maps only need to be well formed
    a.row_stride = b.row_stride = 8;
    a.batch_stride = b.batch_stride = 0;
    a.batches = b.batches = 1;
    a.ptr = b.ptr = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p.out) & ~uintptr_t(15));
  }

  GemmTile tile;
  bool forced = false;
  Epilogue epi = Epilogue::kAuto;
  if (sb_status fst = forced_tile(&tile, &forced); fst != SB_OK) return fst;
  if (sb_status est = epilogue_choice(&epi); est != SB_OK) return est;
  LeanChoice lean = LeanChoice::kAuto;
  if (sb_status lst = lean_choice(&lean); lst != SB_OK) return lst;
  if (!forced) {
    tile = pick_gemm_tile(p.m, p.n, p.batch, sms);
    if (!gemm_tile_built(tile))  // the rule picks built entries only (tests/cpp/test_gemm_rule.cpp)
      return fail(SB_INTERNAL, std::string("gemm: tile entry ") + gemm_tile_name(tile) + " is not in this build");
  }

  const TileBoxes tb = tile_boxes(tile);
  const int bm = tb.sched_bm, bn = tb.bn;
  GemmTmaParams kp;
  std::memset(&kp, 0, sizeof(kp));
  kp.out_tma = epi != Epilogue::kDirect && tb.tma_store && encode_out(&kp.tma_c, p) ? 1 : 0;
  kp.out_tma_rem = kp.out_tma && tb.rem_cols > 0 && epi != Epilogue::kStagedRemDirect &&
                           encode_out(&kp.tma_c_rem, p, tb.rem_cols)
                       ? 1
                       : 0;
  const bool lean_fits = tb.lean && p.bias == nullptr && p.out_dtype == p.dtype &&
                         (!tb.tma_store || (kp.out_tma && (tb.rem_cols == 0 || kp.out_tma_rem)));
  if (lean == LeanChoice::kRequire && !lean_fits)
    return fail(SB_INVALID_ARGUMENT,
                std::string("SAMEBITS_GEMM_LEAN=require: this call cannot run tile entry ") + gemm_tile_name(tile) +
                    "'s lean kernel (it needs no bias, the output in the operands' dtype and, on an entry with the staged "
                    "epilogue, that epilogue)");
  kp.lean = lean != LeanChoice::kOff && lean_fits ? 1 : 0;
  if (epi == Epilogue::kStaged && !kp.out_tma)
    return fail(SB_INVALID_ARGUMENT,
                std::string("SAMEBITS_GEMM_EPILOGUE=staged: ") +
                    (tb.tma_store ? "the output cannot be a TMA store target (16-bit, 16-byte aligned base and strides)"
                                  : "tile entry " + std::string(gemm_tile_name(tile)) + " has no staged epilogue"));

  void* scratch = nullptr;
  if (pack_a || pack_b) {
    const int64_t ld = packed_ld(p.k);
    const int64_t na = pack_a ? int64_t(a.batches) * a.rows * ld : 0;
    const int64_t nb = pack_b ? int64_t(b.batches) * b.rows * ld : 0;
    const int64_t na_al = (na + 63) / 64 * 64;  // keep the B copy 128-byte aligned
    cudaError_t e = cudaMallocAsync(&scratch, size_t(na_al + nb) * 2, s);
    if (e != cudaSuccess) return fail(SB_CUDA_ERROR, std::string("gemm: scratch allocation: ") + cudaGetErrorString(e));
    uint16_t* base = static_cast<uint16_t*>(scratch);
    if (pack_a) pack(a, false, base, s);
    if (pack_b) pack(b, kn, base + na_al, s);
  }

  sb_status st = encode(&kp.tma_a, a, p.dtype, tb.a_rows);
  if (st == SB_OK) st = encode(&kp.tma_b, b, p.dtype, tb.b_rows);
  if (st != SB_OK) {
    if (scratch != nullptr) cudaFreeAsync(scratch, s);
    return st;
  }
  kp.m = p.m;
  kp.n = p.n;
  kp.k = p.k;
  kp.batch = p.batch;
  kp.a_batched = a.batches > 1;
  kp.b_batched = b.batches > 1;
  kp.m_tiles = int32_t((p.m + bm - 1) / bm);
  kp.n_tiles = int32_t((p.n + bn - 1) / bn);
  kp.k_tiles = int32_t((p.k + kBK - 1) / kBK);
  kp.tiles = int64_t(p.batch) * kp.m_tiles * kp.n_tiles;
  const char* group_env = std::getenv("SAMEBITS_GEMM_GROUP_M");  // scheduling only (BITS-FREE): raster measurements
  const int group_m = group_env != nullptr ? std::atoi(group_env) : 0;
  kp.group_m = group_m >= 1 ? group_m : kGroupM;
  // SAMEBITS_GEMM_TAIL_M / _N (measurement, BITS-FREE): eighths of a tile a
  // last tile must reach past the operand to move back (0 any, 9 never)
  auto tail_env = [](const char* name, int dflt) {
    const char* e = std::getenv(name);
    return e != nullptr && e[0] != '\0' ? std::atoi(e) : dflt;
  };
  kp.tail_m8 = tail_env("SAMEBITS_GEMM_TAIL_M", 0);
  kp.tail_n8 = tail_env("SAMEBITS_GEMM_TAIL_N", 0);
  // A moved last tile reads bias rows (columns) that the tile before it has
  // already stored: where out and bias share memory (an in-place addmm,
  // out = bias), every tile keeps its plain place, so each element's bias
  // is read before that element is stored, by the same CTA.
  if (p.bias != nullptr && overlaps(span_of(p, p.out, p.out_dtype, p.out_batch_stride, p.out_row_stride),
                                     span_of(p, p.bias, p.bias_dtype, p.bias_batch_stride, p.bias_row_stride)))
    kp.tail_m8 = kp.tail_n8 = 9;
  kp.out = p.out;
  kp.out_dtype = p.out_dtype;
  const int osz = p.out_dtype == SB_F32 ? 4 : 2;
  kp.out_pairs = (reinterpret_cast<uintptr_t>(p.out) % (2 * osz)) == 0 && p.out_row_stride % 2 == 0 &&
                 (p.batch == 1 || p.out_batch_stride % 2 == 0);
  kp.out_batch_stride = p.out_batch_stride;
  kp.out_row_stride = p.out_row_stride;
  kp.bias = p.bias;
  kp.bias_dtype = p.bias_dtype;
  kp.bias_batch_stride = p.bias_batch_stride;
  kp.bias_row_stride = p.bias_row_stride;
  kp.alpha = p.alpha;
  kp.beta = p.beta;

  const cudaError_t e = p.dtype == SB_F16 ? launch_tile<true>(tile, kp, dev, sms, s)
                                          : launch_tile<false>(tile, kp, dev, sms, s);
  if (scratch != nullptr) cudaFreeAsync(scratch, s);
  if (e != cudaSuccess) return fail(SB_CUDA_ERROR, std::string("gemm launch: ") + cudaGetErrorString(e));
  return SB_OK;
}

}  // namespace
}  // namespace sm90

sb_status gemm(const sb_gemm_params& p) {
  if (p.dtype == SB_F32) return sm90::gemm_f32(p);
  if (p.m > (int64_t(1) << 31) || p.n > (int64_t(1) << 31) || p.k > (int64_t(1) << 31))
    return fail(SB_UNSUPPORTED, "gemm: m, n and k must be < 2^31");
  return sm90::gemm_16bit(p);
}

}  // namespace samebits::cuda::dense
