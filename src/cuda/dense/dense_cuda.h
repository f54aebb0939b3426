// sm90 backend of the dense ops (include/samebits/dense.h). Defined in
// src/cuda/dense/*.cu when CUDA is built, else by src/core/api_dense.cpp.
#pragma once

#include "samebits/dense.h"

namespace samebits::cuda::dense {
sb_status gemm(const sb_gemm_params& p);
sb_status rmsnorm_forward(const sb_rmsnorm_params& p);
sb_status rmsnorm_backward(const sb_rmsnorm_backward_params& p);
sb_status softmax_forward(const sb_softmax_params& p);
sb_status softmax_backward(const sb_softmax_backward_params& p);
sb_status reduce(const sb_reduce_params& p);
}  // namespace samebits::cuda::dense
