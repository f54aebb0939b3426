// Body of the per-configuration launcher; included only by the
// attention_fwd_sm90_hdim<D>_<dtype>.cu files, each instantiating one Cfg.
#pragma once

#include <string>

#include "core/backend.h"
#include "cuda/attention_fwd_sm90_kernel.h"
#include "cuda/attention_fwd_sm90_launch.h"
#include "cuda/kernel_attributes.h"

namespace samebits::cuda::sm90 {

template <class Cfg>
sb_status launch_attention_fwd(const AttentionFwdParams& params, const LaunchShape& shape) {
  auto kernel = attention_fwd_sm90_kernel<Cfg>;
  cudaError_t err = opt_in_shared_memory<attention_fwd_sm90_kernel<Cfg>>(Cfg::kSmemBytes);
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_fwd_sm90: cudaFuncSetAttribute: ") +
                                   cudaGetErrorString(err));
  long grid = shape.num_sms;  // persistent: at most one CTA per SM
  if (shape.work_items >= 0 && shape.work_items < grid) grid = shape.work_items;
  if (shape.max_ctas > 0 && shape.max_ctas < grid) grid = shape.max_ctas;
  if (grid <= 0) return SB_OK;
  kernel<<<static_cast<unsigned>(grid), Cfg::kThreads, Cfg::kSmemBytes, shape.stream>>>(params);
  err = cudaGetLastError();
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_fwd_sm90: launch: ") + cudaGetErrorString(err));
  return SB_OK;
}

}  // namespace samebits::cuda::sm90
