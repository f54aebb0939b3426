/* samebits — deterministic, batch-invariant kernels.
 *
 * The C ABI. This header is the whole public surface of libsamebits: plain
 * structs filled on the host and passed by pointer, raw pointers and int64
 * strides, no torch, no Python, no C++ types. Every kernel family has one
 * params struct; the numerics each kernel implements are written down in
 * docs/numerics.md, and the tile table that shapes them in
 * include/samebits/config.h.
 */
#ifndef SAMEBITS_SAMEBITS_H_
#define SAMEBITS_SAMEBITS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SB_API __declspec(dllexport)
#else
#define SB_API __attribute__((visibility("default")))
#endif

#define SB_ABI_VERSION 2

typedef enum sb_dtype {
  SB_F32 = 0,
  SB_F16 = 1,
  SB_BF16 = 2,
} sb_dtype;

typedef enum sb_device {
  SB_CPU = 0,
  SB_CUDA = 1,
} sb_device;

typedef enum sb_status {
  SB_OK = 0,
  SB_INVALID_ARGUMENT = 1, /* the params break a documented rule */
  SB_UNSUPPORTED = 2,      /* valid, but no kernel is built for it */
  SB_CUDA_ERROR = 3,       /* a CUDA runtime call failed */
  SB_INTERNAL = 4,
} sb_status;

/* A strided view of a (batch, row, head, dim) tensor. Strides are in
 * elements; the dim stride is always 1. For packed (varlen) tensors
 * batch_stride is unused and rows index the packed token axis. For a paged
 * KV cache, batch indexes pages and row the slot inside a page. For the fp32
 * LSE tensors "row" and "head" keep their meaning, there is no dim. */
typedef struct sb_view {
  void* data;
  int64_t batch_stride;
  int64_t row_stride;
  int64_t head_stride;
} sb_view;

/* Attention: forward, backward and KV-cache attention share one struct.
 *
 * Geometry. q: (batch, seqlen_q, num_heads, head_dim); k, v: (batch,
 * seqlen_k, num_heads_k, head_dim); out like q; lse: fp32 (batch, num_heads,
 * seqlen_q). num_heads % num_heads_k == 0 (GQA/MQA): query head h reads KV
 * head h / (num_heads / num_heads_k).
 *
 * Varlen. When cu_seqlens_q is set, q/out/lse are packed over tokens and
 * sequence b owns rows [cu_seqlens_q[b], cu_seqlens_q[b+1]); likewise k/v
 * with cu_seqlens_k. seqlen_q/seqlen_k are then ignored.
 *
 * KV cache. When seqused_k is set, sequence b attends to its first
 * seqused_k[b] keys only. When block_table is set, k and v are a paged cache
 * (num_pages, page_size, num_heads_k, head_dim) and logical key j of
 * sequence b lives in page block_table[b * block_table_batch_stride +
 * j / page_size], slot j % page_size. seqlen_k is then the cache capacity
 * in keys: every sequence's row of block_table holds ceil(seqlen_k /
 * page_size) readable entries (those past its seqused_k may hold anything;
 * the CUDA decode path reads them early but never uses them).
 *
 * Masking. Query row i of a sequence with Lq queries and Lk keys sits at key
 * position i + (Lk - Lq) (bottom-right alignment) and sees key j iff
 *   j >= i + Lk - Lq - window_left   (window_left  < 0: unbounded)
 *   j <= i + Lk - Lq + window_right  (window_right < 0: unbounded)
 * Causal attention is window_right == 0.
 *
 * Pointers (data, cu_seqlens, seqused_k, block_table) live on `device`.
 */
typedef struct sb_attention_params {
  sb_dtype dtype;
  sb_device device;
  void* stream; /* cudaStream_t for SB_CUDA, ignored on the CPU */

  int32_t batch;
  int32_t num_heads;
  int32_t num_heads_k;
  int32_t head_dim;
  int32_t seqlen_q;
  int32_t seqlen_k;

  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_k;
  const int32_t* block_table;
  int64_t block_table_batch_stride;
  int32_t page_size;

  float softmax_scale;
  float softcap; /* 0: off */
  int32_t window_left;
  int32_t window_right;

  sb_view q, k, v, out, lse;

  /* backward only: dout like out; dq like q; dk, dv like k, v */
  sb_view dout, dq, dk, dv;
} sb_attention_params;

/* Append new keys/values to a KV cache before attention.
 * k_new, v_new: (batch, seqlen_new, num_heads_k, head_dim). Sequence b's new
 * rows go to logical positions [cache_seqlens[b], cache_seqlens[b] +
 * seqlen_new) of its cache (paged when block_table is set, else
 * (batch, capacity, num_heads_k, head_dim)). cache_seqlens is not modified. */
typedef struct sb_kvcache_append_params {
  sb_dtype dtype;
  sb_device device;
  void* stream;
  int32_t batch;
  int32_t seqlen_new;
  int32_t num_heads_k;
  int32_t head_dim;
  const int32_t* cache_seqlens;
  const int32_t* block_table;
  int64_t block_table_batch_stride;
  int32_t page_size;
  sb_view k_new, v_new, k_cache, v_cache;
} sb_kvcache_append_params;

/* Forward: writes out and lse. */
SB_API sb_status sb_attention_forward(const sb_attention_params* params);
/* Attention over a KV cache on CUDA (block_table set, or seqused_k with a
 * dense q and cache) folds per-split partial states kept in a device
 * workspace. sb_attention_forward uses one owned by the library (per
 * device, grown on demand, so it cannot grow inside a CUDA-graph capture,
 * and shared by all streams of a device: concurrent calls on two streams
 * would race on it). sb_attention_forward_ws takes the caller's instead.
 *
 * sb_attention_workspace_size: *bytes is the workspace that runs every
 * query row of `params` in one pass, *min_bytes the least that works (one
 * query row per pass); either pointer may be NULL. Both are 0 when the call
 * needs none (the CPU backend, the training forward). They depend only on
 * dtype, device, batch, num_heads, head_dim, seqlen_q, seqlen_k and on which of
 * block_table / seqused_k / cu_seqlens are set (never on device values,
 * never on data pointers), so they can be queried before allocating.
 *
 * sb_attention_forward_ws: sb_attention_forward with `workspace`, a device
 * buffer on the current device of at least min_bytes (any alignment; its
 * contents are scratch, read only after being written by the same call).
 * The results never depend on the workspace or its size. No allocation is
 * made, so the call can be captured in a CUDA graph at once, and calls on
 * different streams are safe when each has its own workspace (a buffer
 * may be reused on one stream, in stream order). workspace == NULL with
 * workspace_bytes == 0 is sb_attention_forward. Added in ABI version 1
 * (additive). */
SB_API sb_status sb_attention_workspace_size(const sb_attention_params* params, size_t* bytes,
                                             size_t* min_bytes);
SB_API sb_status sb_attention_forward_ws(const sb_attention_params* params, void* workspace,
                                         size_t workspace_bytes);
/* Backward: reads q, k, v, out, lse, dout; writes dq, dk, dv. */
SB_API sb_status sb_attention_backward(const sb_attention_params* params);
/* The backward on CUDA keeps an fp32 dq accumulator and semaphores in a
 * device workspace. sb_attention_backward allocates one itself when needed
 * (stream-ordered on params->stream, freed by the same call);
 * sb_attention_backward_ws takes the caller's instead.
 *
 * total_q: when cu_seqlens_q is set, the rows of the packed q, out, dout and
 * dq (must be >= 0, and >= cu_seqlens_q[batch]); ignored for dense batches.
 *
 * sb_attention_backward_workspace_size: *bytes is the workspace the backward
 * of `params` needs, 0 when it needs none (always on the CPU). It depends
 * only on dtype, device, batch, num_heads, head_dim, seqlen_q, on whether
 * cu_seqlens_q is set and on total_q (never on device values, never on data
 * pointers), so it can be queried before allocating.
 *
 * sb_attention_backward_ws: sb_attention_backward with `workspace`, a device
 * buffer on the current device of at least that many bytes, 16-byte aligned
 * (its contents are scratch). dq, dk and dv never depend on the workspace or
 * its size. workspace == NULL with workspace_bytes == 0 is
 * sb_attention_backward. Added in ABI version 2 (additive). */
SB_API sb_status sb_attention_backward_workspace_size(const sb_attention_params* params, int64_t total_q,
                                                      size_t* bytes);
SB_API sb_status sb_attention_backward_ws(const sb_attention_params* params, int64_t total_q, void* workspace,
                                          size_t workspace_bytes);
/* KV-cache append (see above). */
SB_API sb_status sb_kvcache_append(const sb_kvcache_append_params* params);

/* The reduction structure of the numerics contract (docs/numerics.md) for
 * one configuration: the KV block size and the split size, in keys.
 * arch: 0 for the CPU backend, else the CUDA compute capability x10 (90).
 * Returns 0 when the configuration is unsupported. */
SB_API int32_t sb_kv_block_size(int32_t arch, int32_t head_dim, sb_dtype dtype);
SB_API int32_t sb_split_size(int32_t arch, int32_t head_dim, sb_dtype dtype);

/* Whether CUDA kernels were compiled in, and for which architecture. */
SB_API int32_t sb_cuda_built(void);
/* Whether the CUDA kernels can run on device `device_index` (sm_90 only). */
SB_API int32_t sb_cuda_supported(int32_t device_index);
/* Worker threads the CPU backend uses (never changes any result). */
SB_API void sb_cpu_set_num_threads(int32_t num_threads);

/* The message of the last failing call on this thread ("" if none). */
SB_API const char* sb_last_error(void);
SB_API const char* sb_version(void);
SB_API int32_t sb_abi_version(void);

#ifdef __cplusplus
}
#endif
#endif /* SAMEBITS_SAMEBITS_H_ */
