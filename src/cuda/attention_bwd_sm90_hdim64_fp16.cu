// sm90 attention backward, head dim 64, fp16.
#include "cuda/attention_bwd_sm90_launch_impl.h"

namespace samebits::cuda::sm90 {
template sb_status launch_attention_bwd<BwdRunConfig<64, false>>(const AttentionBwdParams&,
                                                              const BwdLaunchShape&);
}  // namespace samebits::cuda::sm90
