// Experiment (not a test, not in ctest): do wgmma's per-element f32 results
// depend on which operand plays A and which plays B, or on the instruction's
// N? A decode kernel may compute attention transposed, with the G <= 8 (or
// 16) query heads of a GQA group as wgmma's N:
//   S^T = K Q^T     (A = K, two m64 tiles of keys; B = Q^T, N = G)
//   O^T = V^T P^T   (A = V^T from the same N-major V tile, transposed;
//                    B = P^T, N = G; accumulator acc^T)
// and still give the training forward's bits only if every element of the
// transposed products equals, bitwise, the forward's element.
//
// Cases, each over several seeds and two value distributions ("uniform":
// U(-1, 1); "mixed": signed values with exponents over 2^-12 .. 2^6, so any
// change of alignment or rounding inside the k16 step shows up):
//  1. S = Q K^T exactly as the forward's Consumer::issue_qk (A = Q, 64 rows,
//     K-major from 128B-swizzled smem; B = K, N = 128 keys, K-major; k16
//     steps ascending over d = 128; step 0 with scale-d = 0) against
//     S^T = K Q^T with A = K (m64 tiles of keys 0..63, 64..127, K-major) and
//     B = Q rows 0..G-1 (N = G, K-major), same k order. G = 8 and 16.
//  2. O = acc + P V exactly as the forward's Consumer::issue_pv (A = P from
//     registers, 64 rows x 128 keys; B = V, 128 keys x 128 dims, N-major
//     (trans-b = 1); k16 steps ascending over keys; acc random f32) against
//     O^T = acc^T + V^T P^T with A = V^T (the same V smem tile read MN-major,
//     trans-a = 1, m64 tiles of dims 0..63, 64..127) and B = P^T (P rows
//     0..G-1 K-major in smem: P is in shared memory here, not registers).
//  3. S = Q K^T in the normal roles (A = Q) with B = K cut into N = 64, 16
//     and 8 column tiles, against case 1's N = 128.
// A CPU check (f64, loose tolerance) confirms each layout reads the operands
// it is meant to, so a DIFF is a rounding difference, not a layout bug.
//
// Prints, per case and overall: elements compared, elements whose bits
// differ, max ulp distance, and a PASS (all bits equal) or DIFF line.
// Exit code 0 either way; nonzero only for a CUDA error or no sm90 device.
//
// Build: nvcc -arch=sm_90a -O3 -std=c++17 -I include -I src \
//          tests/cuda/experiment_wgmma_operand_roles.cu -o experiment_wgmma_operand_roles
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_fwd_harness.h"
#include "cuda/attention_fwd_sm90_mainloop.h"
#include "cuda/attention_fwd_sm90_params.h"
#include "cuda/sm90_primitives.h"
#include "cuda/wgmma_ops_sm90.h"

namespace sm90 = samebits::cuda::sm90;
using Cfg = sm90::FwdConfig<128, true>;  // the forward's hdim 128 bf16 tiles
using Consumer = sm90::Consumer<Cfg>;

constexpr int kD = Cfg::kHeadDim;      // 128 dims
constexpr int kKeys = Cfg::kBlockN;    // 128 keys per KV block
constexpr int kQRows = Cfg::kBlockM;   // Q tile rows in smem (two consumer WGs)
constexpr int kRows = 64;              // rows of one consumer warpgroup
constexpr int kRowBytes = Cfg::kRowBytes;  // 128: one swizzle row
static_assert(kD == 128 && kKeys == 128, "the experiment is written for d = Bn = 128");

// Shared-memory tiles (bytes), each 1024-byte aligned.
constexpr int kQBytes = Cfg::kQBytes;                 // Q: kQRows x d
constexpr int kKVBytes = Cfg::kKVBytes;               // K or V: Bn x d
constexpr int kPBytes = kRows * kKeys * 2;            // P: 64 x Bn
constexpr int kQChunk = kQRows * kRowBytes;           // Q: bytes per 64-column chunk
constexpr int kKVChunk = kKeys * kRowBytes;           // K, V: bytes per 64-column chunk
constexpr int kPChunk = kRows * kRowBytes;            // P: bytes per 64-key chunk
constexpr int kSmemQK = kQBytes + kKVBytes + 1024;    // + base alignment
constexpr int kSmemPV = kKVBytes + kPBytes + 1024;
static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0 && kPBytes % 1024 == 0, "atoms");

// ------------------------------------------------------------ wgmma wrappers
// The project's generated wrappers cover N = 64 / 128 / 256 with both smem
// operands K-major; the transposed roles need N = 8 / 16 and trans-a.
// D(64 x N, f32) (+)= A(64 x 16, smem) * B(16 x N, smem); scale_d = 0
// overwrites D. kTransA = 1: A is M-major (MN-major), else K-major; same for
// kTransB and N.
template <int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_ss_m64n8k16(float (&d)[4], uint64_t da, uint64_t db,
                                                  int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3}, %4, %5, p, 1, 1, %7, %8;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(scale_d), "n"(kTransA), "n"(kTransB));
}

template <int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_ss_m64n16k16(float (&d)[8], uint64_t da, uint64_t db,
                                                   int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, %11, %12;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7])
      : "l"(da), "l"(db), "r"(scale_d), "n"(kTransA), "n"(kTransB));
}

template <int N, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_ss_small(float (&d)[N / 2], uint64_t da, uint64_t db,
                                               int scale_d) {
  static_assert(N == 8 || N == 16, "small-N wrapper");
  if constexpr (N == 8) wgmma_ss_m64n8k16<kTransA, kTransB>(d, da, db, scale_d);
  if constexpr (N == 16) wgmma_ss_m64n16k16<kTransA, kTransB>(d, da, db, scale_d);
}

// ------------------------------------------------------------ device helpers
// Plain row-major rows x 128 bf16 -> the 128B-swizzled chunk layout that TMA
// writes (as Producer::load_tile_by_hand): element (r, c) in chunk c / 64 at
// row r, 16-byte unit ((c % 64) / 8) ^ (r % 8). 128 threads.
__device__ void store_sw128(uint8_t* dst, const __nv_bfloat16* src, int rows) {
  constexpr int kUnitsPerRow = kD / 8;
  for (int idx = threadIdx.x; idx < rows * kUnitsPerRow; idx += blockDim.x) {
    const int r = idx / kUnitsPerRow, unit = idx % kUnitsPerRow;
    const uint4 val = reinterpret_cast<const uint4*>(src + r * kD)[unit];
    uint8_t* chunk = dst + (unit / 8) * (rows * kRowBytes);
    *reinterpret_cast<uint4*>(chunk + r * kRowBytes + (((unit % 8) ^ (r % 8)) << 4)) = val;
  }
}

// Generic-proxy smem stores -> visible to wgmma (async proxy) of every thread.
__device__ void publish_smem() {
  sm90::fence_proxy_async_smem();
  __syncthreads();
}

__device__ uint8_t* aligned_smem() {
  extern __shared__ uint8_t smem_raw[];
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                    ~uintptr_t(1023));
}

// Accumulator fragment of m64nNk16 (f32): register 4c + 2h + j of thread
// (warp w, lane = 4g + q4) holds D(16w + g + 8h, 8c + 2q4 + j).
struct Frag {
  int w, g, q4;
  __device__ Frag() : w(threadIdx.x / 32), g(threadIdx.x % 32 / 4), q4(threadIdx.x % 4) {}
  __device__ int row(int i) const { return 16 * w + g + 8 * ((i / 2) % 2); }
  __device__ int col(int i) const { return 8 * (i / 4) + 2 * q4 + i % 2; }
};

// ------------------------------------------------------------ case 1 / 3: QK
// Reference: S (64 x 128 keys) = Q K^T through the forward's issue_qk.
// out: S row-major [64][128].
__global__ void qk_forward(const __nv_bfloat16* q, const __nv_bfloat16* k, float* out) {
  uint8_t* smem = aligned_smem();
  store_sw128(smem, q, kQRows);
  store_sw128(smem + kQBytes, k, kKeys);
  publish_smem();
  float s[Consumer::kSRegs];
  Consumer::issue_qk(s, sm90::smem_addr(smem), sm90::smem_addr(smem + kQBytes));
  sm90::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < Consumer::kSRegs; ++i) sm90::reg_fence(s[i]);
  const Frag f;
#pragma unroll
  for (int i = 0; i < Consumer::kSRegs; ++i) out[f.row(i) * kKeys + f.col(i)] = s[i];
}

// Case 3: S = Q K^T in the normal roles, B = K cut into 128 / N tiles of N
// keys (tile t: keys t*N .. t*N + N - 1, at smem rows t*N of every K chunk).
// Per tile the same chain as issue_qk: k16 steps ascending, step 0 with
// scale-d = 0. out: S row-major [64][128].
template <int N>
__global__ void qk_normal_n(const __nv_bfloat16* q, const __nv_bfloat16* k, float* out) {
  uint8_t* smem = aligned_smem();
  store_sw128(smem, q, kQRows);
  store_sw128(smem + kQBytes, k, kKeys);
  publish_smem();
  const uint64_t dq = sm90::make_smem_desc_sw128(sm90::smem_addr(smem), 16, 1024);
  const uint64_t dk = sm90::make_smem_desc_sw128(sm90::smem_addr(smem + kQBytes), 16, 1024);
  constexpr int kTiles = kKeys / N;
  float s[kTiles][N / 2];
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) s[t][i] = 0.f;
  sm90::wgmma_fence();
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      const uint32_t chunk = ks / 4, step = (ks % 4) * 32;
      const uint64_t a = dq + ((chunk * kQChunk + step) >> 4);
      const uint64_t b = dk + ((chunk * kKVChunk + t * N * kRowBytes + step) >> 4);
      if constexpr (N == 64) {
        if (ks == 0) sm90::wgmma_ss_zero_m64n64k16_bf16(s[t], a, b);
        else sm90::wgmma_ss_m64n64k16_bf16(s[t], a, b, 1);
      } else {
        wgmma_ss_small<N, 0, 0>(s[t], a, b, ks == 0 ? 0 : 1);
      }
    }
  sm90::wgmma_commit();
  sm90::wgmma_wait<0>();
  const Frag f;
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      sm90::reg_fence(s[t][i]);
      out[f.row(i) * kKeys + t * N + f.col(i)] = s[t][i];
    }
}

// Case 1 alternative: S^T (128 keys x G) = K Q^T. A = K, m64 tile mt = keys
// 64mt .. 64mt + 63 (rows 64mt of every K chunk, K-major); B = Q rows
// 0 .. G-1 (K-major, N = G). out: S^T row-major [128 keys][G].
template <int G>
__global__ void qk_transposed(const __nv_bfloat16* q, const __nv_bfloat16* k, float* out) {
  uint8_t* smem = aligned_smem();
  store_sw128(smem, q, kQRows);
  store_sw128(smem + kQBytes, k, kKeys);
  publish_smem();
  const uint64_t dq = sm90::make_smem_desc_sw128(sm90::smem_addr(smem), 16, 1024);
  const uint64_t dk = sm90::make_smem_desc_sw128(sm90::smem_addr(smem + kQBytes), 16, 1024);
  constexpr int kMTiles = kKeys / 64;
  float s[kMTiles][G / 2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < G / 2; ++i) s[mt][i] = 0.f;
  sm90::wgmma_fence();
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      const uint32_t chunk = ks / 4, step = (ks % 4) * 32;
      const uint64_t a = dk + ((chunk * kKVChunk + mt * 64 * kRowBytes + step) >> 4);
      const uint64_t b = dq + ((chunk * kQChunk + step) >> 4);
      wgmma_ss_small<G, 0, 0>(s[mt], a, b, ks == 0 ? 0 : 1);
    }
  sm90::wgmma_commit();
  sm90::wgmma_wait<0>();
  const Frag f;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < G / 2; ++i) {
      sm90::reg_fence(s[mt][i]);
      out[(mt * 64 + f.row(i)) * G + f.col(i)] = s[mt][i];
    }
}

// ------------------------------------------------------------ case 2: PV
// Reference: O (64 x 128 dims) = acc + P V through the forward's issue_pv:
// P from registers (the pack_p fragment: pf[kk][0..3] = rows g / g+8 x keys
// 16kk + 2q4 (+1) and 16kk + 8 + 2q4 (+1)), V N-major in the forward's smem
// layout. acc, out: row-major [64][128] f32.
__global__ void pv_forward(const __nv_bfloat16* p, const __nv_bfloat16* v, const float* acc_in,
                           float* out) {
  uint8_t* smem = aligned_smem();
  store_sw128(smem, v, kKeys);
  publish_smem();
  const Frag f;
  float acc[kD / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) acc[i] = acc_in[f.row(i) * kD + f.col(i)];
  uint32_t pf[kKeys / 16][4];
  const uint16_t* p16 = reinterpret_cast<const uint16_t*>(p);
  auto pair = [&](int r, int c) {
    return uint32_t(p16[r * kKeys + c]) | (uint32_t(p16[r * kKeys + c + 1]) << 16);
  };
  const int r0 = 16 * f.w + f.g;
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    pf[kk][0] = pair(r0, 16 * kk + 2 * f.q4);
    pf[kk][1] = pair(r0 + 8, 16 * kk + 2 * f.q4);
    pf[kk][2] = pair(r0, 16 * kk + 8 + 2 * f.q4);
    pf[kk][3] = pair(r0 + 8, 16 * kk + 8 + 2 * f.q4);
  }
  Consumer::issue_pv(acc, pf, sm90::smem_addr(smem));
  sm90::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) sm90::reg_fence(acc[i]);
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) sm90::reg_fence(pf[kk][j]);
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) out[f.row(i) * kD + f.col(i)] = acc[i];
}

// Case 2 alternative: O^T (128 dims x G) = acc^T + V^T P^T. A = V^T: m64
// tile mt = dims 64mt .. 64mt + 63 = V's chunk mt read MN-major (trans-a;
// a k16 step of keys is two 8-row atoms, sbo 1024; lbo, the chunk stride, is
// not read for a 64-wide tile); B = P^T: P rows 0 .. G-1, keys contiguous
// (K-major, N = G). acc row-major [64][128]; out: O^T row-major [128][G].
template <int G>
__global__ void pv_transposed(const __nv_bfloat16* p, const __nv_bfloat16* v,
                              const float* acc_in, float* out) {
  uint8_t* smem = aligned_smem();
  store_sw128(smem, v, kKeys);
  store_sw128(smem + kKVBytes, p, kRows);
  publish_smem();
  const uint64_t dv = sm90::make_smem_desc_sw128(sm90::smem_addr(smem), kKVChunk, 1024);
  const uint64_t dp = sm90::make_smem_desc_sw128(sm90::smem_addr(smem + kKVBytes), 16, 1024);
  constexpr int kMTiles = kD / 64;
  const Frag f;
  float o[kMTiles][G / 2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < G / 2; ++i) o[mt][i] = acc_in[f.col(i) * kD + mt * 64 + f.row(i)];
  sm90::wgmma_fence();
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const uint64_t a = dv + ((mt * kKVChunk + kk * 16 * kRowBytes) >> 4);
      const uint64_t b = dp + (((kk / 4) * kPChunk + (kk % 4) * 32) >> 4);
      wgmma_ss_small<G, 1, 0>(o[mt], a, b, 1);
    }
  sm90::wgmma_commit();
  sm90::wgmma_wait<0>();
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < G / 2; ++i) {
      sm90::reg_fence(o[mt][i]);
      out[(mt * 64 + f.row(i)) * G + f.col(i)] = o[mt][i];
    }
}

// ------------------------------------------------------------ host
// CUDA_OK and the bf16 conversions (round to nearest even) are the test
// harness's.
using sbtest::bf16_to_f32;
using sbtest::f32_to_bf16;
static uint32_t f32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
// Distance in units in the last place: floats mapped to a monotone integer line.
static int64_t ulp_distance(float a, float b) {
  auto line = [](float x) {
    const int64_t u = f32_bits(x);
    return (u & 0x80000000u) ? -(u & 0x7FFFFFFF) : u;
  };
  return std::llabs(line(a) - line(b));
}

enum class Dist { kUniform, kMixed };

static float draw(std::mt19937_64& rng, Dist dist, int e_lo, int e_hi) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  if (dist == Dist::kUniform) return u(rng);
  std::uniform_int_distribution<int> e(e_lo, e_hi);
  std::uniform_real_distribution<float> m(1.f, 2.f);
  const float sign = (rng() & 1) ? -1.f : 1.f;
  return sign * std::ldexp(m(rng), e(rng));
}

static std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng, Dist dist) {
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_bf16(draw(rng, dist, -12, 6));
  return v;
}

struct Tally {
  std::string name;
  long compared = 0, differ = 0;
  int64_t max_ulp = 0;
  double max_sanity = 0;  // max |gpu - f64| / (sum |terms| + tiny)
  void add(float ref, float alt) {
    ++compared;
    if (f32_bits(ref) != f32_bits(alt)) ++differ;
    max_ulp = std::max(max_ulp, ulp_distance(ref, alt));
  }
  void sanity(float gpu, double exact, double mag) {
    max_sanity = std::max(max_sanity, std::fabs(gpu - exact) / (mag + 1e-30));
  }
  void print() const {
    std::printf("  %-58s compared %7ld  differ %6ld  max_ulp %6lld  cpu_rel %.1e\n",
                name.c_str(), compared, differ, (long long)max_ulp, max_sanity);
  }
};

template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(size_t n) { CUDA_OK(cudaMalloc(&p, n * sizeof(T))); }
  ~Dev() { cudaFree(p); }
  void put(const std::vector<T>& h) { CUDA_OK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> get(size_t n) const {
    std::vector<T> h(n);
    CUDA_OK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

template <class K, class... Args>
static void launch(K kernel, int smem, Args... args) {
  CUDA_OK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<1, 128, smem>>>(args...);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
}

// The CPU check's tolerance: a layout error gives O(1) relative errors; the
// tensor core's own rounding is far below this.
constexpr double kSanityTol = 1e-4;

int main(int argc, char** argv) {
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  if (prop.major != 9) {
    std::fprintf(stderr, "needs an sm90 device\n");
    return 1;
  }
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 8;

  Tally c1_8{"1  S=QK^T fwd (A=Q,N=128)  vs S^T=KQ^T (A=K,B=Q,N=8)"};
  Tally c1_16{"1b S=QK^T fwd (A=Q,N=128) vs S^T=KQ^T (A=K,B=Q,N=16)"};
  Tally c2_8{"2  O=acc+PV fwd (A=P regs,N=128) vs O^T (A=V^T,B=P^T,N=8)"};
  Tally c2_16{"2b O=acc+PV fwd (A=P regs,N=128) vs O^T (A=V^T,B=P^T,N=16)"};
  Tally c3_64{"3  S=QK^T A=Q: N=128 vs N=64"};
  Tally c3_16{"3b S=QK^T A=Q: N=128 vs N=16"};
  Tally c3_8{"3c S=QK^T A=Q: N=128 vs N=8"};
  Tally* all[] = {&c1_8, &c1_16, &c2_8, &c2_16, &c3_64, &c3_16, &c3_8};

  Dev<uint16_t> dq(kQRows * kD), dk(kKeys * kD), dv(kKeys * kD), dp(kRows * kKeys);
  Dev<float> dacc(kRows * kD), dref(kRows * kKeys), dalt(kRows * kKeys);
  using BF = __nv_bfloat16;
  auto bq = reinterpret_cast<const BF*>(dq.p), bk = reinterpret_cast<const BF*>(dk.p);
  auto bv = reinterpret_cast<const BF*>(dv.p), bp = reinterpret_cast<const BF*>(dp.p);

  for (int seed = 1; seed <= seeds; ++seed)
    for (Dist dist : {Dist::kUniform, Dist::kMixed}) {
      std::mt19937_64 rng(0x5a3eb175ull * seed + (dist == Dist::kMixed));
      const auto q = random_bf16(kQRows * kD, rng, dist);
      const auto k = random_bf16(kKeys * kD, rng, dist);
      const auto v = random_bf16(kKeys * kD, rng, dist);
      const auto p = random_bf16(kRows * kKeys, rng, dist);
      std::vector<float> acc(kRows * kD);
      for (auto& x : acc) x = draw(rng, dist, -6, 6) * 4.f;
      dq.put(q), dk.put(k), dv.put(v), dp.put(p), dacc.put(acc);
      std::printf("seed %d, %s values\n", seed, dist == Dist::kMixed ? "mixed" : "uniform");

      // f64 references for the CPU check: exact dot and sum of |terms|.
      auto qk_exact = [&](int r, int key, double& mag) {
        double s = 0;
        mag = 0;
        for (int c = 0; c < kD; ++c) {
          const double t = double(bf16_to_f32(q[r * kD + c])) * bf16_to_f32(k[key * kD + c]);
          s += t, mag += std::fabs(t);
        }
        return s;
      };
      auto pv_exact = [&](int r, int c, double& mag) {
        double s = acc[r * kD + c];
        mag = std::fabs(s);
        for (int key = 0; key < kKeys; ++key) {
          const double t = double(bf16_to_f32(p[r * kKeys + key])) * bf16_to_f32(v[key * kD + c]);
          s += t, mag += std::fabs(t);
        }
        return s;
      };

      // Cases 1 and 3: the forward's S, then each alternative.
      launch(qk_forward, kSmemQK, bq, bk, dref.p);
      const auto s_ref = dref.get(kRows * kKeys);
      // ref (rows x cols, the forward's layout) against got, the transposed
      // result of the first G rows (cols x G).
      auto compare_transposed = [&](const std::vector<float>& ref, const std::vector<float>& got, int G,
                                    int cols, auto exact, Tally& t) {
        Tally one{t.name};
        for (int r = 0; r < G; ++r)
          for (int c = 0; c < cols; ++c) {
            const float rv = ref[r * cols + c], alt = got[c * G + r];
            double mag;
            const double ex = exact(r, c, mag);
            for (Tally* x : {&t, &one}) x->add(rv, alt), x->sanity(alt, ex, mag), x->sanity(rv, ex, mag);
          }
        one.print();
      };
      auto qk_alt_t = [&](auto kernel, int G, Tally& t) {
        launch(kernel, kSmemQK, bq, bk, dalt.p);
        compare_transposed(s_ref, dalt.get(kKeys * G), G, kKeys, qk_exact, t);
      };
      qk_alt_t(qk_transposed<8>, 8, c1_8);
      qk_alt_t(qk_transposed<16>, 16, c1_16);
      auto qk_alt_n = [&](auto kernel, Tally& t) {
        launch(kernel, kSmemQK, bq, bk, dalt.p);
        const auto s = dalt.get(kRows * kKeys);
        Tally one{t.name};
        for (int r = 0; r < kRows; ++r)
          for (int key = 0; key < kKeys; ++key) {
            double mag;
            const double ex = qk_exact(r, key, mag);
            for (Tally* x : {&t, &one})
              x->add(s_ref[r * kKeys + key], s[r * kKeys + key]), x->sanity(s[r * kKeys + key], ex, mag);
          }
        one.print();
      };
      qk_alt_n(qk_normal_n<64>, c3_64);
      qk_alt_n(qk_normal_n<16>, c3_16);
      qk_alt_n(qk_normal_n<8>, c3_8);

      // Case 2: the forward's O = acc + P V, then O^T.
      launch(pv_forward, kSmemPV, bp, bv, static_cast<const float*>(dacc.p), dref.p);
      const auto o_ref = dref.get(kRows * kD);
      auto pv_alt = [&](auto kernel, int G, Tally& t) {
        launch(kernel, kSmemPV, bp, bv, static_cast<const float*>(dacc.p), dalt.p);
        compare_transposed(o_ref, dalt.get(kD * G), G, kD, pv_exact, t);
      };
      pv_alt(pv_transposed<8>, 8, c2_8);
      pv_alt(pv_transposed<16>, 16, c2_16);
    }

  std::printf("\nsummary over %d seeds x 2 distributions (cpu_rel: max |gpu - f64| / sum|terms|,"
              " layout check, must be < %.0e)\n", seeds, kSanityTol);
  bool layout_ok = true;
  for (const Tally* t : all) {
    t->print();
    const bool ok = t->max_sanity < kSanityTol;
    layout_ok &= ok;
    std::printf("%s %s\n", !ok ? "LAYOUT?" : t->differ == 0 ? "PASS" : "DIFF", t->name.c_str());
  }
  std::printf("%s\n", layout_ok ? "layouts: all operands read as intended (CPU check)"
                                 : "layouts: CPU check failed, DIFF lines above are not evidence");
  return 0;
}
