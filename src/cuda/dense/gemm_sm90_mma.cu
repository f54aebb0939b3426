// sm90 GEMM of the dense ops: out = alpha * A @ op(B) + beta * bias.
//
// Numerics (docs/numerics_dense.md, "GEMM on sm90"): every output element is
// accumulated in fp32 by mma.sync.m16n8k16 (bf16/fp16 operands) over k steps
// of 16 in increasing k order, one accumulator chain per element, no split-K,
// no stream-K. K is zero-padded to a multiple of the 32-wide k tile (adding
// +0 products moves no bit). Which CTA tile (BM x BN) covers an element, and
// whether tiles are filled by cp.async or by scalar loads, changes neither
// the instructions nor their order for that element, so tile shapes may
// follow M (gemm_tiles below) without moving bits; tests/python/test_dense_gpu
// checks every M bucket bitwise.
//
// fp32 operands take a plain FFMA kernel (sequential k, one fma per step):
// torch.mm's fp32 default is full fp32, not tf32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <string>

#include "core/backend.h"
#include "cuda/dense/dense_cuda.h"
#include "cuda/dense/dtype.cuh"

namespace samebits::cuda::dense {
namespace {

constexpr int kBK = 32;     // BITS-FREE: k tile (any multiple of 16 gives the same bits)
constexpr int kPad = 8;     // FREE: smem row padding (16 bytes) against bank conflicts

// FREE: CTA tile configurations (the tile table of the dense GEMM) and their
// cp.async pipeline depth.
//   Big:   128x128, 8 warps of 64x32, 3 stages: M > 512, tensor-core bound.
//   Small:  64x64,  4 warps of 32x32, 3 stages: 32 < M <= 512.
//   Tiny:   32x32,  4 warps of 16x16, 8 stages: M <= 32, weight-bandwidth
//           bound: many CTAs and deep prefetch keep more bytes in flight.
template <int BM_, int BN_, int WM_, int WN_, int STAGES_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, kStages = STAGES_;
  static constexpr int kWarps = (BM / WM) * (BN / WN);
  static constexpr int kThreads = kWarps * 32;
  static constexpr int MT = WM / 16, NT = WN / 8;  // mma tiles per warp
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be whole m16 x n16 pairs");
  static constexpr int kASmem = BM * (kBK + kPad);
  static constexpr int kBSmemNK = BN * (kBK + kPad);
  static constexpr int kBSmemKN = kBK * (BN + kPad);
  static constexpr int kBSmem = kBSmemNK > kBSmemKN ? kBSmemNK : kBSmemKN;
  static constexpr int kStageElems = kASmem + kBSmem;
  static constexpr size_t kSmemBytes = size_t(kStages) * kStageElems * 2;
  static_assert(kStages >= 2, "the pipeline needs two stages");
};
using TileBig = Tile<128, 128, 64, 32, 3>;
using TileSmall = Tile<64, 64, 32, 32, 3>;
using TileTiny = Tile<32, 32, 16, 16, 8>;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  // src-size 0 zero-fills the 16 bytes (out-of-range rows / k chunks)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Fills one pipeline stage: the A tile [BM][BK] (k contiguous) and the B
// tile, [BN][BK] for SB_B_NK or [BK][BN] for SB_B_KN. kVec: 16-byte cp.async
// (every row start 16-byte aligned, k % 8 == 0); else scalar loads through
// registers with zero fill, which store the same values.
template <class TL, class T, bool kKN, bool kVec>
__device__ __forceinline__ void load_stage(const sb_gemm_params& p, const T* A, const T* B,
                                           T* sA, T* sB, int64_t m0, int64_t n0, int64_t k0) {
  const int tid = threadIdx.x;
  if constexpr (kVec) {
    constexpr int kChunksA = TL::BM * kBK / 8;
    for (int c = tid; c < kChunksA; c += TL::kThreads) {
      int r = c / (kBK / 8), kc = (c % (kBK / 8)) * 8;
      int64_t gm = m0 + r, gk = k0 + kc;
      bool ok = gm < p.m && gk < p.k;
      cp_async16(sA + r * (kBK + kPad) + kc, ok ? A + gm * p.a_row_stride + gk : A, ok);
    }
    if constexpr (!kKN) {
      constexpr int kChunksB = TL::BN * kBK / 8;
      for (int c = tid; c < kChunksB; c += TL::kThreads) {
        int r = c / (kBK / 8), kc = (c % (kBK / 8)) * 8;
        int64_t gn = n0 + r, gk = k0 + kc;
        bool ok = gn < p.n && gk < p.k;
        cp_async16(sB + r * (kBK + kPad) + kc, ok ? B + gn * p.b_row_stride + gk : B, ok);
      }
    } else {
      constexpr int kChunksB = kBK * TL::BN / 8;
      for (int c = tid; c < kChunksB; c += TL::kThreads) {
        int r = c / (TL::BN / 8), nc = (c % (TL::BN / 8)) * 8;
        int64_t gk = k0 + r, gn = n0 + nc;
        bool ok = gk < p.k && gn < p.n;  // n % 8 == 0 on this path
        cp_async16(sB + r * (TL::BN + kPad) + nc, ok ? B + gk * p.b_row_stride + gn : B, ok);
      }
    }
  } else {
    const T zero = from_float<T>(0.0f);
    for (int e = tid; e < TL::BM * kBK; e += TL::kThreads) {
      int r = e / kBK, kk = e % kBK;
      int64_t gm = m0 + r, gk = k0 + kk;
      sA[r * (kBK + kPad) + kk] = (gm < p.m && gk < p.k) ? A[gm * p.a_row_stride + gk] : zero;
    }
    for (int e = tid; e < TL::BN * kBK; e += TL::kThreads) {
      if constexpr (!kKN) {
        int r = e / kBK, kk = e % kBK;
        int64_t gn = n0 + r, gk = k0 + kk;
        sB[r * (kBK + kPad) + kk] = (gn < p.n && gk < p.k) ? B[gn * p.b_row_stride + gk] : zero;
      } else {
        int r = e / TL::BN, nn = e % TL::BN;
        int64_t gk = k0 + r, gn = n0 + nn;
        sB[r * (TL::BN + kPad) + nn] = (gn < p.n && gk < p.k) ? B[gk * p.b_row_stride + gn] : zero;
      }
    }
  }
}

template <class TL, class T, class TO, class TB, bool kKN, bool kVec>
__global__ void __launch_bounds__(TL::kThreads)
    gemm_mma_kernel(const __grid_constant__ sb_gemm_params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const int64_t bz = blockIdx.z;
  const T* A = static_cast<const T*>(p.a) + bz * p.a_batch_stride;
  const T* B = static_cast<const T*>(p.b) + bz * p.b_batch_stride;
  const int64_t m0 = int64_t(blockIdx.y) * TL::BM, n0 = int64_t(blockIdx.x) * TL::BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / (TL::BN / TL::WN)) * TL::WM, wn = (warp % (TL::BN / TL::WN)) * TL::WN;

  float acc[TL::MT][TL::NT][4];
#pragma unroll
  for (int i = 0; i < TL::MT; ++i)
#pragma unroll
    for (int j = 0; j < TL::NT; ++j)
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.0f;

  const int64_t ktiles = (p.k + kBK - 1) / kBK;
  auto sA = [&](int s) { return smem + s * TL::kStageElems; };
  auto sB = [&](int s) { return smem + s * TL::kStageElems + TL::kASmem; };

  // prologue: stages 0..TL::kStages-2 in flight
#pragma unroll
  for (int s = 0; s < TL::kStages - 1; ++s) {
    if (s < ktiles) load_stage<TL, T, kKN, kVec>(p, A, B, sA(s), sB(s), m0, n0, s * kBK);
    if constexpr (kVec) cp_async_commit();
  }

  // Steady state: wait for tile kt, barrier (everyone's copies of tile kt
  // landed, and everyone finished reading the stage about to be refilled),
  // issue the load of tile kt + TL::kStages - 1 into that stage, then run the
  // mma's of tile kt: k16 steps 0 and 1, in that order.
  for (int64_t kt = 0; kt < ktiles; ++kt) {
    if constexpr (kVec) cp_async_wait<TL::kStages - 2>();
    __syncthreads();
    const int64_t next = kt + TL::kStages - 1;
    if (next < ktiles) {
      const int s = int(next % TL::kStages);
      load_stage<TL, T, kKN, kVec>(p, A, B, sA(s), sB(s), m0, n0, next * kBK);
    }
    if constexpr (kVec) cp_async_commit();
    if constexpr (!kVec) __syncthreads();  // scalar stores must land before ldmatrix
    const T* a_s = sA(int(kt % TL::kStages));
    const T* b_s = sB(int(kt % TL::kStages));
#pragma unroll
    for (int ks = 0; ks < kBK; ks += 16) {
      uint32_t af[TL::MT][4];
#pragma unroll
      for (int i = 0; i < TL::MT; ++i) {
        const int r = wm + i * 16 + (lane % 16), c = ks + (lane / 16) * 8;
        ldmatrix_x4(af[i], a_s + r * (kBK + kPad) + c);
      }
#pragma unroll
      for (int j = 0; j < TL::NT; j += 2) {
        uint32_t bf[4];  // {n0-7 k0-7, n0-7 k8-15, n8-15 k0-7, n8-15 k8-15}
        if constexpr (!kKN) {
          const int r = wn + j * 8 + (lane / 16) * 8 + (lane % 8), c = ks + ((lane / 8) % 2) * 8;
          ldmatrix_x4(bf, b_s + r * (kBK + kPad) + c);
        } else {
          const int r = ks + ((lane / 8) % 2) * 8 + (lane % 8), c = wn + j * 8 + (lane / 16) * 8;
          ldmatrix_x4_trans(bf, b_s + r * (TL::BN + kPad) + c);
        }
#pragma unroll
        for (int i = 0; i < TL::MT; ++i) {
          mma16816<T>(acc[i][j], af[i], bf[0], bf[1]);
          mma16816<T>(acc[i][j + 1], af[i], bf[2], bf[3]);
        }
      }
    }
  }
  if constexpr (kVec) cp_async_wait<0>();

  // epilogue: out = alpha * acc + beta * bias, rounded once to TO
  TO* out = static_cast<TO*>(p.out) + bz * p.out_batch_stride;
  const TB* bias = p.bias == nullptr ? nullptr : static_cast<const TB*>(p.bias) + bz * p.bias_batch_stride;
#pragma unroll
  for (int i = 0; i < TL::MT; ++i)
#pragma unroll
    for (int j = 0; j < TL::NT; ++j)
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int64_t gm = m0 + wm + i * 16 + (lane / 4) + (v / 2) * 8;
        const int64_t gn = n0 + wn + j * 8 + (lane % 4) * 2 + (v % 2);
        if (gm < p.m && gn < p.n) {
          float r = __fmul_rn(p.alpha, acc[i][j][v]);
          if (bias != nullptr)
            r = __fadd_rn(r, __fmul_rn(p.beta, to_float(bias[gm * p.bias_row_stride + gn])));
          out[gm * p.out_row_stride + gn] = from_float<TO>(r);
        }
      }
}

// fp32 operands: 64x64 tile, 256 threads of 4x4 outputs, k in order.
template <class TO, class TB>
__global__ void __launch_bounds__(256) gemm_f32_kernel(const __grid_constant__ sb_gemm_params p) {
  constexpr int BM = 64, BN = 64, BK = 16;
  __shared__ float sA[BK][BM + 1];
  __shared__ float sB[BK][BN + 1];
  const int64_t bz = blockIdx.z;
  const float* A = static_cast<const float*>(p.a) + bz * p.a_batch_stride;
  const float* B = static_cast<const float*>(p.b) + bz * p.b_batch_stride;
  const int64_t m0 = int64_t(blockIdx.y) * BM, n0 = int64_t(blockIdx.x) * BN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += 256) {
      int r = e / BK, kk = e % BK;
      int64_t gm = m0 + r, gk = k0 + kk;
      sA[kk][r] = (gm < p.m && gk < p.k) ? A[gm * p.a_row_stride + gk] : 0.0f;
      int64_t gn = n0 + r;
      sB[kk][r] = (gn < p.n && gk < p.k)
                      ? (p.b_layout == SB_B_NK ? B[gn * p.b_row_stride + gk] : B[gk * p.b_row_stride + gn])
                      : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __fmaf_rn(sA[kk][ty * 4 + i], sB[kk][tx * 4 + j], acc[i][j]);
    __syncthreads();
  }
  TO* out = static_cast<TO*>(p.out) + bz * p.out_batch_stride;
  const TB* bias = p.bias == nullptr ? nullptr : static_cast<const TB*>(p.bias) + bz * p.bias_batch_stride;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int64_t gm = m0 + ty * 4 + i, gn = n0 + tx * 4 + j;
      if (gm < p.m && gn < p.n) {
        float r = __fmul_rn(p.alpha, acc[i][j]);
        if (bias != nullptr) r = __fadd_rn(r, __fmul_rn(p.beta, to_float(bias[gm * p.bias_row_stride + gn])));
        out[gm * p.out_row_stride + gn] = from_float<TO>(r);
      }
    }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

template <class TL, class T, class TO, class TB, bool kKN, bool kVec>
sb_status launch_mma(const sb_gemm_params& p, cudaStream_t stream) {
  auto kernel = gemm_mma_kernel<TL, T, TO, TB, kKN, kVec>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(TL::kSmemBytes)) != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("gemm: ") + cudaGetErrorString(cudaGetLastError()));
  dim3 grid(unsigned((p.n + TL::BN - 1) / TL::BN), unsigned((p.m + TL::BM - 1) / TL::BM), unsigned(p.batch));
  kernel<<<grid, TL::kThreads, TL::kSmemBytes, stream>>>(p);
  return SB_OK;
}

template <class TL, class T, class TO, class TB>
sb_status pick_path(const sb_gemm_params& p, cudaStream_t s) {
  const bool kn = p.b_layout == SB_B_KN;
  // 16-byte rows: every row start of A and B (and every batch) 16-byte aligned
  bool vec = aligned16(p.a) && aligned16(p.b) && p.k % 8 == 0 && p.a_row_stride % 8 == 0 &&
             p.b_row_stride % 8 == 0 && p.a_batch_stride % 8 == 0 && p.b_batch_stride % 8 == 0 &&
             (!kn || p.n % 8 == 0);
  if (kn) return vec ? launch_mma<TL, T, TO, TB, true, true>(p, s) : launch_mma<TL, T, TO, TB, true, false>(p, s);
  return vec ? launch_mma<TL, T, TO, TB, false, true>(p, s) : launch_mma<TL, T, TO, TB, false, false>(p, s);
}

template <class T, class TO, class TB>
sb_status dispatch_tile(const sb_gemm_params& p, cudaStream_t s) {
  // FREE: the tile follows M only; bits do not depend on it (see top).
  if (p.m > 512) return pick_path<TileBig, T, TO, TB>(p, s);
  if (p.m > 32) return pick_path<TileSmall, T, TO, TB>(p, s);
  return pick_path<TileTiny, T, TO, TB>(p, s);
}

template <class T, class TO>
sb_status dispatch_bias(const sb_gemm_params& p, cudaStream_t s) {
  sb_dtype bd = p.bias == nullptr ? p.out_dtype : p.bias_dtype;
  switch (bd) {
    case SB_F32: return dispatch_tile<T, TO, float>(p, s);
    case SB_F16: return dispatch_tile<T, TO, __half>(p, s);
    default: return dispatch_tile<T, TO, __nv_bfloat16>(p, s);
  }
}

template <class TO>
sb_status dispatch_f32(const sb_gemm_params& p, cudaStream_t s) {
  sb_dtype bd = p.bias == nullptr ? p.out_dtype : p.bias_dtype;
  dim3 grid(unsigned((p.n + 63) / 64), unsigned((p.m + 63) / 64), unsigned(p.batch));
  switch (bd) {
    case SB_F32: gemm_f32_kernel<TO, float><<<grid, 256, 0, s>>>(p); break;
    case SB_F16: gemm_f32_kernel<TO, __half><<<grid, 256, 0, s>>>(p); break;
    default: gemm_f32_kernel<TO, __nv_bfloat16><<<grid, 256, 0, s>>>(p); break;
  }
  return SB_OK;
}

template <class T>
sb_status dispatch_out(const sb_gemm_params& p, cudaStream_t s) {
  switch (p.out_dtype) {
    case SB_F32: return dispatch_bias<T, float>(p, s);
    case SB_F16: return dispatch_bias<T, __half>(p, s);
    default: return dispatch_bias<T, __nv_bfloat16>(p, s);
  }
}

}  // namespace

sb_status gemm(const sb_gemm_params& p) {
  if (p.m > int64_t(65535) * 128 || p.batch > 65535)
    return fail(SB_UNSUPPORTED, "gemm: m or batch beyond the grid limits");
  cudaStream_t s = static_cast<cudaStream_t>(p.stream);
  sb_status st;
  if (p.dtype == SB_F32) {
    switch (p.out_dtype) {
      case SB_F32: st = dispatch_f32<float>(p, s); break;
      case SB_F16: st = dispatch_f32<__half>(p, s); break;
      default: st = dispatch_f32<__nv_bfloat16>(p, s); break;
    }
  } else if (p.dtype == SB_F16) {
    st = dispatch_out<__half>(p, s);
  } else {
    st = dispatch_out<__nv_bfloat16>(p, s);
  }
  if (st != SB_OK) return st;
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return fail(SB_CUDA_ERROR, std::string("gemm launch: ") + cudaGetErrorString(e));
  return SB_OK;
}

}  // namespace samebits::cuda::dense
