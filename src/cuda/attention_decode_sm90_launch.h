// sm90 attention over a KV cache (decode, speculative verify, chunked
// prefill), host side. attention_decode_sm90() checks what the kernels
// support, fills AttentionDecodeParams (tensor maps included), cuts the
// query rows into waves that fit the workspace and calls the launcher of
// the one configuration that matches (head dim, dtype). Each launcher is
// instantiated in its own .cu (attention_decode_sm90_hdim<D>_<dtype>.cu),
// listed in cmake/cuda_decode_sources.cmake.
//
// Built only with the CMake option SAMEBITS_CUDA_DECODE (it has not run on
// a GPU yet); launch.cu routes to it behind #ifdef SAMEBITS_CUDA_DECODE.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

#include "cuda/attention_decode_sm90_params.h"
#include "samebits/samebits.h"

namespace samebits::cuda::sm90 {

// Launches pass 1 (split kernel, the schedule `variant`: DecodeVariant,
// with the mma.sync consumer when `mma`) and pass 2 (combine kernel, unless
// params.direct_out) of one wave. Cfg is DecodeConfig<D, dtype> of the main
// schedule; variant and mma pick DecodeConfig<D, dtype, variant, mma> of
// pass 1. mma needs every tile to hold at most 16 packed rows
// (q_count * head_group <= 16).
template <class Cfg>
sb_status launch_attention_decode(const AttentionDecodeParams& params, int variant, bool mma,
                                  cudaStream_t stream);

// Whether attention_forward should take the KV-cache path: a paged cache,
// or a dense q over a contiguous cache with per-sequence lengths
// (seqused_k). Everything else stays with the forward kernel.
bool decode_sm90_applies(const sb_attention_params& p);

// Workspace bytes that let every query row run in one wave, and the least
// workspace that works at all (one query row per wave). Pure functions of
// (batch, num_heads, seqlen_q, seqlen_k, head_dim); 0 when unsupported.
size_t attention_decode_sm90_workspace_size(const sb_attention_params& p);
size_t attention_decode_sm90_min_workspace_size(const sb_attention_params& p);

// The decode path with a caller-provided device workspace (no allocation,
// CUDA-graph capturable). Fails with SB_INVALID_ARGUMENT when the workspace
// is below the minimum.
sb_status attention_decode_sm90(const sb_attention_params& p, void* workspace, size_t bytes);

// The decode path through the C ABI as it is today (no workspace field):
// a per-device workspace owned by the library, grown on demand and never
// shrunk. Growing it inside a CUDA-graph capture fails with a message that
// says to run the same shape once before capturing.
sb_status attention_decode_sm90(const sb_attention_params& p);

// KV-cache append (docs/numerics.md "KV-cache append"): a copy kernel.
sb_status kvcache_append_sm90(const sb_kvcache_append_params& p);

}  // namespace samebits::cuda::sm90
