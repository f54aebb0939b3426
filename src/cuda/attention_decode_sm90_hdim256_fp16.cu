// sm90 attention over a KV cache, head dim 256, fp16.
#include "cuda/attention_decode_sm90_launch_impl.h"

namespace samebits::cuda::sm90 {
template sb_status launch_attention_decode<DecodeConfig<256, false>>(const AttentionDecodeParams&, int, bool,
                                                                   cudaStream_t);
}  // namespace samebits::cuda::sm90
