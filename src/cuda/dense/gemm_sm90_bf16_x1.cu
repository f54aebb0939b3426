#include "cuda/dense/gemm_kernel_sm90_tma_wgmma.cuh"
namespace samebits::cuda::dense::sm90 {
SB_GEMM_SM90_INSTANTIATE(CfgX1, false)
}
