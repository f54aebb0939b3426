// sm90 GEMM, bf16 operands, 192x128 CTA tile of three consumer warpgroups (gemm_tile_configs.h).
#include "cuda/dense/gemm_kernel_sm90_tma_wgmma.cuh"

namespace samebits::cuda::dense::sm90 {
SB_GEMM_SM90_INSTANTIATE(Cfg192x128w3, false)
}  // namespace samebits::cuda::dense::sm90
