// sm90 attention forward: the host side. attention_fwd_sm90() checks what
// the kernel supports, fills AttentionFwdParams (tensor maps included) and
// calls the launcher of the one configuration that matches (head dim,
// dtype). Each launcher is instantiated in its own .cu file
// (attention_fwd_sm90_hdim<D>_<dtype>.cu), listed in cmake/cuda_sources.cmake.
#pragma once

#include <cuda_runtime.h>

#include "cuda/attention_fwd_sm90_params.h"
#include "samebits/samebits.h"

namespace samebits::cuda::sm90 {

// Launch geometry chosen on the host (FREE: never moves a bit).
struct LaunchShape {
  long work_items;  // < 0: unknown on the host (varlen), the grid is one CTA per SM
  int num_sms;
  int max_ctas;     // > 0: cap on the grid (tests use it to vary the grid)
  cudaStream_t stream;
};

template <class Cfg>
sb_status launch_attention_fwd(const AttentionFwdParams& params, const LaunchShape& shape);

// Entry point from launch.cu.
sb_status attention_fwd_sm90(const sb_attention_params& p);

}  // namespace samebits::cuda::sm90
