// CPU backend: addressing of the strided, varlen and paged views of
// sb_attention_params (include/samebits/samebits.h), validation of what the
// host can check, and widening of whole sequences to f32.
//
// Keys are always addressed by their logical position j in the sequence, so
// page size and page placement cannot reach the arithmetic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/backend.h"
#include "cpu/numerics.h"
#include "cpu/thread_pool.h"
#include "samebits/samebits.h"

namespace samebits::cpu {

// Loads d elements of dtype `dt` at element offset `off` of `base` as f32.
inline void widen_row(sb_dtype dt, const void* base, int64_t off, int d, float* dst) {
  switch (dt) {
    case SB_F32: std::memcpy(dst, static_cast<const float*>(base) + off, sizeof(float) * d); break;
    case SB_BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(base) + off;
      for (int c = 0; c < d; ++c) dst[c] = bf16_to_f32(s[c]);
      break;
    }
    case SB_F16: {
      const uint16_t* s = static_cast<const uint16_t*>(base) + off;
      for (int c = 0; c < d; ++c) dst[c] = f16_to_f32(s[c]);
      break;
    }
  }
}

// Stores d f32 values, rounded to nearest even, as dtype `dt`.
inline void narrow_row(sb_dtype dt, void* base, int64_t off, int d, const float* src) {
  switch (dt) {
    case SB_F32: std::memcpy(static_cast<float*>(base) + off, src, sizeof(float) * d); break;
    case SB_BF16: {
      uint16_t* s = static_cast<uint16_t*>(base) + off;
      for (int c = 0; c < d; ++c) s[c] = f32_to_bf16(src[c]);
      break;
    }
    case SB_F16: {
      uint16_t* s = static_cast<uint16_t*>(base) + off;
      for (int c = 0; c < d; ++c) s[c] = f32_to_f16(src[c]);
      break;
    }
  }
}

// The per-sequence geometry of an attention call.
struct AttnGeometry {
  const sb_attention_params* p = nullptr;
  bool varlen_q = false, varlen_k = false, paged = false;

  int seqlen_q(int b) const { return varlen_q ? p->cu_seqlens_q[b + 1] - p->cu_seqlens_q[b] : p->seqlen_q; }
  int seqlen_k(int b) const {
    if (p->seqused_k) return p->seqused_k[b];
    return varlen_k ? p->cu_seqlens_k[b + 1] - p->cu_seqlens_k[b] : p->seqlen_k;
  }
  // Element offset of query-side row i (q, out, dout, dq, and lse, whose
  // "row" is the packed token index in varlen mode) of sequence b, head h.
  int64_t q_elem(const sb_view& v, int b, int64_t i, int h) const {
    if (varlen_q) return (int64_t(p->cu_seqlens_q[b]) + i) * v.row_stride + int64_t(h) * v.head_stride;
    return int64_t(b) * v.batch_stride + i * v.row_stride + int64_t(h) * v.head_stride;
  }
  // Element offset of logical key j of sequence b, KV head g (k, v, dk, dv).
  int64_t k_elem(const sb_view& v, int b, int64_t j, int g) const {
    if (paged) {
      const int64_t page = p->block_table[int64_t(b) * p->block_table_batch_stride + j / p->page_size];
      return page * v.batch_stride + (j % p->page_size) * v.row_stride + int64_t(g) * v.head_stride;
    }
    if (varlen_k) return (int64_t(p->cu_seqlens_k[b]) + j) * v.row_stride + int64_t(g) * v.head_stride;
    return int64_t(b) * v.batch_stride + j * v.row_stride + int64_t(g) * v.head_stride;
  }
};

inline sb_status check_cu_seqlens(const int32_t* cu, int batch, const char* name) {
  if (cu[0] < 0) return fail(SB_INVALID_ARGUMENT, std::string(name) + "[0] must be >= 0");
  for (int b = 0; b < batch; ++b)
    if (cu[b + 1] < cu[b])
      return fail(SB_INVALID_ARGUMENT, std::string(name) + " must be non-decreasing, but " + name +
                                           "[" + std::to_string(b + 1) + "] < " + name + "[" +
                                           std::to_string(b) + "]");
  return SB_OK;
}

// Builds the geometry and checks what the host can check: monotone
// cu_seqlens, non-negative lengths, seqused_k within the stored keys,
// non-negative block_table entries for every page a sequence uses. (That a
// page index is below num_pages cannot be known here; the Python layer
// checks it.)
inline sb_status make_geometry(const sb_attention_params& p, AttnGeometry* g) {
  g->p = &p;
  g->varlen_q = p.cu_seqlens_q != nullptr;
  g->varlen_k = p.cu_seqlens_k != nullptr && p.block_table == nullptr;
  g->paged = p.block_table != nullptr;
  if (g->varlen_q)
    if (sb_status s = check_cu_seqlens(p.cu_seqlens_q, p.batch, "cu_seqlens_q"); s != SB_OK) return s;
  if (g->varlen_k)
    if (sb_status s = check_cu_seqlens(p.cu_seqlens_k, p.batch, "cu_seqlens_k"); s != SB_OK) return s;
  if (!g->varlen_q && p.seqlen_q < 0) return fail(SB_INVALID_ARGUMENT, "seqlen_q must be >= 0");
  if (!g->varlen_k && !g->paged && p.seqlen_k < 0)
    return fail(SB_INVALID_ARGUMENT, "seqlen_k must be >= 0");
  if (p.seqused_k) {
    for (int b = 0; b < p.batch; ++b) {
      const int32_t u = p.seqused_k[b];
      const std::string at = "seqused_k[" + std::to_string(b) + "] = " + std::to_string(u);
      if (u < 0) return fail(SB_INVALID_ARGUMENT, at + " is negative");
      if (g->varlen_k && u > p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b])
        return fail(SB_INVALID_ARGUMENT, at + " exceeds the sequence's keys in cu_seqlens_k");
      if (!g->varlen_k && !g->paged && u > p.seqlen_k)
        return fail(SB_INVALID_ARGUMENT, at + " exceeds seqlen_k (the cache capacity)");
    }
  }
  if (g->paged) {
    for (int b = 0; b < p.batch; ++b) {
      const int64_t pages = (int64_t(g->seqlen_k(b)) + p.page_size - 1) / p.page_size;
      for (int64_t i = 0; i < pages; ++i) {
        const int32_t e = p.block_table[int64_t(b) * p.block_table_batch_stride + i];
        if (e < 0)
          return fail(SB_INVALID_ARGUMENT, "block_table[" + std::to_string(b) + "][" +
                                               std::to_string(i) + "] = " + std::to_string(e) +
                                               " is negative");
      }
    }
  }
  return SB_OK;
}

// Rows of a per-(sequence, head) tensor widened to f32 and stored
// contiguously: row r of (b, h) at data + base[b] + (h * len[b] + r) * d.
struct WideTensor {
  std::vector<float> data;
  std::vector<int64_t> base;
  std::vector<int> len;
  int d = 0;
  const float* row(int b, int h, int64_t r) const {
    return data.data() + base[b] + (int64_t(h) * len[b] + r) * d;
  }
  float* row(int b, int h, int64_t r) { return data.data() + base[b] + (int64_t(h) * len[b] + r) * d; }
};

// Widens a key-side (is_key) or query-side view of all sequences, in
// parallel over (sequence, head). Pure copies: thread count cannot matter.
inline void widen_all(const AttnGeometry& g, const sb_view& v, bool is_key, int heads, WideTensor* w) {
  const sb_attention_params& p = *g.p;
  w->d = p.head_dim;
  w->base.assign(p.batch, 0);
  w->len.assign(p.batch, 0);
  int64_t total = 0;
  for (int b = 0; b < p.batch; ++b) {
    w->len[b] = is_key ? g.seqlen_k(b) : g.seqlen_q(b);
    w->base[b] = total;
    total += int64_t(w->len[b]) * heads * p.head_dim;
  }
  w->data.resize(size_t(total));
  ThreadPool::get().parallel_for(int64_t(p.batch) * heads, [&](int64_t task) {
    const int b = int(task / heads), h = int(task % heads);
    for (int r = 0; r < w->len[b]; ++r) {
      const int64_t off = is_key ? g.k_elem(v, b, r, h) : g.q_elem(v, b, r, h);
      widen_row(p.dtype, v.data, off, p.head_dim, w->row(b, h, r));
    }
  });
}

// The keys [lo, hi) visible to query row i of a sequence with Lq queries and
// Lk keys (docs/numerics.md "Visibility"); lo == hi when none is.
struct KeyRange {
  int lo, hi;
};
inline KeyRange visible_keys(int64_t i, int Lq, int Lk, int window_left, int window_right) {
  const int64_t pos = i + Lk - Lq;
  int64_t lo = window_left >= 0 ? pos - window_left : 0;
  int64_t hi = window_right >= 0 ? pos + window_right + 1 : Lk;
  lo = std::max<int64_t>(lo, 0);
  hi = std::min<int64_t>(hi, Lk);
  if (hi < lo) hi = lo;
  return KeyRange{int(lo), int(hi)};
}

}  // namespace samebits::cpu
