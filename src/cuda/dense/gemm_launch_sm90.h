// Host entry points of the sm90 GEMM, shared by gemm_launch_sm90.cu (the
// dispatcher) and the one-configuration .cu files that define them.
#pragma once

#include <cuda_runtime.h>

#include "cuda/dense/gemm_sm90_params.h"
#include "cuda/dense/gemm_tile_configs.h"
#include "samebits/dense.h"

namespace samebits::cuda::dense::sm90 {

// Defined in gemm_kernel_sm90_tma_wgmma.cuh, instantiated by gemm_sm90_<dtype>_<tile>.cu.
template <class Cfg, bool kF16>
cudaError_t launch_gemm_tma_wgmma(const GemmTmaParams& p, int device, int sms, cudaStream_t stream);

// fp32 operands (gemm_sm90_ffma_f32.cu).
sb_status gemm_f32(const sb_gemm_params& p);

}  // namespace samebits::cuda::dense::sm90
