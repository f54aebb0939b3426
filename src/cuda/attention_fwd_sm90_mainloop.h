// sm90 attention forward, mainloop by role.
//
// Producer (warp 0 of warpgroup 0; its other warps exit at once): loads the Q tile and, for every visible
// KV block of the work item in ascending order, the K and V blocks into a
// ring of kStages stages. Full tiles go through TMA; a tile that crosses the
// end of its sequence is loaded by hand with the rows past the end zeroed,
// so no key outside the sequence is ever multiplied (numerics.md
// "Visibility") and nothing past a packed tensor is read. In a dense batch
// (no seqused_k below the stored keys) the tensor map ends where the
// sequence does, and TMA's own zero fill gives that tile the same rows.
//
// Consumer warpgroups (1..kConsumerWarpgroups): 64 query rows each. Per KV
// block: S = Q K^T (wgmma, k16 chain ascending over d), logits and mask, the
// online-softmax update of numerics.md, P rounded to the input dtype, then
// O += P V (wgmma, k16 chain ascending over the block's keys).
//
// Barriers (all in shared memory, see FwdConfig::kNumBarriers):
//   q_full        producer -> consumers: Q tile landed.       1 arrival (+tx)
//   q_empty       consumers -> producer: every consumer warp finished its
//                 last S = Q K^T of the item, Q may be overwritten.
//                                                             4 * consumer WGs
//   k_full[s]     producer -> consumers: K block in stage s.  1 arrival (+tx)
//   v_full[s]     producer -> consumers: V block in stage s.  1 arrival (+tx)
//   k_empty[s]    consumers -> producer: every consumer warp finished
//                 S = Q K^T on stage s, K may be overwritten. 4 * consumer WGs
//   v_empty[s]    consumers -> producer: every consumer warp finished
//                 O += P V on stage s, V may be overwritten.  4 * consumer WGs
//   tail          TMA -> producer: a packed batch's last V block landed
//                 (the producer zeroes its rows past lk, then signals
//                 v_full itself).                            1 arrival (+tx)
// K is released as soon as its S is computed, V one block later (the
// consumer overlaps O += P_{n-1} V_{n-1} with S_n = Q K_n^T and the softmax
// of S_n), so the next K load starts early even with two stages.
// Both sides walk the same work items and blocks, so a running block
// counter gives each stage's index and phase parity on both sides.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include "cuda/attention_fwd_sm90_mask.h"
#include "cuda/attention_fwd_sm90_params.h"
#include "cuda/attention_fwd_sm90_scheduler.h"
#include "cuda/sm90_primitives.h"
#include "cuda/wgmma_ops_sm90.h"

namespace samebits::cuda::sm90 {

// Views of the dynamic shared memory (offsets from FwdConfig).
template <class Cfg>
struct SharedStorage {
  uint8_t* base;  // 1024-byte aligned
  __device__ uint8_t* q() const { return base + Cfg::kOffQ; }
  __device__ uint8_t* k(int s) const { return base + Cfg::kOffK + s * Cfg::kKVBytes; }
  __device__ uint8_t* v(int s) const { return base + Cfg::kOffV + s * Cfg::kKVBytes; }
  __device__ float* fold(int wg) const {
    return reinterpret_cast<float*>(base + Cfg::kOffFold) + wg * 64 * Cfg::kHeadDim;
  }
  __device__ uint64_t* bars() const { return reinterpret_cast<uint64_t*>(base + Cfg::kOffBarriers); }
  __device__ uint64_t* q_full() const { return bars(); }
  __device__ uint64_t* q_empty() const { return bars() + 1; }
  __device__ uint64_t* k_full(int s) const { return bars() + 2 + s; }
  __device__ uint64_t* v_full(int s) const { return bars() + 2 + Cfg::kStages + s; }
  __device__ uint64_t* k_empty(int s) const { return bars() + 2 + 2 * Cfg::kStages + s; }
  __device__ uint64_t* v_empty(int s) const { return bars() + 2 + 3 * Cfg::kStages + s; }
  __device__ uint64_t* tail() const { return bars() + 2 + 4 * Cfg::kStages; }
};

// The visible KV blocks of a work item: [n_lo, n_hi], empty when n_hi < n_lo.
template <class Cfg>
struct BlockRange {
  int m0, m_last;  // first and last query row of the tile inside the sequence
  int n_lo, n_hi;
  __device__ BlockRange(const WorkItem& w, const Visibility& vis) {
    m0 = w.m_block * Cfg::kBlockM;
    m_last = min(m0 + Cfg::kBlockM, w.lq) - 1;
    int lo, hi;
    vis.key_range(m0, m_last, lo, hi);
    if (w.lk <= 0 || hi < lo) {
      n_lo = 0;
      n_hi = -1;
    } else {
      n_lo = lo / Cfg::kBlockN;
      n_hi = hi / Cfg::kBlockN;
    }
  }
};

// ------------------------------------------------------------------ producer
template <class Cfg>
struct Producer {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;

  // A tile that crosses lq or lk is loaded by hand: load_tile<kRows, d, 32>
  // (sm90_primitives.h) by the producer warp, rows past the end zero, every
  // 16-byte unit by cp.async; the caller commits the group and signals once
  // it landed (signal_after_hand_load).

  // Signals `bar` after a hand load, once this lane's cp.async groups but
  // the newest kPending landed: every writer fences its writes toward the
  // async proxy (wgmma reads them), the warp meets, one lane arrives.
  template <int kPending = 0>
  __device__ static void signal_after_hand_load(uint64_t* bar, int tid) {
    cp_async_wait<kPending>();
    fence_proxy_async_smem();
    __syncwarp();
    if (tid == 0) mbar_arrive(bar);
  }

  __device__ static void run(const AttentionFwdParams& p, const SharedStorage<Cfg>& smem) {
    const int tid = threadIdx.x % 32;
    if (tid == 0) {
      prefetch_tensor_map(&p.tma_q);
      prefetch_tensor_map(&p.tma_k);
      prefetch_tensor_map(&p.tma_v);
    }
    TileScheduler<Cfg::kBlockM> sched(p);
    WorkItem w;
    uint32_t tile_iter = 0;  // work items done: parity of q_empty
    uint32_t block_iter = 0; // KV blocks done: stage and parity of k/v_empty
    uint32_t tail_iter = 0;  // V blocks read through the tail barrier: its parity
    for (; sched.next(w); ++tile_iter) {
      const Visibility vis{w.lq, w.lk, p.window_left, p.window_right};
      const BlockRange<Cfg> range(w, vis);
      const int hk = w.h / p.head_group;

      // Q tile (kBlockM x d): wait until every consumer warp is done with
      // the previous item's Q.
      mbar_wait(smem.q_empty(), (tile_iter & 1) ^ 1);
      // A tile that crosses lq goes through TMA where the rows past lq are
      // zero-filled (dense) or are rows in use of a packed neighbour: a
      // query row's logits, softmax and output depend on that row alone,
      // and rows >= lq are never stored, so what they hold reaches no
      // stored value.
      if (range.m0 + Cfg::kBlockM <= w.lq || w.q_tail_tma ||
          w.q_row0 + range.m0 + Cfg::kBlockM <= w.q_end) {
        if (tid == 0) {
          mbar_arrive_expect_tx(smem.q_full(), Cfg::kQBytes);
#pragma unroll
          for (int c = 0; c < Cfg::kChunks; ++c)
            tma_load_4d(smem.q() + c * Cfg::kBlockM * Cfg::kRowBytes, &p.tma_q, smem.q_full(),
                        c * Cfg::kChunk, w.q_row0 + range.m0, w.h, w.q_batch);
        }
      } else {
        const Elem* src = static_cast<const Elem*>(p.q) + w.q_batch * p.q_batch_stride +
                          (int64_t)(w.q_row0 + range.m0) * p.q_row_stride + w.h * p.q_head_stride;
        load_tile<Cfg::kBlockM, Cfg::kHeadDim, 32>(smem.q(), src, p.q_row_stride, w.lq - range.m0, tid);
        cp_async_commit();
        signal_after_hand_load(smem.q_full(), tid);
      }

      // K, V blocks ascending; a stage's K (V) is reloaded once every
      // consumer warp released it (k_empty, v_empty).
      for (int n = range.n_lo; n <= range.n_hi; ++n, ++block_iter) {
        const int s = block_iter % Cfg::kStages;
        const uint32_t parity = (block_iter / Cfg::kStages) & 1;
        const int k0 = n * Cfg::kBlockN;
        if (k0 + Cfg::kBlockN <= w.lk || w.k_tail_tma) {
          mbar_wait(smem.k_empty(s), parity ^ 1);
          if (tid == 0) {
            mbar_arrive_expect_tx(smem.k_full(s), Cfg::kKVBytes);
#pragma unroll
            for (int c = 0; c < Cfg::kChunks; ++c)
              tma_load_4d(smem.k(s) + c * Cfg::kBlockN * Cfg::kRowBytes, &p.tma_k, smem.k_full(s),
                          c * Cfg::kChunk, w.k_row0 + k0, hk, w.k_batch);
          }
          mbar_wait(smem.v_empty(s), parity ^ 1);
          if (tid == 0) {
            mbar_arrive_expect_tx(smem.v_full(s), Cfg::kKVBytes);
#pragma unroll
            for (int c = 0; c < Cfg::kChunks; ++c)
              tma_load_4d(smem.v(s) + c * Cfg::kBlockN * Cfg::kRowBytes, &p.tma_v, smem.v_full(s),
                          c * Cfg::kChunk, w.k_row0 + k0, hk, w.k_batch);
          }
        } else if (w.k_row0 + k0 + Cfg::kBlockN <= w.k_end) {
          // A packed batch's last block whose rows past lk (a neighbour's,
          // or keys past seqused_k) are rows in use: K by TMA as it is (the
          // logits of keys >= lk are replaced by -inf, so what those rows
          // hold reaches no sum), V by TMA onto the tail barrier, then its
          // rows >= lk zeroed before the block is signalled (P = 0 there,
          // and 0 * a NaN is not 0).
          mbar_wait(smem.k_empty(s), parity ^ 1);
          if (tid == 0) {
            mbar_arrive_expect_tx(smem.k_full(s), Cfg::kKVBytes);
#pragma unroll
            for (int c = 0; c < Cfg::kChunks; ++c)
              tma_load_4d(smem.k(s) + c * Cfg::kBlockN * Cfg::kRowBytes, &p.tma_k, smem.k_full(s),
                          c * Cfg::kChunk, w.k_row0 + k0, hk, w.k_batch);
          }
          mbar_wait(smem.v_empty(s), parity ^ 1);
          if (tid == 0) {
            mbar_arrive_expect_tx(smem.tail(), Cfg::kKVBytes);
#pragma unroll
            for (int c = 0; c < Cfg::kChunks; ++c)
              tma_load_4d(smem.v(s) + c * Cfg::kBlockN * Cfg::kRowBytes, &p.tma_v, smem.tail(),
                          c * Cfg::kChunk, w.k_row0 + k0, hk, w.k_batch);
          }
          mbar_wait(smem.tail(), tail_iter++ & 1);
          zero_tile_rows<Cfg::kBlockN, Cfg::kHeadDim, 32>(smem.v(s), w.lk - k0, tid);
          fence_proxy_async_smem();
          __syncwarp();
          if (tid == 0) mbar_arrive(smem.v_full(s));
        } else {
          // The last block of the sequence: keys >= lk are zero in shared
          // memory (their logits are masked to -inf as well).
          const int valid = w.lk - k0;
          const Elem* ksrc = static_cast<const Elem*>(p.k) + w.k_batch * p.k_batch_stride +
                             (int64_t)(w.k_row0 + k0) * p.k_row_stride + hk * p.k_head_stride;
          mbar_wait(smem.k_empty(s), parity ^ 1);
          load_tile<Cfg::kBlockN, Cfg::kHeadDim, 32>(smem.k(s), ksrc, p.k_row_stride, valid, tid);
          cp_async_commit();
          const Elem* vsrc = static_cast<const Elem*>(p.v) + w.k_batch * p.v_batch_stride +
                             (int64_t)(w.k_row0 + k0) * p.v_row_stride + hk * p.v_head_stride;
          mbar_wait(smem.v_empty(s), parity ^ 1);
          load_tile<Cfg::kBlockN, Cfg::kHeadDim, 32>(smem.v(s), vsrc, p.v_row_stride, valid, tid);
          cp_async_commit();  // K's and V's copies in flight together
          signal_after_hand_load<1>(smem.k_full(s), tid);
          signal_after_hand_load(smem.v_full(s), tid);
        }
      }
    }
  }
};

// ------------------------------------------------------------------ consumer
// Per-thread slice of the online-softmax state of one split. A thread holds
// 2 rows (h = 0, 1: rows g and g + 8 of its warp's 16) and, of each row, the
// columns 8c + 2q + {0, 1} (q = lane % 4) of every 8-column chunk c.
template <class Cfg>
struct SplitState {
  static constexpr int kAccRegs = Cfg::kHeadDim / 2;  // O slice: 64 x d f32 over 128 threads
  float m[2], l[2];
  float acc[kAccRegs];

  __device__ __forceinline__ void reset() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[h] = -CUDART_INF_F;
      l[h] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.f;
  }
};

template <class Cfg>
struct Consumer {
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBn = Cfg::kBlockN;
  static constexpr int kSRegs = kBn / 2;  // S slice: 64 x Bn f32 over 128 threads

  // S (64 x Bn) = Q_wg (64 x d) * K^T (d x Bn): d / 16 wgmmas, k ascending.
  // Both operands K-major in 128B-swizzled chunks: k step ks reads chunk
  // ks / 4 at byte offset (ks % 4) * 32. Issued and committed as one wgmma
  // group; the caller waits.
  __device__ static void issue_qk(float (&s)[kSRegs], uint32_t q_addr, uint32_t k_addr) {
    // Descriptors are built once and advanced by compile-time byte offsets
    // (in 16-byte units in the low field): warp-uniform values that stay in
    // uniform registers, so the wgmmas of the group are not serialized.
    const uint64_t dq = make_smem_desc_sw128(q_addr, 16, 1024);
    const uint64_t dk = make_smem_desc_sw128(k_addr, 16, 1024);
    wgmma_fence();
    // k step 0 overwrites S (its old contents are not an operand), the
    // rest accumulate.
    wgmma_ss_zero<kBn, Cfg::kBf16>(s, dq, dk);
#pragma unroll
    for (int ks = 1; ks < kD / 16; ++ks) {
      const uint32_t chunk = ks / 4, step = (ks % 4) * 32;
      wgmma_ss<kBn, Cfg::kBf16>(s, dq + ((chunk * Cfg::kBlockM * Cfg::kRowBytes + step) >> 4),
                                dk + ((chunk * kBn * Cfg::kRowBytes + step) >> 4), 1);
    }
    wgmma_commit();
  }

  // O (64 x d) += P (64 x Bn, registers) * V (Bn x d): Bn / 16 wgmmas, keys
  // ascending. V is N-major (d contiguous): a k step of 16 keys is two
  // 8-row atoms (sbo 1024), the 64-column chunks are kBn rows apart (lbo).
  // Issued and committed as one wgmma group; the caller waits.
  __device__ static void issue_pv(float (&acc)[kD / 2], const uint32_t (&pf)[kBn / 16][4],
                                  uint32_t v_addr) {
    const uint64_t dv = make_smem_desc_sw128(v_addr, kBn * Cfg::kRowBytes, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBn / 16; ++kk)
      wgmma_rs<kD, Cfg::kBf16>(acc, pf[kk], dv + ((kk * 16 * Cfg::kRowBytes) >> 4), 1);
    wgmma_commit();
  }

  // acc *= alpha (row h of register 4c + 2h + j), after the previous P V.
  __device__ static void rescale(float (&acc)[kD / 2], const float (&alpha)[2]) {
#pragma unroll
    for (int c = 0; c < kD / 8; ++c)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc[4 * c + 2 * h] = __fmul_rn(acc[4 * c + 2 * h], alpha[h]);
        acc[4 * c + 2 * h + 1] = __fmul_rn(acc[4 * c + 2 * h + 1], alpha[h]);
      }
  }

  // The online-softmax update of one KV block (numerics.md, sm90 exponent
  // form), in place: s -> x (raw scores, or logits t when ScoreMod is not
  // raw; -inf where invisible), then m, l and P (f32, left in s); returns
  // alpha, the factor the caller applies to acc (rescale) before adding
  // P V. pack_p rounds P into the wgmma A operand.
  // Row reductions: each thread over its columns in ascending order, then
  // the fixed shuffle tree (xor 1, then xor 2) over the row's 4 threads.
  __device__ static void softmax_update(float (&s)[kSRegs], float (&m)[2], float (&l)[2],
                                        float (&alpha_out)[2], const ScoreMod& score,
                                        const Visibility& vis, bool masked, int row_base, int k0,
                                        int q4) {
    // One uniform branch around each loop, so the common path carries no
    // predicated-off softcap or mask instructions.
    if (score.softcap) {
#pragma unroll
      for (int i = 0; i < kSRegs; ++i) s[i] = score.capped(s[i]);
    } else if (!score.raw) {
#pragma unroll
      for (int i = 0; i < kSRegs; ++i) s[i] = score.scaled(s[i]);
    }
    const float k = score.exp_scale;  // x * k is the logit t
    if (masked) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int lo, hi;
        vis.row_bounds(row_base + 8 * h, lo, hi);
        lo -= k0 + 2 * q4;  // bounds relative to this thread's first column
        hi -= k0 + 2 * q4;
#pragma unroll
        for (int c = 0; c < kBn / 8; ++c)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int col = 8 * c + j;
            if (col < lo || col > hi) s[4 * c + 2 * h + j] = -CUDART_INF_F;
          }
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -CUDART_INF_F;
#pragma unroll
      for (int c = 0; c < kBn / 8; ++c) mx = fmaxf(mx, fmaxf(s[4 * c + 2 * h], s[4 * c + 2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // Block max of t: round(max(x) * k) (exact when k = 1).
      const float m_new = fmaxf(m[h], __fmul_rn(mx, k));
      const float ms = m_new == -CUDART_INF_F ? 0.f : m_new;
      const float alpha = exp2_approx(__fsub_rn(m[h], ms));
      const float neg_ms = -ms;
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < kBn / 8; ++c)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          // p = exp2(fma(x, k, -m)): one FFMA, one rounding
          const float pj = exp2_approx(__fmaf_rn(s[4 * c + 2 * h + j], k, neg_ms));
          s[4 * c + 2 * h + j] = pj;
          sum = __fadd_rn(sum, pj);
        }
      sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
      sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 2));
      l[h] = __fadd_rn(__fmul_rn(l[h], alpha), sum);
      m[h] = m_new;
      alpha_out[h] = alpha;
    }
  }

  // round(P) as the A operand of m64nNk16: keys 16kk..16kk+15 are S chunks 2kk
  // and 2kk+1; a0/a1 rows g/g+8 of the first chunk, a2/a3 of the second.
  // Runs only once no wgmma reads pf any more (ptxas serializes all wgmmas
  // of a kernel when an operand register is written while one is in flight).
  __device__ static void pack_p(const float (&s)[kSRegs], uint32_t (&pf)[kBn / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < kBn / 16; ++kk) {
      pf[kk][0] = pack2<Cfg::kBf16>(s[8 * kk + 0], s[8 * kk + 1]);
      pf[kk][1] = pack2<Cfg::kBf16>(s[8 * kk + 2], s[8 * kk + 3]);
      pf[kk][2] = pack2<Cfg::kBf16>(s[8 * kk + 4], s[8 * kk + 5]);
      pf[kk][3] = pack2<Cfg::kBf16>(s[8 * kk + 6], s[8 * kk + 7]);
    }
  }
};

}  // namespace samebits::cuda::sm90
