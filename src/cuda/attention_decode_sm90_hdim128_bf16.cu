// sm90 attention over a KV cache, head dim 128, bf16.
#include "cuda/attention_decode_sm90_launch_impl.h"

namespace samebits::cuda::sm90 {
template sb_status launch_attention_decode<DecodeConfig<128, true>>(const AttentionDecodeParams&, int, bool,
                                                                   cudaStream_t);
}  // namespace samebits::cuda::sm90
