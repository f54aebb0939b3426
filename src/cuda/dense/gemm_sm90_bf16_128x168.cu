// sm90 GEMM, bf16 operands, 128x168 CTA tile (gemm_tile_configs.h).
#include "cuda/dense/gemm_kernel_sm90_tma_wgmma.cuh"

namespace samebits::cuda::dense::sm90 {
SB_GEMM_SM90_INSTANTIATE(Cfg128x168, false)
}  // namespace samebits::cuda::dense::sm90
