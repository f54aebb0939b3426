// Epilogue of the sm90 GEMM: out = round(alpha * acc + beta * bias) straight
// from the wgmma accumulator fragment to global memory, one multiply and one
// add, each rounded (__fmul_rn / __fadd_rn), then one rounding to out dtype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/dense/dtype.cuh"
#include "cuda/dense/gemm_sm90_params.h"

namespace samebits::cuda::dense::sm90 {

__device__ __forceinline__ float load_bias(const void* bias, sb_dtype dt, int64_t idx) {
  switch (dt) {
    case SB_F32: return static_cast<const float*>(bias)[idx];
    case SB_F16: return __half2float(static_cast<const __half*>(bias)[idx]);
    default: return __bfloat162float(static_cast<const __nv_bfloat16*>(bias)[idx]);
  }
}

template <class TO>
__device__ __forceinline__ void store_pair(TO* dst, float v0, float v1) {
  if constexpr (std::is_same_v<TO, float>) {
    *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
  } else if constexpr (std::is_same_v<TO, __half>) {
    *reinterpret_cast<__half2*>(dst) = __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
  } else {
    *reinterpret_cast<__nv_bfloat162*>(dst) =
        __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
  }
}

// One warp's 16 rows of an m16 x BN fragment, the layout that wgmma m64nNk16
// (fp32 D) gives each of its warps and that BN / 8 mma.sync.m16n8k16
// accumulators give side by side: lane l holds rows r_base = row0 + l/4
// (registers 4j, 4j+1) and r_base + 8 (4j+2, 4j+3), columns
// c_base + 8j = col0 + 2(l%4) + 8j and + 1.
template <class TO, int BN>
__device__ __forceinline__ void store_warp_rows_typed(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                                      int64_t r_base, int64_t c_base) {
  TO* out = static_cast<TO*>(p.out) + int64_t(bz) * p.out_batch_stride;
  const char* bias = p.bias == nullptr ? nullptr
                                       : static_cast<const char*>(p.bias) +
                                             int64_t(bz) * p.bias_batch_stride *
                                                 (p.bias_dtype == SB_F32 ? 4 : 2);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t r = r_base + 8 * h;
    if (r >= p.m) continue;
    TO* orow = out + r * p.out_row_stride;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int64_t c = c_base + 8 * j;
      if (c >= p.n) continue;
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float x = __fmul_rn(p.alpha, acc[4 * j + 2 * h + e]);
        if (bias != nullptr && c + e < p.n)
          x = __fadd_rn(x, __fmul_rn(p.beta, load_bias(bias, p.bias_dtype, r * p.bias_row_stride + c + e)));
        v[e] = x;
      }
      if (p.out_pairs && c + 1 < p.n) {
        store_pair<TO>(orow + c, v[0], v[1]);
      } else {
        orow[c] = from_float<TO>(v[0]);
        if (c + 1 < p.n) orow[c + 1] = from_float<TO>(v[1]);
      }
    }
  }
}

// One warp's m16 x BN fragment whose first row is row0 and first column col0.
template <int BN>
__device__ __forceinline__ void store_warp_rows(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                                int64_t row0, int64_t col0) {
  const int l = threadIdx.x % 32;
  const int64_t r_base = row0 + l / 4, c_base = col0 + (l % 4) * 2;
  switch (p.out_dtype) {
    case SB_F32: store_warp_rows_typed<float, BN>(p, acc, bz, r_base, c_base); break;
    case SB_F16: store_warp_rows_typed<__half, BN>(p, acc, bz, r_base, c_base); break;
    default: store_warp_rows_typed<__nv_bfloat16, BN>(p, acc, bz, r_base, c_base); break;
  }
}

// A warpgroup's wgmma m64nNk16 fragment: warp w = (thread % 128) / 32 holds
// rows row0 + 16w .. + 15.
template <int BN>
__device__ __forceinline__ void store_tile(const GemmTmaParams& p, const float (&acc)[BN / 2], int bz,
                                           int64_t row0, int64_t col0) {
  store_warp_rows<BN>(p, acc, bz, row0 + ((threadIdx.x % 128) / 32) * 16, col0);
}

}  // namespace samebits::cuda::dense::sm90
