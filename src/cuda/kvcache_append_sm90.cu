// KV-cache append on CUDA (docs/numerics.md "KV-cache append"): copies
// k_new, v_new (batch, seqlen_new, num_heads_k, d) to logical positions
// [cache_seqlens[b], cache_seqlens[b] + seqlen_new) of each sequence's
// cache, paged (block_table) or contiguous. No arithmetic, so no bits to
// match: the copy is exact in any order.
//
// One thread per (sequence, new row, KV head, vector); the vector is 16, 4
// or 2 bytes, the widest that every pointer, stride and row length allows.
// cache_seqlens and block_table are on the device, so the host cannot
// validate them (the CPU backend does): rows with a negative start or a
// negative page are skipped.
#include <cuda_runtime.h>

#include <string>

#include "core/backend.h"
#include "cuda/attention_decode_sm90_launch.h"

namespace samebits::cuda::sm90 {
namespace {

struct AppendParams {
  const char* k_new;
  const char* v_new;
  char* k_cache;
  char* v_cache;
  // strides in bytes
  int64_t kn_b, kn_r, kn_h, vn_b, vn_r, vn_h;
  int64_t kc_p, kc_r, kc_h, vc_p, vc_r, vc_h;
  const int32_t* cache_seqlens;
  const int32_t* block_table;
  int64_t block_table_batch_stride;
  int32_t page_size;
  int32_t batch, seqlen_new, num_heads_k;
  int32_t vecs_per_row;
};

template <class Vec>
__global__ void kvcache_append_sm90_kernel(const __grid_constant__ AppendParams p) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t total = static_cast<int64_t>(p.batch) * p.seqlen_new * p.num_heads_k * p.vecs_per_row;
  if (idx >= total) return;
  const int u = static_cast<int>(idx % p.vecs_per_row);
  int64_t rest = idx / p.vecs_per_row;
  const int g = static_cast<int>(rest % p.num_heads_k);
  rest /= p.num_heads_k;
  const int i = static_cast<int>(rest % p.seqlen_new);
  const int b = static_cast<int>(rest / p.seqlen_new);
  const int32_t start = p.cache_seqlens[b];
  if (start < 0) return;
  const int64_t pos = static_cast<int64_t>(start) + i;
  int64_t page, slot;
  if (p.block_table) {
    page = p.block_table[b * p.block_table_batch_stride + pos / p.page_size];
    slot = pos % p.page_size;
    if (page < 0) return;
  } else {
    page = b;
    slot = pos;
  }
  const int64_t off = static_cast<int64_t>(u) * sizeof(Vec);
  const Vec kx = *reinterpret_cast<const Vec*>(p.k_new + b * p.kn_b + i * p.kn_r + g * p.kn_h + off);
  const Vec vx = *reinterpret_cast<const Vec*>(p.v_new + b * p.vn_b + i * p.vn_r + g * p.vn_h + off);
  *reinterpret_cast<Vec*>(p.k_cache + page * p.kc_p + slot * p.kc_r + g * p.kc_h + off) = kx;
  *reinterpret_cast<Vec*>(p.v_cache + page * p.vc_p + slot * p.vc_r + g * p.vc_h + off) = vx;
}

}  // namespace

sb_status kvcache_append_sm90(const sb_kvcache_append_params& p) {
  if (p.k_new.data == nullptr || p.v_new.data == nullptr || p.k_cache.data == nullptr ||
      p.v_cache.data == nullptr)
    return fail(SB_INVALID_ARGUMENT, "kvcache_append: k_new, v_new, k_cache and v_cache must not be NULL");
  if (p.batch == 0 || p.seqlen_new == 0 || p.num_heads_k == 0 || p.head_dim == 0) return SB_OK;
  const int64_t elem = p.dtype == SB_F32 ? 4 : 2;
  AppendParams a{};
  a.k_new = static_cast<const char*>(p.k_new.data);
  a.v_new = static_cast<const char*>(p.v_new.data);
  a.k_cache = static_cast<char*>(p.k_cache.data);
  a.v_cache = static_cast<char*>(p.v_cache.data);
  a.kn_b = p.k_new.batch_stride * elem, a.kn_r = p.k_new.row_stride * elem, a.kn_h = p.k_new.head_stride * elem;
  a.vn_b = p.v_new.batch_stride * elem, a.vn_r = p.v_new.row_stride * elem, a.vn_h = p.v_new.head_stride * elem;
  a.kc_p = p.k_cache.batch_stride * elem, a.kc_r = p.k_cache.row_stride * elem, a.kc_h = p.k_cache.head_stride * elem;
  a.vc_p = p.v_cache.batch_stride * elem, a.vc_r = p.v_cache.row_stride * elem, a.vc_h = p.v_cache.head_stride * elem;
  a.cache_seqlens = p.cache_seqlens;
  a.block_table = p.block_table;
  a.block_table_batch_stride = p.block_table_batch_stride;
  a.page_size = p.page_size;
  a.batch = p.batch;
  a.seqlen_new = p.seqlen_new;
  a.num_heads_k = p.num_heads_k;
  const int64_t row_bytes = p.head_dim * elem;
  // The widest vector every address allows.
  auto fits = [&](int64_t w) {
    const int64_t vals[] = {row_bytes, a.kn_b, a.kn_r, a.kn_h, a.vn_b, a.vn_r, a.vn_h,
                            a.kc_p,    a.kc_r, a.kc_h, a.vc_p, a.vc_r, a.vc_h};
    for (int64_t x : vals)
      if (x % w != 0) return false;
    for (const void* ptr : {p.k_new.data, p.v_new.data, p.k_cache.data, p.v_cache.data})
      if (reinterpret_cast<uintptr_t>(ptr) % w != 0) return false;
    return true;
  };
  const int vec = fits(16) ? 16 : fits(4) ? 4 : 2;
  a.vecs_per_row = static_cast<int32_t>(row_bytes / vec);
  const int64_t total = static_cast<int64_t>(p.batch) * p.seqlen_new * p.num_heads_k * a.vecs_per_row;
  const int threads = 256;
  const int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 0x7fffffff) return fail(SB_UNSUPPORTED, "kvcache_append: too many rows for one launch");
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  if (vec == 16)
    kvcache_append_sm90_kernel<uint4><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a);
  else if (vec == 4)
    kvcache_append_sm90_kernel<uint32_t><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a);
  else
    kvcache_append_sm90_kernel<uint16_t><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("kvcache_append: launch: ") + cudaGetErrorString(err));
  return SB_OK;
}

}  // namespace samebits::cuda::sm90
