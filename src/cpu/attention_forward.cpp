// CPU backend: attention forward (docs/numerics.md, "Online softmax inside
// one split", "Split merge", "Output").
//
// Work items are (sequence, query head, tile of query rows). Inside an item
// the loop order is
//   for each split (ascending):            fresh (m, l, acc) per row
//     for each KV block of the split:      K/V block stays in cache
//       for each row of the tile:          the row's visible keys only
//         t = logits(q . k), softmax_block_step, pv_block_step
//     for each row: merge_split into (M, L, ACC)
// Rows are independent, so the tile height and the threads only change
// speed; every row sees exactly the per-row sequence of the contract.
#include <algorithm>
#include <new>
#include <vector>

#include "core/backend.h"
#include "cpu/attention_cpu.h"
#include "cpu/numerics.h"
#include "cpu/tensor_access.h"
#include "cpu/thread_pool.h"
#include "samebits/config.h"

// f32x8 values never cross a non-inlined call; only the clones see AVX.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace samebits::cpu {
namespace {

struct ForwardContext {
  const sb_attention_params* p;
  const AttnGeometry* g;
  const WideTensor* k;  // per (sequence, kv head), keys contiguous
  const WideTensor* v;
  LogitParams lp;
  int block, split, group;
};

struct ForwardTask {
  int b, h, r0, r1;
};

// Per-thread scratch of one tile (reused across items).
struct TileScratch {
  std::vector<float> q, acc_s, ACC, out, m_s, l_s, M, L, t, rp;
  std::vector<KeyRange> vis;
  std::vector<char> in_split;
  void resize(int rows, int d, int block) {
    q.resize(size_t(rows) * d);
    acc_s.resize(size_t(rows) * d);
    ACC.resize(size_t(rows) * d);
    out.resize(d);
    m_s.resize(rows);
    l_s.resize(rows);
    M.resize(rows);
    L.resize(rows);
    t.resize(size_t(block) + 8);
    rp.resize(size_t(block) + 8);
    vis.resize(rows);
    in_split.resize(rows);
  }
};

__attribute__((target_clones("avx2", "default")))
void forward_tile(const ForwardContext& c, const ForwardTask& task, TileScratch& s) {
  const sb_attention_params& p = *c.p;
  const int d = p.head_dim, b = task.b, h = task.h, kvh = task.h / c.group;
  const int rows = task.r1 - task.r0;
  const int Lq = c.g->seqlen_q(b), Lk = c.g->seqlen_k(b);
  s.resize(rows, d, c.block);

  int kmin = Lk, kmax = 0;
  for (int r = 0; r < rows; ++r) {
    const int64_t i = task.r0 + r;
    widen_row(p.dtype, p.q.data, c.g->q_elem(p.q, b, i, h), d, &s.q[size_t(r) * d]);
    s.vis[r] = visible_keys(i, Lq, Lk, p.window_left, p.window_right);
    if (s.vis[r].lo < s.vis[r].hi) {
      kmin = std::min(kmin, s.vis[r].lo);
      kmax = std::max(kmax, s.vis[r].hi);
    }
    s.M[r] = -kInf;
    s.L[r] = 0.0f;
    std::fill_n(&s.ACC[size_t(r) * d], d, 0.0f);
  }

  const float* kbase = c.k->row(b, kvh, 0);
  const float* vbase = c.v->row(b, kvh, 0);
  // Splits and blocks are aligned at key 0; fully invisible ones are skipped
  // (an exact identity, numerics.md "Visibility").
  for (int s0 = kmin < kmax ? (kmin / c.split) * c.split : kmax; s0 < kmax; s0 += c.split) {
    const int s1 = std::min(s0 + c.split, Lk);
    for (int r = 0; r < rows; ++r) {
      s.in_split[r] = s.vis[r].lo < s1 && s.vis[r].hi > s0 && s.vis[r].lo < s.vis[r].hi;
      if (!s.in_split[r]) continue;
      s.m_s[r] = -kInf;  // fresh state at every split
      s.l_s[r] = 0.0f;
      std::fill_n(&s.acc_s[size_t(r) * d], d, 0.0f);
    }
    const int first_block = std::max(s0, (kmin / c.block) * c.block);
    for (int b0 = first_block; b0 < std::min(s1, kmax); b0 += c.block) {
      const int b1 = std::min(b0 + c.block, s1);
      for (int r = 0; r < rows; ++r) {
        const int j0 = std::max(s.vis[r].lo, b0), j1 = std::min(s.vis[r].hi, b1);
        if (j0 >= j1) continue;
        const int n = j1 - j0;
        // gemm q_r * K[j0:j1]^T -> S, then S -> base-2 logits t
        dot_rows(&s.q[size_t(r) * d], kbase + int64_t(j0) * d, d, n, d, s.t.data());
        logits_in_place(c.lp, s.t.data(), n);
        // online softmax: t -> unrounded p, (m, l) updated
        const float alpha = softmax_block_step(s.m_s[r], s.l_s[r], s.t.data(), n);
        // P operand rounded to the input dtype, then acc = acc*alpha + P*V
        std::copy_n(s.t.data(), n, s.rp.data());
        round_in_place(p.dtype, s.rp.data(), n);
        pv_block_step(&s.acc_s[size_t(r) * d], alpha, s.rp.data(), vbase + int64_t(j0) * d, d, n, d);
      }
    }
    for (int r = 0; r < rows; ++r)
      if (s.in_split[r])
        merge_split(s.M[r], s.L[r], &s.ACC[size_t(r) * d], s.m_s[r], s.l_s[r],
                    &s.acc_s[size_t(r) * d], d);
  }

  for (int r = 0; r < rows; ++r) {
    const int64_t i = task.r0 + r;
    const float lse = finalize_row(s.M[r], s.L[r], &s.ACC[size_t(r) * d], s.out.data(), d);
    narrow_row(p.dtype, p.out.data, c.g->q_elem(p.out, b, i, h), d, s.out.data());
    static_cast<float*>(p.lse.data)[c.g->q_elem(p.lse, b, i, h)] = lse;
  }
}

}  // namespace

sb_status attention_forward_with_structure(const sb_attention_params& p, int32_t block,
                                           int32_t split) {
  if (block <= 0 || split <= 0 || split % block != 0)
    return fail(SB_INVALID_ARGUMENT, "the split size must be a positive multiple of the KV block");
  AttnGeometry g;
  if (sb_status st = make_geometry(p, &g); st != SB_OK) return st;
  try {
    WideTensor k, v;
    widen_all(g, p.k, true, p.num_heads_k, &k);
    widen_all(g, p.v, true, p.num_heads_k, &v);

    ForwardContext c{&p, &g, &k, &v, make_logit_params(p.softmax_scale, p.softcap), block, split,
                     p.num_heads / p.num_heads_k};
    std::vector<ForwardTask> tasks;
    for (int b = 0; b < p.batch; ++b) {
      const int Lq = g.seqlen_q(b);
      for (int h = 0; h < p.num_heads; ++h)
        for (int r0 = 0; r0 < Lq; r0 += kCpuQueryRowsPerTask)
          tasks.push_back({b, h, r0, std::min(Lq, r0 + kCpuQueryRowsPerTask)});
    }
    // Heaviest tiles (most keys, latest rows) first for a better balance.
    std::stable_sort(tasks.begin(), tasks.end(), [](const ForwardTask& a, const ForwardTask& b) {
      return a.r0 > b.r0;
    });
    ThreadPool::get().parallel_for(int64_t(tasks.size()), [&](int64_t t) {
      thread_local TileScratch scratch;
      forward_tile(c, tasks[size_t(t)], scratch);
    });
  } catch (const std::bad_alloc&) {
    return fail(SB_INTERNAL, "attention_forward (cpu): out of memory");
  } catch (const std::exception& e) {
    return fail(SB_INTERNAL, std::string("attention_forward (cpu): ") + e.what());
  }
  return SB_OK;
}

sb_status attention_forward(const sb_attention_params& p) {
  const int32_t block = kv_block_size(kArchCpu, p.head_dim, p.dtype);
  const int32_t split = split_size(kArchCpu, p.head_dim, p.dtype);
  if (block == 0 || split == 0)
    return fail(SB_UNSUPPORTED, "attention_forward (cpu): no tile configuration for head_dim " +
                                    std::to_string(p.head_dim));
  return attention_forward_with_structure(p, block, split);
}

}  // namespace samebits::cpu
