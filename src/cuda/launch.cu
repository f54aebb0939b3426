// CUDA entry points of the C ABI. Each kernel family's launcher lives beside
// its kernel; this file routes to them and answers for the ones not yet
// written with SB_UNSUPPORTED and a message naming the missing kernel.
#include <cuda_runtime.h>

#include "core/backend.h"
#include "cuda/attention_fwd_sm90_launch.h"
#ifdef SAMEBITS_CUDA_DECODE
#include "cuda/attention_decode_sm90_launch.h"
#endif
#ifdef SAMEBITS_CUDA_BACKWARD
#include "cuda/attention_bwd_sm90_launch.h"
#endif

namespace samebits::cuda {

int supported(int device_index) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device_index < 0 || device_index >= count) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device_index) != cudaSuccess) return 0;
  return prop.major == 9 && prop.minor == 0;
}

sb_status attention_forward(const sb_attention_params& p) {
#ifdef SAMEBITS_CUDA_DECODE
  if (sm90::decode_sm90_applies(p)) return sm90::attention_decode_sm90(p);
#endif
  return sm90::attention_fwd_sm90(p);
}
sb_status attention_forward_ws(const sb_attention_params& p, void* workspace, size_t bytes) {
#ifdef SAMEBITS_CUDA_DECODE
  if (sm90::decode_sm90_applies(p)) return sm90::attention_decode_sm90(p, workspace, bytes);
#endif
  (void)workspace;
  (void)bytes;
  return sm90::attention_fwd_sm90(p);  // the training forward needs no workspace
}

sb_status attention_workspace_size(const sb_attention_params& p, size_t* bytes, size_t* min_bytes) {
  *bytes = 0;
  *min_bytes = 0;
#ifdef SAMEBITS_CUDA_DECODE
  if (sm90::decode_sm90_applies(p)) {
    *bytes = sm90::attention_decode_sm90_workspace_size(p);
    *min_bytes = sm90::attention_decode_sm90_min_workspace_size(p);
  }
#else
  (void)p;
#endif
  return SB_OK;
}

#ifdef SAMEBITS_CUDA_BACKWARD
sb_status attention_backward(const sb_attention_params& p) { return sm90::attention_bwd_sm90(p); }
sb_status attention_backward_ws(const sb_attention_params& p, void* workspace, size_t bytes, int64_t total_q) {
  return sm90::attention_bwd_sm90(p, workspace, bytes, total_q);
}
sb_status attention_backward_workspace_size(const sb_attention_params& p, int64_t total_q, size_t* bytes) {
  *bytes = sm90::attention_bwd_sm90_workspace_size(p, total_q);
  return SB_OK;
}
#else
sb_status attention_backward(const sb_attention_params&) {
  return fail(SB_UNSUPPORTED, "the sm90 attention backward kernel is not built yet");
}
sb_status attention_backward_ws(const sb_attention_params& p, void*, size_t, int64_t) {
  return attention_backward(p);
}
sb_status attention_backward_workspace_size(const sb_attention_params&, int64_t, size_t* bytes) {
  *bytes = 0;
  return SB_OK;
}
#endif
sb_status kvcache_append(const sb_kvcache_append_params& p) {
#ifdef SAMEBITS_CUDA_DECODE
  return sm90::kvcache_append_sm90(p);
#else
  (void)p;
  return fail(SB_UNSUPPORTED, "the CUDA KV-cache append kernel is not built yet");
#endif
}

}  // namespace samebits::cuda
