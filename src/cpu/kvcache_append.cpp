// CPU backend: KV-cache append (docs/numerics.md, "KV-cache append"): a copy
// of k_new/v_new to logical positions [cache_seqlens[b], + seqlen_new) of
// each sequence's cache, paged or contiguous. No arithmetic.
#include <cstring>
#include <string>

#include "core/backend.h"
#include "cpu/thread_pool.h"
#include "samebits/samebits.h"

namespace samebits::cpu {
namespace {

size_t elem_size(sb_dtype dt) { return dt == SB_F32 ? 4 : 2; }

int64_t cache_elem(const sb_kvcache_append_params& p, const sb_view& v, int b, int64_t pos, int g) {
  if (p.block_table != nullptr) {
    const int64_t page = p.block_table[int64_t(b) * p.block_table_batch_stride + pos / p.page_size];
    return page * v.batch_stride + (pos % p.page_size) * v.row_stride + int64_t(g) * v.head_stride;
  }
  return int64_t(b) * v.batch_stride + pos * v.row_stride + int64_t(g) * v.head_stride;
}

}  // namespace

sb_status kvcache_append(const sb_kvcache_append_params& p) {
  if (p.k_new.data == nullptr || p.v_new.data == nullptr || p.k_cache.data == nullptr ||
      p.v_cache.data == nullptr)
    return fail(SB_INVALID_ARGUMENT, "kvcache_append: k_new, v_new, k_cache and v_cache must not be NULL");
  // Validate everything before writing anything, so a failing call leaves the
  // cache untouched.
  for (int b = 0; b < p.batch; ++b) {
    const int32_t start = p.cache_seqlens[b];
    if (start < 0)
      return fail(SB_INVALID_ARGUMENT, "cache_seqlens[" + std::to_string(b) + "] = " +
                                           std::to_string(start) + " is negative");
    if (p.block_table == nullptr || p.seqlen_new == 0) continue;
    const int64_t first = start / p.page_size, last = (int64_t(start) + p.seqlen_new - 1) / p.page_size;
    for (int64_t i = first; i <= last; ++i) {
      const int32_t e = p.block_table[int64_t(b) * p.block_table_batch_stride + i];
      if (e < 0)
        return fail(SB_INVALID_ARGUMENT, "block_table[" + std::to_string(b) + "][" +
                                             std::to_string(i) + "] = " + std::to_string(e) +
                                             " is negative");
    }
  }
  const size_t row_bytes = elem_size(p.dtype) * size_t(p.head_dim);
  const int64_t tasks = int64_t(p.batch) * p.num_heads_k;
  ThreadPool::get().parallel_for(tasks, [&](int64_t t) {
    const int b = int(t / p.num_heads_k), g = int(t % p.num_heads_k);
    for (int64_t i = 0; i < p.seqlen_new; ++i) {
      const int64_t pos = int64_t(p.cache_seqlens[b]) + i;
      const int64_t src_k = int64_t(b) * p.k_new.batch_stride + i * p.k_new.row_stride + int64_t(g) * p.k_new.head_stride;
      const int64_t src_v = int64_t(b) * p.v_new.batch_stride + i * p.v_new.row_stride + int64_t(g) * p.v_new.head_stride;
      std::memcpy(static_cast<char*>(p.k_cache.data) + cache_elem(p, p.k_cache, b, pos, g) * elem_size(p.dtype),
                  static_cast<const char*>(p.k_new.data) + src_k * elem_size(p.dtype), row_bytes);
      std::memcpy(static_cast<char*>(p.v_cache.data) + cache_elem(p, p.v_cache, b, pos, g) * elem_size(p.dtype),
                  static_cast<const char*>(p.v_new.data) + src_v * elem_size(p.dtype), row_bytes);
    }
  });
  return SB_OK;
}

}  // namespace samebits::cpu
