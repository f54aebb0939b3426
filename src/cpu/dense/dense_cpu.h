// CPU reference backend of the dense ops (include/samebits/dense.h). The
// reduction order of each op is written down in docs/numerics_dense.md.
#pragma once

#include "samebits/dense.h"

namespace samebits::cpu::dense {
sb_status gemm(const sb_gemm_params& p);
sb_status rmsnorm_forward(const sb_rmsnorm_params& p);
sb_status rmsnorm_backward(const sb_rmsnorm_backward_params& p);
sb_status softmax_forward(const sb_softmax_params& p);
sb_status softmax_backward(const sb_softmax_backward_params& p);
sb_status reduce(const sb_reduce_params& p);
}  // namespace samebits::cpu::dense
