// The C ABI: checks the structural rules of each params struct (the Python
// layer gives friendlier messages first; these checks keep C callers from
// crashing), then dispatches to the backend named by params->device.
#include <stdint.h>

#include <string>

#include "core/backend.h"
#include "samebits/config.h"
#include "samebits/samebits.h"

namespace samebits {

namespace {
thread_local std::string g_last_error;

bool valid_dtype(sb_dtype d) { return d == SB_F32 || d == SB_F16 || d == SB_BF16; }

// The rules on shapes and options (what a workspace size depends on).
sb_status check_geometry(const sb_attention_params* p, bool backward) {
  if (p == nullptr) return fail(SB_INVALID_ARGUMENT, "params is NULL");
  if (!valid_dtype(p->dtype)) return fail(SB_INVALID_ARGUMENT, "dtype: unknown sb_dtype");
  if (p->device != SB_CPU && p->device != SB_CUDA)
    return fail(SB_INVALID_ARGUMENT, "device: unknown sb_device");
  if (p->batch < 0) return fail(SB_INVALID_ARGUMENT, "batch must be >= 0");
  if (p->num_heads <= 0 || p->num_heads_k <= 0 || p->num_heads % p->num_heads_k != 0)
    return fail(SB_INVALID_ARGUMENT, "num_heads must be a positive multiple of num_heads_k");
  if (!supported_head_dim(p->head_dim))
    return fail(SB_INVALID_ARGUMENT, "head_dim must be a multiple of 8 in [8, 256], got " +
                                         std::to_string(p->head_dim));
  if (p->cu_seqlens_q == nullptr && (p->seqlen_q < 0 || p->seqlen_k < 0))
    return fail(SB_INVALID_ARGUMENT, "seqlen_q and seqlen_k must be >= 0");
  if ((p->cu_seqlens_q == nullptr) != (p->cu_seqlens_k == nullptr) && p->block_table == nullptr &&
      p->seqused_k == nullptr)
    return fail(SB_INVALID_ARGUMENT, "cu_seqlens_q and cu_seqlens_k must be given together");
  if (p->block_table != nullptr && (p->page_size <= 0 || p->seqused_k == nullptr))
    return fail(SB_INVALID_ARGUMENT, "a paged KV cache needs page_size > 0 and seqused_k");
  if (p->block_table != nullptr && backward)
    return fail(SB_INVALID_ARGUMENT, "the backward does not take a paged KV cache");
  if (!(p->softcap >= 0.0f)) return fail(SB_INVALID_ARGUMENT, "softcap must be >= 0");
  return SB_OK;
}

sb_status check_attention(const sb_attention_params* p, bool backward) {
  if (sb_status s = check_geometry(p, backward); s != SB_OK) return s;
  if (p->q.data == nullptr || p->k.data == nullptr || p->v.data == nullptr ||
      p->out.data == nullptr || p->lse.data == nullptr)
    return fail(SB_INVALID_ARGUMENT, "q, k, v, out and lse must not be NULL");
  if (backward && (p->dout.data == nullptr || p->dq.data == nullptr || p->dk.data == nullptr ||
                   p->dv.data == nullptr))
    return fail(SB_INVALID_ARGUMENT, "dout, dq, dk and dv must not be NULL");
  return SB_OK;
}

// total_q: the packed query rows the backward's workspace is sized for
// (ignored for dense batches).
sb_status check_total_q(const sb_attention_params* p, int64_t total_q) {
  if (p->cu_seqlens_q != nullptr && total_q < 0)
    return fail(SB_INVALID_ARGUMENT, "total_q must be >= 0 when cu_seqlens_q is set, got " +
                                         std::to_string(total_q));
  return SB_OK;
}
}  // namespace

sb_status fail(sb_status status, const std::string& message) {
  g_last_error = message;
  return status;
}

#ifndef SAMEBITS_WITH_CUDA
namespace cuda {
static sb_status not_built() {
  return fail(SB_UNSUPPORTED, "this samebits build has no CUDA kernels (built without nvcc)");
}
sb_status attention_forward(const sb_attention_params&) { return not_built(); }
sb_status attention_forward_ws(const sb_attention_params&, void*, size_t) { return not_built(); }
sb_status attention_workspace_size(const sb_attention_params&, size_t*, size_t*) { return SB_OK; }
sb_status attention_backward(const sb_attention_params&) { return not_built(); }
sb_status attention_backward_ws(const sb_attention_params&, void*, size_t, int64_t) { return not_built(); }
sb_status attention_backward_workspace_size(const sb_attention_params&, int64_t, size_t* bytes) {
  *bytes = 0;
  return SB_OK;
}
sb_status kvcache_append(const sb_kvcache_append_params&) { return not_built(); }
int supported(int) { return 0; }
}  // namespace cuda
#endif

}  // namespace samebits

using namespace samebits;

extern "C" {

sb_status sb_attention_forward(const sb_attention_params* p) {
  g_last_error.clear();
  if (sb_status s = check_attention(p, false); s != SB_OK) return s;
  return p->device == SB_CPU ? cpu::attention_forward(*p) : cuda::attention_forward(*p);
}

sb_status sb_attention_workspace_size(const sb_attention_params* p, size_t* bytes, size_t* min_bytes) {
  g_last_error.clear();
  if (bytes) *bytes = 0;
  if (min_bytes) *min_bytes = 0;
  if (sb_status s = check_geometry(p, false); s != SB_OK) return s;
  if (p->device == SB_CPU) return SB_OK;  // the CPU backend needs no workspace
  size_t b = 0, m = 0;
  if (sb_status s = cuda::attention_workspace_size(*p, &b, &m); s != SB_OK) return s;
  if (bytes) *bytes = b;
  if (min_bytes) *min_bytes = m;
  return SB_OK;
}

sb_status sb_attention_forward_ws(const sb_attention_params* p, void* workspace, size_t workspace_bytes) {
  g_last_error.clear();
  if (sb_status s = check_attention(p, false); s != SB_OK) return s;
  if (workspace == nullptr && workspace_bytes != 0)
    return fail(SB_INVALID_ARGUMENT, "workspace is NULL but workspace_bytes is " + std::to_string(workspace_bytes));
  if (p->device == SB_CPU) return cpu::attention_forward(*p);
  if (workspace == nullptr) return cuda::attention_forward(*p);  // the library's own workspace
  return cuda::attention_forward_ws(*p, workspace, workspace_bytes);
}

sb_status sb_attention_backward(const sb_attention_params* p) {
  g_last_error.clear();
  if (sb_status s = check_attention(p, true); s != SB_OK) return s;
  return p->device == SB_CPU ? cpu::attention_backward(*p) : cuda::attention_backward(*p);
}

sb_status sb_attention_backward_workspace_size(const sb_attention_params* p, int64_t total_q, size_t* bytes) {
  g_last_error.clear();
  if (bytes == nullptr) return fail(SB_INVALID_ARGUMENT, "bytes is NULL");
  *bytes = 0;
  if (sb_status s = check_geometry(p, true); s != SB_OK) return s;
  if (sb_status s = check_total_q(p, total_q); s != SB_OK) return s;
  if (p->device == SB_CPU) return SB_OK;  // the CPU backend needs no workspace
  return cuda::attention_backward_workspace_size(*p, total_q, bytes);
}

sb_status sb_attention_backward_ws(const sb_attention_params* p, int64_t total_q, void* workspace,
                                   size_t workspace_bytes) {
  g_last_error.clear();
  if (sb_status s = check_attention(p, true); s != SB_OK) return s;
  if (sb_status s = check_total_q(p, total_q); s != SB_OK) return s;
  if (workspace == nullptr && workspace_bytes != 0)
    return fail(SB_INVALID_ARGUMENT, "workspace is NULL but workspace_bytes is " + std::to_string(workspace_bytes));
  if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
    return fail(SB_INVALID_ARGUMENT, "workspace must be 16-byte aligned");
  if (p->device == SB_CPU) {
    // the offsets are host memory here: the rows they cover must fit total_q
    if (p->cu_seqlens_q != nullptr && p->cu_seqlens_q[p->batch] > total_q)
      return fail(SB_INVALID_ARGUMENT, "total_q is " + std::to_string(total_q) + " but cu_seqlens_q[" +
                                           std::to_string(p->batch) + "] is " +
                                           std::to_string(p->cu_seqlens_q[p->batch]));
    return cpu::attention_backward(*p);  // no workspace on the CPU
  }
  if (workspace != nullptr) {
    size_t needed = 0;
    if (sb_status s = cuda::attention_backward_workspace_size(*p, total_q, &needed); s != SB_OK) return s;
    if (workspace_bytes < needed)
      return fail(SB_INVALID_ARGUMENT, "workspace has " + std::to_string(workspace_bytes) +
                                           " bytes, the backward needs " + std::to_string(needed));
  }
  return cuda::attention_backward_ws(*p, workspace, workspace_bytes, total_q);
}

sb_status sb_kvcache_append(const sb_kvcache_append_params* p) {
  g_last_error.clear();
  if (p == nullptr) return fail(SB_INVALID_ARGUMENT, "params is NULL");
  if (!valid_dtype(p->dtype)) return fail(SB_INVALID_ARGUMENT, "dtype: unknown sb_dtype");
  if (p->batch < 0 || p->seqlen_new < 0 || p->num_heads_k <= 0 || !supported_head_dim(p->head_dim))
    return fail(SB_INVALID_ARGUMENT, "kvcache_append: bad geometry");
  if (p->block_table != nullptr && p->page_size <= 0)
    return fail(SB_INVALID_ARGUMENT, "kvcache_append: page_size must be > 0");
  if (p->cache_seqlens == nullptr) return fail(SB_INVALID_ARGUMENT, "cache_seqlens is NULL");
  return p->device == SB_CPU ? cpu::kvcache_append(*p) : cuda::kvcache_append(*p);
}

int32_t sb_kv_block_size(int32_t arch, int32_t head_dim, sb_dtype dtype) {
  return kv_block_size(arch, head_dim, dtype);
}
int32_t sb_split_size(int32_t arch, int32_t head_dim, sb_dtype dtype) {
  return split_size(arch, head_dim, dtype);
}

int32_t sb_cuda_built(void) {
#ifdef SAMEBITS_WITH_CUDA
  return kArchSm90;
#else
  return 0;
#endif
}

int32_t sb_cuda_supported(int32_t device_index) { return cuda::supported(device_index); }
void sb_cpu_set_num_threads(int32_t n) { cpu::set_num_threads(n); }
const char* sb_last_error(void) { return g_last_error.c_str(); }
const char* sb_version(void) { return SAMEBITS_VERSION; }
int32_t sb_abi_version(void) { return SB_ABI_VERSION; }

}  // extern "C"
