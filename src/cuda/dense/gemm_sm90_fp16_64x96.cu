// sm90 GEMM, fp16 operands, 64x96 CTA tile (gemm_tile_configs.h).
#include "cuda/dense/gemm_kernel_sm90_tma_wgmma.cuh"

namespace samebits::cuda::dense::sm90 {
SB_GEMM_SM90_INSTANTIATE(Cfg64x96, true)
}  // namespace samebits::cuda::dense::sm90
