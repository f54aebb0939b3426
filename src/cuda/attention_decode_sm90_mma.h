// sm90 attention over a KV cache, pass 1: the consumer of a tile of at most
// 16 packed rows (DecodeConfig::kMma; decode with a head group <= 16, or a
// few query rows of a small group) on warp-level mma.sync steps.
//
// Why. Main's consumer computes a 64-row wgmma tile per KV block as two
// waited-for chains of d / 16 and Bn / 16 wgmma steps (~130-160 cycles a
// step); at decode only G of the 64 rows are real, and below one wave of
// CTAs the split's 8-block chain is the kernel's time
// (docs/decode_design.md, "where the small shapes lose"). A dependent
// mma.sync.m16n8k16 step takes ~24 cycles and gives a wgmma k16 step's f32
// result bit for bit, and its fragments are per warp those of wgmma's m64
// tile (a warp's 16 rows), so the forward's element code applies unchanged.
//
// Work of the four consumer warps (w = 0..3), per KV block:
//   S = Q K^T    warp w: keys [w Bn / 4, (w + 1) Bn / 4), Bn / 32 chains
//                of d / 16 steps over d ascending (the forward's order)
//   softmax      the forward's steps per element; the row maximum meets
//                in shared memory (max is exact: any grouping gives the
//                same value); warps 2 and 3 form the row sums from every
//                warp's P in the forward's per-thread column order and
//                shuffle tree, so l is the forward's
//   O += P V     warp w: head-dim columns [w d / 4, (w + 1) d / 4), d / 32
//                chains over the block's keys ascending, P (rounded as the
//                forward's pack_p) read from shared memory
// The row state m and alpha are computed identically by every warp; l of
// rows g is warp 2's, of rows g + 8 warp 3's, published once after the walk.
//
// Shared memory (DecodeConfig kXOff*): written and read between two named
// barriers per block (id 1, the 128 consumer threads). A warp writes block
// n + 1's maxima only after every warp passed block n's second barrier,
// so every read of block n's maxima is done; it writes block n + 1's P
// only after the first barrier of n + 1, so every warp's P V of block n
// and warps 2 and 3's row sums of block n have read its P. One buffer of
// each suffices.
#pragma once

#include "cuda/attention_decode_sm90_kernel.h"

namespace samebits::cuda::sm90 {

// The fold of a tile's splits inside pass 1 (DecodeConfig::kFold): the
// grid's max_splits CTAs of one tile are one cluster, CTA s (cluster rank s)
// computing split s. Each consumer leaves its split's (m, l, acc) of the
// tile's <= 16 rows, f32, in its own shared memory (K's stage 0, which the
// walk no longer reads); after a cluster barrier every thread of the
// cluster takes (row, column pair) items, reads the pair and (m, l) of each
// split the row sees from the CTAs holding them (distributed shared memory)
// and folds them as DecodeCombine::run does: the first split copied, every
// later one folded by fold_weights and the same rounded products and sums,
// splits ascending; then decode_finish_row and the output. The values and
// the operations are the combine's, so the bits are: only where the
// partials wait (shared memory instead of the workspace) and which thread
// folds a column differ, both FREE. A second cluster barrier keeps every
// CTA's shared memory alive until the others have read it.
template <class Cfg>
struct DecodeClusterFold {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kRows = 16;           // the mma consumer's tile
  static constexpr int kStride = kD + 8;     // floats a row; FREE (staggers the writes' banks)
  static constexpr int kOffMl = kRows * kStride;  // (m, l) of row r at [kOffMl + 2 r]
  static constexpr int kPairs = kD / 2;
  static_assert((kOffMl + 2 * kRows) * 4 <= Cfg::kKVBytes, "the partial fits K's stage 0");

  __device__ static float* partial(const DecodeSmem<Cfg>& smem) { return reinterpret_cast<float*>(smem.k(0)); }

  __device__ static void run(const AttentionDecodeParams& p, const DecodeWork& w, const DecodeSmem<Cfg>& smem) {
    __syncwarp();
    cluster_arrive();  // releases this CTA's partial
    cluster_wait();    // every CTA's partial is written and visible
    const uint32_t base = smem_addr(partial(smem));
    const int n = p.max_splits;  // the cluster's CTAs
    const Visibility vis = decode_visibility(p, w.lk);
    const int items = (w.r_end - w.r_begin) * kPairs;
    for (int k = static_cast<int>(cluster_rank()) * Cfg::kThreads + threadIdx.x; k < items;
         k += n * Cfg::kThreads) {
      const int r = k / kPairs, c = 2 * (k % kPairs);
      const int R = w.r_begin + r;
      const int i = p.q_begin + R / p.head_group, head = w.hk * p.head_group + R % p.head_group;
      int lo, hi;
      vis.row_bounds(i, lo, hi);
      float M = -CUDART_INF_F, L = 0.f, a0 = 0.f, a1 = 0.f;
      if (w.lk > 0 && hi >= lo) {  // the combine's condition
        const int s_lo = lo / Cfg::kSplit, s_hi = hi / Cfg::kSplit;
        // Every split's values requested at once, then folded in order.
        float2 x[kFoldMaxSplits], ml[kFoldMaxSplits];
#pragma unroll
        for (int u = 0; u < kFoldMaxSplits; ++u) {
          if (s_lo + u > s_hi) break;
          const uint32_t at = map_to_rank(base, static_cast<uint32_t>(s_lo + u));
          x[u] = ld_shared_cluster_f32x2(at + (r * kStride + c) * 4);
          ml[u] = ld_shared_cluster_f32x2(at + (kOffMl + 2 * r) * 4);
        }
        M = ml[0].x;  // the first split the row sees: copied
        L = ml[0].y;
        a0 = x[0].x;
        a1 = x[0].y;
#pragma unroll
        for (int u = 1; u < kFoldMaxSplits; ++u) {
          if (s_lo + u > s_hi) break;
          float a, b;
          fold_weights(M, L, ml[u].x, ml[u].y, a, b);
          a0 = __fadd_rn(__fmul_rn(a0, a), __fmul_rn(x[u].x, b));
          a1 = __fadd_rn(__fmul_rn(a1, a), __fmul_rn(x[u].y, b));
        }
      }
      float inv, lse;
      decode_finish_row(M, L, inv, lse);
      Elem* o = static_cast<Elem*>(p.out) + w.b * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
                head * p.o_head_stride + c;
      *reinterpret_cast<uint32_t*>(o) = pack2<Cfg::kBf16>(__fmul_rn(a0, inv), __fmul_rn(a1, inv));
      if (c == 0)
        p.lse[w.b * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(i) * p.lse_row_stride] =
            lse;
    }
    __syncwarp();
    cluster_arrive();  // this CTA's reads of the others are done
    cluster_wait();    // no CTA leaves while another may still read its shared memory
  }
};

template <class Cfg>
struct DecodeMmaConsumer {
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBn = Cfg::kBlockN;
  static constexpr int kSC = kBn / 32;  // S n8 chunks of a warp (keys)
  static constexpr int kOC = kD / 32;   // O n8 chunks of a warp (head-dim columns)
  static constexpr int kQK = kD / 16;   // k16 steps of S = Q K^T
  static_assert(Cfg::kMma && Cfg::kQRows == 16, "a 16-row Q tile");
  static_assert(kSC % 2 == 0 && kOC % 2 == 0, "fragments are loaded two n8 chunks at a time");
  static constexpr uint32_t kBarrier = 1;  // named barrier of the 4 consumer warps
  static constexpr uint32_t kThreads = 128;

  // Byte offset of the 16-byte unit holding (row, col .. col + 7) in a
  // 128B-swizzled tile of `rows` rows (the layout TMA and load_rows write):
  // 64-column chunks `rows` rows apart, unit ((col % 64) / 8) ^ (row % 8).
  __device__ static uint32_t swz(int rows, int row, int col) {
    return static_cast<uint32_t>((col / 64) * rows * Cfg::kRowBytes + row * Cfg::kRowBytes +
                                 ((((col % 64) / 8) ^ (row % 8)) << 4));
  }

  struct Exchange {
    float* max;      // [warp][16]
    float* l;        // [16]
    uint4* p;        // [Bn / 16][lane]: the A fragment of keys 16 kk .. 16 kk + 15
    float* p32;      // [Bn / 8][h][j][lane]: P f32 as the forward's thread holds it
  };

  // ---- the element steps of one KV block, shared with the spread
  // schedule (attention_decode_sm90_spread.h), which must compute every
  // value exactly as this consumer does.

  // This thread's rows (h = 0, 1: tile rows g and g + 8, in every warp) and
  // the keys [lo, hi] each sees; a row past the wave sees nothing.
  __device__ static void rows_seen(const AttentionDecodeParams& p, const DecodeWork& w, const Visibility& vis,
                                   int g, int (&lo)[2], int (&hi)[2], bool (&valid)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int R = w.r_begin + g + 8 * h;
      valid[h] = R < w.r_end;
      if (valid[h]) {
        vis.row_bounds(p.q_begin + R / p.head_group, lo[h], hi[h]);
      } else {
        lo[h] = 0;
        hi[h] = -1;
      }
    }
  }

  // Q's A fragments: k step ks is 16 rows x columns 16 ks .. 16 ks + 15.
  __device__ static void load_q(uint32_t (&qa)[kQK][4], uint32_t q_addr, int lane) {
    const int row = lane % 8 + ((lane / 8) % 2) * 8, col = (lane / 16) * 8;
#pragma unroll
    for (int ks = 0; ks < kQK; ++ks) ldmatrix_x4(qa[ks], q_addr + swz(16, row, 16 * ks + col));
  }

  // S = Q K^T for this warp's keys [warp Bn / 4, (warp + 1) Bn / 4) of the
  // block at k_addr: per n8 chunk, d / 16 steps from +0, d ascending.
  __device__ static void scores(float (&sc)[kSC][4], const uint32_t (&qa)[kQK][4], uint32_t k_addr, int warp,
                                int lane) {
#pragma unroll
    for (int c = 0; c < kSC; ++c)
#pragma unroll
      for (int r = 0; r < 4; ++r) sc[c][r] = 0.f;
    const int key = warp * (kBn / 4) + (lane / 16) * 8 + lane % 8, col = ((lane / 8) % 2) * 8;
#pragma unroll
    for (int ks = 0; ks < kQK; ++ks)
#pragma unroll
      for (int c = 0; c < kSC; c += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, k_addr + swz(kBn, key + 8 * c, 16 * ks + col));
        mma_m16n8k16<Cfg::kBf16>(sc[c], qa[ks], b[0], b[1]);
        mma_m16n8k16<Cfg::kBf16>(sc[c + 1], qa[ks], b[2], b[3]);
      }
  }

  // The forward's element steps: logit transform, then the mask (keys
  // outside [lo[h], hi[h]] of row h), for the block at key k0; then this
  // warp's row maxima (its columns, the quad's shuffle tree).
  __device__ static void logits_mask_max(float (&sc)[kSC][4], float (&mx)[2], const ScoreMod& score,
                                         const Visibility& vis, const DecodeWork& w, const int (&lo)[2],
                                         const int (&hi)[2], int k0, int warp, int q4) {
    if (!Cfg::kLean && score.softcap) {
#pragma unroll
      for (int c = 0; c < kSC; ++c)
#pragma unroll
        for (int r = 0; r < 4; ++r) sc[c][r] = score.capped(sc[c][r]);
    } else if (!score.raw) {
#pragma unroll
      for (int c = 0; c < kSC; ++c)
#pragma unroll
        for (int r = 0; r < 4; ++r) sc[c][r] = score.scaled(sc[c][r]);
    }
    if (!vis.block_fully_visible(w.i_first, w.i_last, k0, kBn)) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int c = 0; c < kSC; ++c)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int key = k0 + 8 * (warp * kSC + c) + 2 * q4 + j;
            if (key < lo[h] || key > hi[h]) sc[c][2 * h + j] = -CUDART_INF_F;
          }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = -CUDART_INF_F;
#pragma unroll
      for (int c = 0; c < kSC; ++c) m = fmaxf(m, fmaxf(sc[c][2 * h], sc[c][2 * h + 1]));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      mx[h] = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    }
  }

  // The block's maximum of row r from the four warps' (max[warp * 16 + r]).
  __device__ static float block_max(const float* max, int r) {
    return fmaxf(fmaxf(max[r], max[16 + r]), fmaxf(max[32 + r], max[48 + r]));
  }

  // Consumer::softmax_update's operations for row h: the new running max
  // from the block's maximum mx, ms, alpha; m becomes the new max.
  __device__ static float running_max(float& m, float mx, float k_exp, float& ms) {
    const float m_new = fmaxf(m, __fmul_rn(mx, k_exp));
    ms = m_new == -CUDART_INF_F ? 0.f : m_new;
    const float alpha = exp2_approx(__fsub_rn(m, ms));
    m = m_new;
    return alpha;
  }

  // P = exp2(s k_exp - ms) of row h's elements.
  __device__ static void exponentiate(float (&sc)[kSC][4], int h, float k_exp, float ms) {
    const float neg_ms = -ms;
#pragma unroll
    for (int c = 0; c < kSC; ++c)
#pragma unroll
      for (int j = 0; j < 2; ++j) sc[c][2 * h + j] = exp2_approx(__fmaf_rn(sc[c][2 * h + j], k_exp, neg_ms));
  }

  // P of this warp to shared memory: f32 (p32: [Bn / 8][4][32], the
  // block's), and each pair of n8 chunks rounded (pack_p's pairs) as an A
  // fragment of P V, handed to `put(k16 chunk, fragment)`.
  template <class Put>
  __device__ static void store_p(const float (&sc)[kSC][4], float* p32, int warp, int lane, Put&& put) {
#pragma unroll
    for (int c = 0; c < kSC; ++c)
#pragma unroll
      for (int r = 0; r < 4; ++r) p32[((warp * kSC + c) * 4 + r) * 32 + lane] = sc[c][r];
#pragma unroll
    for (int c = 0; c < kSC; c += 2)
      put((warp * kSC + c) / 2,
          make_uint4(pack2<Cfg::kBf16>(sc[c][0], sc[c][1]), pack2<Cfg::kBf16>(sc[c][2], sc[c][3]),
                     pack2<Cfg::kBf16>(sc[c + 1][0], sc[c + 1][1]), pack2<Cfg::kBf16>(sc[c + 1][2], sc[c + 1][3])));
  }

  // The block's row sum of row h from every warp's f32 P (p32): the
  // forward's per-thread order (chunks ascending, then the pair) and
  // shuffle tree.
  __device__ static float row_sum(const float* p32, int h, int lane) {
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kBn / 8; ++c)
#pragma unroll
      for (int j = 0; j < 2; ++j) sum = __fadd_rn(sum, p32[(c * 4 + 2 * h + j) * 32 + lane]);
    sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
    return __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 2));
  }

  __device__ static void run(const AttentionDecodeParams& p, const DecodeWork& w,
                             const DecodeSmem<Cfg>& smem) {
    const int tid = threadIdx.x;  // 0..127
    // warp: made warp-uniform for the compiler (no divergence checks around
    // the row-sum warps' shuffles)
    const int warp = __shfl_sync(0xffffffffu, tid / 32, 0), lane = tid % 32, g = lane / 4, q4 = lane % 4;
    const Visibility vis = decode_visibility(p, w.lk);
    const ScoreMod score = decode_score_mod(p);
    uint8_t* xb = smem.x();
    const Exchange x{reinterpret_cast<float*>(xb + Cfg::kXOffMax), reinterpret_cast<float*>(xb + Cfg::kXOffL),
                     reinterpret_cast<uint4*>(xb + Cfg::kXOffP), reinterpret_cast<float*>(xb + Cfg::kXOffPf32)};

    int lo[2], hi[2];
    bool valid[2];
    rows_seen(p, w, vis, g, lo, hi, valid);

    // Q's A fragments, once.
    mbar_wait(smem.q_full(), 0);
    if (tid == 0) SB_DECODE_TRACE(1);
    uint32_t qa[kQK][4];
    load_q(qa, smem_addr(smem.q()), lane);

    float m[2] = {-CUDART_INF_F, -CUDART_INF_F}, l[2] = {0.f, 0.f};
    float acc[kOC][4];
#pragma unroll
    for (int oc = 0; oc < kOC; ++oc)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[oc][r] = 0.f;
    // Cfg::kWalk: the fold of the splits walked so far, per row (the
    // combine's M, L, ACC of this thread's columns); `folded`: a split of
    // the row's is in it.
    float fM[2] = {-CUDART_INF_F, -CUDART_INF_F}, fL[2] = {0.f, 0.f};
    float fA[kOC][4];
    bool folded[2] = {false, false};
    if constexpr (Cfg::kWalk) {
#pragma unroll
      for (int oc = 0; oc < kOC; ++oc)
#pragma unroll
        for (int r = 0; r < 4; ++r) fA[oc][r] = 0.f;
    }

    // One split (the split this CTA was launched for), or (kWalk) every
    // split some row of the tile sees, ascending, through one ring.
    int ring = 0;
    for (int split = 0; split < (Cfg::kWalk ? p.max_splits : 1); ++split) {
      const DecodeWork ws = Cfg::kWalk ? decode_work_at<Cfg>(p, split, w.tile, w.b, w.hk) : w;
      if (Cfg::kWalk) {
        if (ws.n_last < ws.n_first) continue;
        m[0] = m[1] = -CUDART_INF_F;  // a new split's state, as pass 1's CTA of that split starts
        l[0] = l[1] = 0.f;
#pragma unroll
        for (int oc = 0; oc < kOC; ++oc)
#pragma unroll
          for (int r = 0; r < 4; ++r) acc[oc][r] = 0.f;
      }
      for (int n = ws.n_first, it = 0; n <= ws.n_last; ++n, ++it, ++ring) {
        const int s = ring % Cfg::kStages;
        const uint32_t parity = (ring / Cfg::kStages) & 1;
        const int k0 = n * kBn;

        // S = Q K^T for this warp's keys.
        float sc[kSC][4];
        mbar_wait(smem.k_full(s), parity);
        if (tid == 0 && it < 12) SB_DECODE_TRACE(2 + 5 * it);
        scores(sc, qa, smem_addr(smem.k(s)), warp, lane);
        mbar_arrive(smem.k_empty(s));  // release K_n: every thread, after its reads
        if (tid == 0 && it < 12) SB_DECODE_TRACE(3 + 5 * it);

        // The forward's element steps, then the row maxima: this warp's
        // columns, then the four warps' values.
        {
          float mx[2];
          logits_mask_max(sc, mx, score, vis, ws, lo, hi, k0, warp, q4);
          if (q4 == 0) {
            x.max[warp * 16 + g] = mx[0];
            x.max[warp * 16 + 8 + g] = mx[1];
          }
        }
        named_barrier_sync(kBarrier, kThreads);

        // m, alpha and P: Consumer::softmax_update's operations, per row.
        const float k_exp = score.exp_scale;  // x * k_exp is the logit
        float alpha[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float ms;
          alpha[h] = running_max(m[h], block_max(x.max, 8 * h + g), k_exp, ms);
          exponentiate(sc, h, k_exp, ms);
        }
        // P to shared memory: f32 for the row sums, rounded as the A
        // fragments of P V.
        store_p(sc, x.p32, warp, lane, [&](int kk, uint4 v) { x.p[kk * 32 + lane] = v; });
        named_barrier_sync(kBarrier, kThreads);

        // acc *= alpha (later blocks), then O += P V over the block's keys.
        if (it > 0) {
#pragma unroll
          for (int oc = 0; oc < kOC; ++oc)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              acc[oc][2 * h] = __fmul_rn(acc[oc][2 * h], alpha[h]);
              acc[oc][2 * h + 1] = __fmul_rn(acc[oc][2 * h + 1], alpha[h]);
            }
        }
        // l of rows g (warp 2) and g + 8 (warp 3): the forward's per-thread
        // order (chunks ascending, then the pair) and shuffle tree, over every
        // warp's P. Before the wait for V, which it usually fills: after P V
        // it held warps 2 and 3, and so every warp at the next block's first
        // barrier.
        if (warp >= 2) {
          const int h = warp - 2;
          const float sum = row_sum(x.p32, h, lane);
          if (h == 0)  // constant register indices: l stays in registers
            l[0] = __fadd_rn(__fmul_rn(l[0], alpha[0]), sum);
          else
            l[1] = __fadd_rn(__fmul_rn(l[1], alpha[1]), sum);
        }
        if (tid == 0 && it < 12) SB_DECODE_TRACE(4 + 5 * it);
        mbar_wait(smem.v_full(s), parity);
        if (tid == 0 && it < 12) SB_DECODE_TRACE(5 + 5 * it);
        if (p.use_tma && k0 + kBn > w.lk) {  // CTA-uniform: the block ending past lk came by TMA
          zero_stage_rows_from<Cfg, kThreads>(smem.v(s), w.lk - k0, tid);
          named_barrier_sync(kBarrier, kThreads);
        }
        {
          const uint32_t v_addr = smem_addr(smem.v(s));
          const int key = ((lane / 8) % 2) * 8 + lane % 8, col = warp * (kD / 4) + (lane / 16) * 8;
#pragma unroll
          for (int kk = 0; kk < kBn / 16; ++kk) {
            const uint4 pv = x.p[kk * 32 + lane];
            const uint32_t pa[4] = {pv.x, pv.y, pv.z, pv.w};
#pragma unroll
            for (int oc = 0; oc < kOC; oc += 2) {
              uint32_t b[4];
              ldmatrix_x4_trans(b, v_addr + swz(kBn, 16 * kk + key, col + 8 * oc));
              mma_m16n8k16<Cfg::kBf16>(acc[oc], pa, b[0], b[1]);
              mma_m16n8k16<Cfg::kBf16>(acc[oc + 1], pa, b[2], b[3]);
            }
          }
        }
        mbar_arrive(smem.v_empty(s));  // release V_n: every thread, after its reads
        if (tid == 0 && it < 12) SB_DECODE_TRACE(6 + 5 * it);

      }

      // l to every warp.
      if (warp >= 2 && q4 == 0) x.l[8 * (warp - 2) + g] = warp == 2 ? l[0] : l[1];
      named_barrier_sync(kBarrier, kThreads);
      l[0] = x.l[g];
      l[1] = x.l[8 + g];

      if constexpr (Cfg::kWalk) {
        // The split into each row's fold, as the combine folds the splits a
        // row sees (those of its keys [lo, hi]): the first copied, the
        // others by fold_weights and the ACC line, splits ascending.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (!valid[h] || ws.lk <= 0 || hi[h] < lo[h]) continue;
          if (split < lo[h] / Cfg::kSplit || split > hi[h] / Cfg::kSplit) continue;
          if (!folded[h]) {
            fM[h] = m[h];
            fL[h] = l[h];
#pragma unroll
            for (int oc = 0; oc < kOC; ++oc) {
              fA[oc][2 * h] = acc[oc][2 * h];
              fA[oc][2 * h + 1] = acc[oc][2 * h + 1];
            }
            folded[h] = true;
          } else {
            float a, b;
            fold_weights(fM[h], fL[h], m[h], l[h], a, b);
#pragma unroll
            for (int oc = 0; oc < kOC; ++oc) {
              fA[oc][2 * h] = __fadd_rn(__fmul_rn(fA[oc][2 * h], a), __fmul_rn(acc[oc][2 * h], b));
              fA[oc][2 * h + 1] = __fadd_rn(__fmul_rn(fA[oc][2 * h + 1], a), __fmul_rn(acc[oc][2 * h + 1], b));
            }
          }
        }
        continue;
      }

      if constexpr (Cfg::kFold) {
        // The split's (m, l, acc) of each valid row, f32, to this CTA's
        // shared memory for the cluster's fold. K's stage 0 is free: every
        // warp's reads of it came before the barrier above.
        float* part = DecodeClusterFold<Cfg>::partial(smem);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (!valid[h]) continue;
          float* row = part + (g + 8 * h) * DecodeClusterFold<Cfg>::kStride + warp * (kD / 4) + 2 * q4;
#pragma unroll
          for (int oc = 0; oc < kOC; ++oc)
            *reinterpret_cast<float2*>(row + 8 * oc) = make_float2(acc[oc][2 * h], acc[oc][2 * h + 1]);
          if (warp == 0 && q4 == 0)
            *reinterpret_cast<float2*>(part + DecodeClusterFold<Cfg>::kOffMl + 2 * (g + 8 * h)) =
                make_float2(m[h], l[h]);
        }
        trace_print(w);
        return;
      }
      if (Cfg::kDirectOut && p.direct_out) {
        // One split per row: the combine's copy and output step, here.
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (!valid[h]) continue;
          const int R = w.r_begin + g + 8 * h;
          const int i = p.q_begin + R / p.head_group, head = w.hk * p.head_group + R % p.head_group;
          const bool sees = w.lk > 0 && hi[h] >= lo[h];  // the combine's condition
          write_row_direct(p, w.b, head, i, sees ? m[h] : -CUDART_INF_F, sees ? l[h] : 0.f, acc, h, sees,
                           warp, q4);
        }
        trace_print(w);
        return;
      }
      // The split's (m, l, acc) of each valid row, f32, to the workspace.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!valid[h]) continue;
        const int R = w.r_begin + g + 8 * h;
        const int i = p.q_begin + R / p.head_group, head = w.hk * p.head_group + R % p.head_group;
        const int64_t row = (static_cast<int64_t>(w.b) * p.num_heads + head) * p.q_count + (i - p.q_begin);
        const int64_t slot = row * p.max_splits + w.split;
        float* out = p.ws_acc + slot * kD + warp * (kD / 4) + 2 * q4;
#pragma unroll
        for (int oc = 0; oc < kOC; ++oc)
          *reinterpret_cast<float2*>(out + 8 * oc) = make_float2(acc[oc][2 * h], acc[oc][2 * h + 1]);
        if (warp == 0 && q4 == 0) *reinterpret_cast<float2*>(p.ws_ml + slot * 2) = make_float2(m[h], l[h]);
      }
      trace_print(w);
    }  // splits

    if constexpr (Cfg::kWalk) {
      // out and lse of every valid row: the combine's output step on the
      // fold (a row that sees no key: out = 0, lse as the combine writes).
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!valid[h]) continue;
        const int R = w.r_begin + g + 8 * h;
        const int i = p.q_begin + R / p.head_group, head = w.hk * p.head_group + R % p.head_group;
        const bool sees = w.lk > 0 && hi[h] >= lo[h];  // the combine's condition
        write_row_direct(p, w.b, head, i, sees ? fM[h] : -CUDART_INF_F, sees ? fL[h] : 0.f, fA, h, sees, warp,
                         q4);
      }
    }
  }

  __device__ static void trace_print(const DecodeWork& w) {
#ifdef SAMEBITS_DECODE_TRACE
    if (threadIdx.x != 0 || !decode_trace_cta()) return;
    const long long t0 = g_decode_trace[0];
    printf("decode trace: blocks %d | producer start %lld q %lld | consumer q %lld | end %lld\n",
           w.n_last - w.n_first + 1, g_decode_trace[96] - t0, g_decode_trace[97] - t0, g_decode_trace[1] - t0,
           clock64() - t0);
    for (int b = 0; b < 12 && b <= w.n_last - w.n_first; ++b)
      printf("  block %d: K issued %lld full %lld qk %lld softmax %lld | V issued %lld full %lld pv %lld\n", b,
             g_decode_trace[64 + b] - t0, g_decode_trace[2 + 5 * b] - t0, g_decode_trace[3 + 5 * b] - t0,
             g_decode_trace[4 + 5 * b] - t0, g_decode_trace[80 + b] - t0, g_decode_trace[5 + 5 * b] - t0,
             g_decode_trace[6 + 5 * b] - t0);
#endif
  }

  // direct_out: this warp's columns of row h (DecodeConsumer::write_row_direct's
  // arithmetic); lse by warp 0.
  __device__ static void write_row_direct(const AttentionDecodeParams& p, int b, int head, int i, float M,
                                          float L, const float (&acc)[kOC][4], int h, bool sees, int warp,
                                          int q4) {
    using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
    float inv, lse;
    decode_finish_row(M, L, inv, lse);
    Elem* o = static_cast<Elem*>(p.out) + b * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
              head * p.o_head_stride + warp * (kD / 4) + 2 * q4;
#pragma unroll
    for (int oc = 0; oc < kOC; ++oc) {
      const float a0 = sees ? acc[oc][2 * h] : 0.f, a1 = sees ? acc[oc][2 * h + 1] : 0.f;
      *reinterpret_cast<uint32_t*>(o + 8 * oc) = pack2<Cfg::kBf16>(__fmul_rn(a0, inv), __fmul_rn(a1, inv));
    }
    if (warp == 0 && q4 == 0)
      p.lse[b * p.lse_batch_stride + head * p.lse_head_stride + static_cast<int64_t>(i) * p.lse_row_stride] = lse;
  }
};

}  // namespace samebits::cuda::sm90
