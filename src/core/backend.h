// Internal: what each backend provides to the C ABI dispatcher (api.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "samebits/samebits.h"

namespace samebits {

// Records the message returned by sb_last_error() on this thread and returns
// `status`, so a backend can write `return fail(SB_INVALID_ARGUMENT, ...)`.
sb_status fail(sb_status status, const std::string& message);

namespace cpu {
sb_status attention_forward(const sb_attention_params& p);
sb_status attention_backward(const sb_attention_params& p);
sb_status kvcache_append(const sb_kvcache_append_params& p);
void set_num_threads(int num_threads);
}  // namespace cpu

namespace cuda {
// Defined in src/cuda/launch.cu when CUDA is built, else by api.cpp.
sb_status attention_forward(const sb_attention_params& p);
// attention_forward with a caller-provided device workspace (non-null).
sb_status attention_forward_ws(const sb_attention_params& p, void* workspace, size_t bytes);
// The workspace attention_forward_ws needs for p: one pass / the least.
sb_status attention_workspace_size(const sb_attention_params& p, size_t* bytes, size_t* min_bytes);
sb_status attention_backward(const sb_attention_params& p);
// attention_backward with a caller-provided device workspace of `bytes`
// (nullptr with 0: the backward allocates its own); total_q: rows of the
// packed q when p.cu_seqlens_q is set, ignored for dense batches.
sb_status attention_backward_ws(const sb_attention_params& p, void* workspace, size_t bytes, int64_t total_q);
// The workspace attention_backward_ws needs for p (0: none).
sb_status attention_backward_workspace_size(const sb_attention_params& p, int64_t total_q, size_t* bytes);
sb_status kvcache_append(const sb_kvcache_append_params& p);
int supported(int device_index);
}  // namespace cuda

}  // namespace samebits
