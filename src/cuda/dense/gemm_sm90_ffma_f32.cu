// fp32-operand GEMM (FFMA): torch.mm's fp32 default is full fp32, not tf32.
// Every output element is acc = fma(a(i,k), b(k,j), acc) for k = 0, 1, 2, ...
// from +0, one chain per element; 64x64 CTA tiles, 256 threads of 4x4
// outputs. The tile covering an element does not change its chain.
#include <cuda_runtime.h>

#include <string>

#include "core/backend.h"
#include "cuda/dense/dtype.cuh"
#include "cuda/dense/gemm_launch_sm90.h"

namespace samebits::cuda::dense::sm90 {
namespace {

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
    __syncthreads();  // tile k0 in shared memory
#pragma unroll
    for (int kk = 0; kk < BK; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __fmaf_rn(sA[kk][ty * 4 + i], sB[kk][tx * 4 + j], acc[i][j]);
    __syncthreads();  // everyone done reading before the next fill
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

template <class TO>
void launch_f32(const sb_gemm_params& p, cudaStream_t s) {
  const sb_dtype bd = p.bias == nullptr ? p.out_dtype : p.bias_dtype;
  dim3 grid(unsigned((p.n + 63) / 64), unsigned((p.m + 63) / 64), unsigned(p.batch));
  switch (bd) {
    case SB_F32: gemm_f32_kernel<TO, float><<<grid, 256, 0, s>>>(p); break;
    case SB_F16: gemm_f32_kernel<TO, __half><<<grid, 256, 0, s>>>(p); break;
    default: gemm_f32_kernel<TO, __nv_bfloat16><<<grid, 256, 0, s>>>(p); break;
  }
}

}  // namespace

sb_status gemm_f32(const sb_gemm_params& p) {
  if (p.m > int64_t(65535) * 64 || p.batch > 65535)
    return fail(SB_UNSUPPORTED, "gemm (fp32): m or batch beyond the grid limits");
  cudaStream_t s = static_cast<cudaStream_t>(p.stream);
  switch (p.out_dtype) {
    case SB_F32: launch_f32<float>(p, s); break;
    case SB_F16: launch_f32<__half>(p, s); break;
    default: launch_f32<__nv_bfloat16>(p, s); break;
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return fail(SB_CUDA_ERROR, std::string("gemm (fp32) launch: ") + cudaGetErrorString(e));
  return SB_OK;
}

}  // namespace samebits::cuda::dense::sm90
