// sm90 GEMM, bf16 operands, 16x112 CTA tile with mma.sync consumers (gemm_tile_configs.h).
#include "cuda/dense/gemm_kernel_sm90_tma_wgmma.cuh"

namespace samebits::cuda::dense::sm90 {
SB_GEMM_SM90_INSTANTIATE(Cfg16x112s, false)
}  // namespace samebits::cuda::dense::sm90
