// CPU backend: attention backward (docs/numerics.md, "Backward").
//
// Work unit: one (sequence b, KV head g). Its dk/dv accumulators (one f32 per
// output element) live for the whole unit. The unit walks
//   for each query head h of g's group (ascending):
//     for each chunk of query rows (ascending):
//       phase A, per row i (independent):  recompute P_ij, dP_ij, dS_ij, G_ij
//         for the row's visible keys; store round(P), round(G) in the chunk
//         matrix; dq_i = round(scale * sum_j round(G_ij) k_j), keys ascending.
//       phase B, per KV block (independent): for each key j of the block,
//         dv_j += round(P_ij) dout_i and dk_j += round(G_ij) q_i over the
//         chunk's rows i ascending.
//   dk = round(scale * acc_dk), dv = round(acc_dv).
// Every accumulator therefore sees its additions in the documented order;
// phases A and B are parallel over rows / blocks (or, with many units, the
// units are parallel and each runs alone), which cannot move a bit.
#include <algorithm>
#include <new>
#include <vector>

#include "core/backend.h"
#include "cpu/numerics.h"
#include "cpu/tensor_access.h"
#include "cpu/thread_pool.h"
#include "samebits/config.h"

// f32x8 values never cross a non-inlined call; only the clones see AVX.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace samebits::cpu {
namespace {

struct BackwardContext {
  const sb_attention_params* p;
  const AttnGeometry* g;
  const WideTensor *q, *k, *v, *dout;
  const std::vector<float>* D;     // per (b, h, i): dot(dout_i, out_i)
  const std::vector<float>* lse2;  // per (b, h, i): lse_i * log2e
  const std::vector<int64_t>* row_base;  // offset of (b, h=0, i=0) in D / lse2
  WideTensor *dk_acc, *dv_acc;
  LogitParams lp;
  int block, group;
};

struct RowScratch {
  std::vector<float> s, t, hh, dp, acc, out;
};

// Phase A for one query row: P, G of its visible keys into rP/rG (indexed by
// key), then dq.
__attribute__((target_clones("avx2", "default")))
void row_gradients(const BackwardContext& c, int b, int h, int i, KeyRange vis, float* rP, float* rG,
                   RowScratch& s) {
  const sb_attention_params& p = *c.p;
  const int d = p.head_dim, kvh = h / c.group;
  const int n = vis.hi - vis.lo, n8 = (n + 7) & ~7;
  s.s.resize(size_t(n8));
  s.t.resize(size_t(n8));
  s.hh.resize(size_t(n8));
  s.dp.resize(size_t(n8));
  s.acc.assign(size_t(d), 0.0f);
  s.out.resize(size_t(d));
  const int64_t ri = (*c.row_base)[b] + int64_t(h) * c.q->len[b] + i;
  const float lse2 = (*c.lse2)[ri], Di = (*c.D)[ri];
  const float* q = c.q->row(b, h, i);
  const float* dout = c.dout->row(b, h, i);
  const float* k0 = c.k->row(b, kvh, vis.lo);
  const float* v0 = c.v->row(b, kvh, vis.lo);
  if (n > 0) {
    dot_rows(q, k0, d, n, d, s.s.data());      // s_ij = dot(q_i, k_j)
    dot_rows(dout, v0, d, n, d, s.dp.data());  // dP_ij = dot(dout_i, v_j)
    for (int j = 0; j < n; ++j) {              // t_ij exactly as in the forward
      if (c.lp.softcap) {
        s.hh[j] = tanh_f32(s.s[j] * c.lp.pre);
        s.t[j] = s.hh[j] * c.lp.post;
      } else {
        s.t[j] = s.s[j] * c.lp.c;
      }
    }
    for (int j = n; j < n8; ++j) s.t[j] = -kInf;
    const f32x8 l2 = splat8(lse2);
    for (int j = 0; j < n8; j += 8) store8(&s.t[j], exp2_x8(load8(&s.t[j]) - l2));  // P_ij
    float* P = s.t.data();
    float* outP = rP + vis.lo;
    float* outG = rG + vis.lo;
    for (int j = 0; j < n; ++j) {
      const float dS = P[j] * (s.dp[j] - Di);
      outG[j] = c.lp.softcap ? dS * (1.0f - s.hh[j] * s.hh[j]) : dS;
      outP[j] = P[j];
    }
    round_in_place(p.dtype, outP, n);
    round_in_place(p.dtype, outG, n);
    accumulate_rows(s.acc.data(), outG, 1, k0, d, n, d);  // keys ascending
  }
  for (int cc = 0; cc < d; ++cc) s.out[cc] = p.softmax_scale * s.acc[cc];
  narrow_row(p.dtype, p.dq.data, c.g->q_elem(p.dq, b, i, h), d, s.out.data());
}

// Phase B for one KV block [j0, j1) and one chunk of rows [i0, i0 + rows).
__attribute__((target_clones("avx2", "default")))
void block_gradients(const BackwardContext& c, int b, int h, int i0, int rows, const KeyRange* vis,
                     int j0, int j1, const float* rP, const float* rG, int64_t ld) {
  const int d = c.p->head_dim, kvh = h / c.group;
  const float* q0 = c.q->row(b, h, i0);
  const float* dout0 = c.dout->row(b, h, i0);
  // Rows that see key j form a contiguous range [ra, rb) (lo_i and hi_i are
  // non-decreasing in i); both ends only move forward as j grows.
  int ra = 0, rb = 0;
  for (int j = j0; j < j1; ++j) {
    while (ra < rows && vis[ra].hi <= j) ++ra;
    if (rb < ra) rb = ra;
    while (rb < rows && vis[rb].lo <= j) ++rb;
    int a = ra;
    while (a < rb && !(vis[a].lo <= j && j < vis[a].hi)) ++a;  // (empty rows)
    if (a >= rb) continue;
    const int n = rb - a;
    const int64_t w = int64_t(a) * ld + j;
    accumulate_rows(c.dv_acc->row(b, kvh, j), rP + w, ld, dout0 + int64_t(a) * d, d, n, d);
    accumulate_rows(c.dk_acc->row(b, kvh, j), rG + w, ld, q0 + int64_t(a) * d, d, n, d);
  }
}

template <class F>
void for_each(bool parallel, int64_t n, const F& fn) {
  if (parallel) {
    ThreadPool::get().parallel_for(n, [&](int64_t i) { fn(i); });
  } else {
    for (int64_t i = 0; i < n; ++i) fn(i);
  }
}

void backward_unit(const BackwardContext& c, int b, int kvh, bool inner_parallel) {
  const sb_attention_params& p = *c.p;
  const int d = p.head_dim;
  const int Lq = c.g->seqlen_q(b), Lk = c.g->seqlen_k(b);
  // FREE: query rows per chunk (bounds the chunk matrices to ~16 MiB each).
  const int chunk = std::max(8, std::min(128, (1 << 22) / std::max(Lk, 1)));
  std::vector<float> rP(size_t(chunk) * std::max(Lk, 1)), rG(rP.size());
  std::vector<KeyRange> vis(static_cast<size_t>(chunk));
  for (int h = kvh * c.group; h < (kvh + 1) * c.group; ++h) {
    for (int i0 = 0; i0 < Lq; i0 += chunk) {
      const int rows = std::min(chunk, Lq - i0);
      int kmin = Lk, kmax = 0;
      for (int r = 0; r < rows; ++r) {
        vis[r] = visible_keys(i0 + r, Lq, Lk, p.window_left, p.window_right);
        if (vis[r].lo < vis[r].hi) {
          kmin = std::min(kmin, vis[r].lo);
          kmax = std::max(kmax, vis[r].hi);
        }
      }
      for_each(inner_parallel, rows, [&](int64_t r) {
        thread_local RowScratch scratch;
        row_gradients(c, b, h, i0 + int(r), vis[r], &rP[size_t(r) * Lk], &rG[size_t(r) * Lk], scratch);
      });
      if (kmin >= kmax) continue;
      const int first = (kmin / c.block) * c.block;
      const int nblocks = (kmax - first + c.block - 1) / c.block;
      for_each(inner_parallel, nblocks, [&](int64_t bi) {
        const int j0 = std::max(kmin, first + int(bi) * c.block);
        const int j1 = std::min(kmax, first + int(bi + 1) * c.block);
        block_gradients(c, b, h, i0, rows, vis.data(), j0, j1, rP.data(), rG.data(), Lk);
      });
    }
  }
  // dk = round(scale * acc), dv = round(acc); keys past seqused_k get 0.
  const int stored = c.g->varlen_k ? p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b]
                                   : (p.seqused_k ? p.seqlen_k : Lk);
  std::vector<float> tmp(static_cast<size_t>(d));
  for (int j = 0; j < std::max(Lk, stored); ++j) {
    if (j < Lk) {
      const float* a = c.dk_acc->row(b, kvh, j);
      for (int cc = 0; cc < d; ++cc) tmp[cc] = p.softmax_scale * a[cc];
    } else {
      std::fill(tmp.begin(), tmp.end(), 0.0f);
    }
    narrow_row(p.dtype, p.dk.data, c.g->k_elem(p.dk, b, j, kvh), d, tmp.data());
    const float* dv = j < Lk ? c.dv_acc->row(b, kvh, j) : tmp.data();
    narrow_row(p.dtype, p.dv.data, c.g->k_elem(p.dv, b, j, kvh), d, dv);
  }
}

}  // namespace

sb_status attention_backward(const sb_attention_params& p) {
  const int32_t block = kv_block_size(kArchCpu, p.head_dim, p.dtype);
  if (block == 0)
    return fail(SB_UNSUPPORTED, "attention_backward (cpu): no tile configuration for head_dim " +
                                    std::to_string(p.head_dim));
  if (p.block_table != nullptr)
    return fail(SB_INVALID_ARGUMENT, "attention_backward (cpu): block_table (paged KV) is not supported");
  AttnGeometry g;
  if (sb_status st = make_geometry(p, &g); st != SB_OK) return st;
  try {
    const int d = p.head_dim, H = p.num_heads, Hk = p.num_heads_k;
    WideTensor q, k, v, dout, out;
    widen_all(g, p.q, false, H, &q);
    widen_all(g, p.dout, false, H, &dout);
    widen_all(g, p.out, false, H, &out);
    widen_all(g, p.k, true, Hk, &k);
    widen_all(g, p.v, true, Hk, &v);

    // D_i = dot(dout_i, out_i) (out as stored) and lse2_i = lse_i * log2e.
    std::vector<int64_t> row_base(static_cast<size_t>(p.batch));
    int64_t total = 0;
    for (int b = 0; b < p.batch; ++b) {
      row_base[b] = total;
      total += int64_t(q.len[b]) * H;
    }
    std::vector<float> D(static_cast<size_t>(total)), lse2(static_cast<size_t>(total));
    ThreadPool::get().parallel_for(int64_t(p.batch) * H, [&](int64_t t) {
      const int b = int(t / H), h = int(t % H);
      const float* lse = static_cast<const float*>(p.lse.data);
      for (int i = 0; i < q.len[b]; ++i) {
        const int64_t ri = row_base[b] + int64_t(h) * q.len[b] + i;
        D[ri] = dot(dout.row(b, h, i), out.row(b, h, i), d);
        lse2[ri] = lse[g.q_elem(p.lse, b, i, h)] * kLog2e;
      }
    });

    WideTensor dk_acc, dv_acc;  // zero-initialised, laid out like k
    dk_acc.base = dv_acc.base = k.base;
    dk_acc.len = dv_acc.len = k.len;
    dk_acc.d = dv_acc.d = d;
    dk_acc.data.assign(k.data.size(), 0.0f);
    dv_acc.data.assign(k.data.size(), 0.0f);

    BackwardContext c{&p, &g, &q, &k, &v, &dout, &D, &lse2, &row_base, &dk_acc, &dv_acc,
                      make_logit_params(p.softmax_scale, p.softcap), block, H / Hk};
    // Many units: one thread per unit. Few: units in turn, phases parallel.
    const int64_t units = int64_t(p.batch) * Hk;
    const bool units_parallel = units >= 2 * ThreadPool::get().num_threads();
    if (units_parallel) {
      ThreadPool::get().parallel_for(units, [&](int64_t u) { backward_unit(c, int(u / Hk), int(u % Hk), false); });
    } else {
      for (int64_t u = 0; u < units; ++u) backward_unit(c, int(u / Hk), int(u % Hk), true);
    }
  } catch (const std::bad_alloc&) {
    return fail(SB_INTERNAL, "attention_backward (cpu): out of memory");
  } catch (const std::exception& e) {
    return fail(SB_INTERNAL, std::string("attention_backward (cpu): ") + e.what());
  }
  return SB_OK;
}

}  // namespace samebits::cpu
