// sm90 attention forward, head dim 64, bf16.
#include "cuda/attention_fwd_sm90_launch_impl.h"

namespace samebits::cuda::sm90 {
template sb_status launch_attention_fwd<FwdConfig<64, true>>(const AttentionFwdParams&,
                                                               const LaunchShape&);
}  // namespace samebits::cuda::sm90
