// sm90 attention backward, pass 2: dK and dV.
//
// Work unit: (sequence b, KV head g, KV block n of Cfg::kBlockN keys). The
// CTA keeps K_n and V_n in shared memory and its dK, dV accumulators in
// registers for the whole unit, and streams (Q, dO, lse, D) tiles of
// kBlockM query rows in this order:
//   for h in g's query heads, ascending:
//     for m over the query tiles that see a key of block n, ascending:
//       S^T  = K_wg Q_m^T            (64 x Bm, k16 chain over d)
//       dP^T = V_wg dO_m^T           (64 x Bm)
//       P^T  = exp2(fma(x, k, -lse2))           (sm90 exponent form, masked)
//       dV  += round(P^T) dO_m       (k16 chain over the tile's rows, ascending)
//       G^T  = P^T (dP^T - D) [* (1 - h^2)]
//       dK  += round(G^T) Q_m
// then dK = round(scale * dK), dV = round(dV), rows past seqused_k zero.
// Every dk/dv element is therefore one f32 wgmma accumulator that sees the
// k16 steps of (head, query row) in ascending order (numerics.md
// "Backward"); skipped tiles would add exact zeros.
//
// Warpgroups: each owns 64 keys (both products) for head dims 64 and 128;
// for head dim 256 both own the same 64 keys, warpgroup 0 computing dV and
// warpgroup 1 dK (BwdConfig::kSplitRoles, which says why).
//
// Synchronization (one CTA, no mbarriers): all 256 threads issue cp.async
// loads into a ring of Cfg::kStages stages; tile t is ready after
// cp.async.wait_group + fence.proxy.async (the generic-proxy writes become
// visible to wgmma's async proxy) + __syncthreads. That one barrier per tile
// also frees stage (t - 1) % kStages, refilled right after it with tile
// t + kStages - 1: every warpgroup ended tile t - 1 with wgmma_wait<0>.
// With split roles in the raw form, P^T goes from warpgroup 0 to warpgroup 1
// through shared memory and named barrier 1 (tile_raw_body).
#pragma once

#include "cuda/attention_bwd_sm90_common.h"

namespace samebits::cuda::sm90::bwd {

// The fused kernel's hook into a tile (attention_bwd_sm90_fused.h): on_g
// sees round(G^T) as the dK product's A fragments before that product is
// issued. The three-pass kernels pass NoHook.
struct NoHook {
  template <class Af>
  __device__ __forceinline__ void on_g(const Af&) const {}
};

template <class Cfg>
struct DkdvKernel {
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBn = Cfg::kBlockN;
  static constexpr int kBm = Cfg::kBlockM;
  static constexpr int kT = Cfg::kThreads;
  static constexpr int kSRegs = kBm / 2;  // S^T slice: 64 x Bm f32 over 128 threads
  static constexpr int kAccRegs = kD / 2;
  using Frags = uint32_t[kBm / 16][4];  // A fragments of round(P^T) / round(G^T)
  // The held form (the chained form's kHeld): K and V of the warpgroup's
  // 64 keys as A fragments in registers for the whole unit (load_held),
  // so the score products S^T and dP^T read only Q and dO from shared
  // memory (issue_rs_held: same operands, same k order, same bits).
  struct HeldKV {
    uint32_t k[kD / 16][4];
    uint32_t v[kD / 16][4];
  };

  struct Smem {
    uint8_t* base;
    __device__ uint8_t* k() const { return base + Cfg::kDkdvOffK; }
    __device__ uint8_t* v() const { return base + Cfg::kDkdvOffV; }
    __device__ uint8_t* q(int s) const { return base + Cfg::kDkdvOffQ + s * Cfg::kQTileBytes; }
    __device__ uint8_t* dout(int s) const { return base + Cfg::kDkdvOffDo + s * Cfg::kQTileBytes; }
    __device__ float* lse(int s) const {
      return reinterpret_cast<float*>(base + Cfg::kDkdvOffRow) + s * 2 * kBm;
    }
    __device__ float* dd(int s) const { return lse(s) + kBm; }
    __device__ float* pt() const { return reinterpret_cast<float*>(base + Cfg::kDkdvOffP); }
  };

  // Issues the loads of tile (h, m) into stage s, all by cp.async: Q and dO
  // rows, lse and D (zero past lq; those rows are masked, so P = G = 0
  // there). lse2 = lse * log2e is formed where it is read.
  __device__ static void load_q_tile(const AttentionBwdParams& p, const Smem& sm, const SeqGeom& sg,
                                     int b, int h, int m, int s, int tid) {
    const int m0 = m * kBm;
    const int valid = sg.lq - m0;
    const int64_t row0 = sg.q_row0 + m0;
    const uint16_t* qsrc = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                           row0 * p.q_row_stride + h * p.q_head_stride;
    const uint16_t* dsrc = static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
                           row0 * p.do_row_stride + h * p.do_head_stride;
    load_tile<kBm, kD, kT>(sm.q(s), qsrc, p.q_row_stride, valid, tid);
    load_tile<kBm, kD, kT>(sm.dout(s), dsrc, p.do_row_stride, valid, tid);
    if (tid < kBm) {
      const bool live = tid < valid;
      const int64_t r = row0 + (live ? tid : 0);
      const float* lsrc = live ? p.lse + b * p.lse_batch_stride + r * p.lse_row_stride +
                                     h * p.lse_head_stride
                               : p.lse;
      const void* dsrc2 = live ? static_cast<const void*>(static_cast<const uint16_t*>(p.dq) +
                                                          b * p.dq_batch_stride +
                                                          r * p.dq_row_stride + h * p.dq_head_stride)
                               : p.dq;
      cp_async_4(sm.lse(s) + tid, lsrc, live);
      cp_async_4(sm.dd(s) + tid, dsrc2, live);
    }
  }

  // One (h, m) tile for one warpgroup in the raw exponent form (no softcap,
  // positive scale, BwdScore::raw): the operations of BwdScore::p and ::g
  // with no branch per element; on tiles that are not fully visible the
  // mask is applied by selects (P = 0 and G = 0 where a pair is invisible,
  // as in tile()); fully visible tiles skip the mask (kMasked = false).
  //
  // With split roles and kShareP, S^T is computed once: the dV warpgroup
  // writes P^T (f32, exactly the values its dV product rounds) to shared
  // memory and arrives at named barrier 1; the dK warpgroup computes dP^T
  // meanwhile, syncs on barrier 1 and forms G^T from those P^T values. The
  // buffer is rewritten only after the next tile's __syncthreads, which the
  // dK warpgroup reaches after its reads. Without kShareP the dK warpgroup
  // recomputes S^T (same instructions, same bits).
  // kPtFree (v3, attention_bwd_sm90_dkdv_tma.h, where no __syncthreads
  // separates tiles): the mbarrier pt_empty orders P^T's reuse. Every
  // thread of the dK warpgroup arrives on it once it has read P^T (128
  // arrivals a phase); the dV warpgroup waits for the phase of the previous
  // tile before it rewrites P^T (pt_phase: parity of the tiles both
  // warpgroups processed so far, the first wait passing at once). Returns
  // whether the tile was processed (false: skipped by both warpgroups).
  //
  // kPipe (v3 without split roles: each warpgroup owns dK and dV of its
  // keys): the tile returns with its dK product still running, so the next
  // tile's S^T queues behind it instead of after a drain. The next tile
  // waits for that dK (wgmma groups complete in issue order) before it
  // issues dP^T, and right after that wait the thread arrives on
  // `release`, the stage that dK read (nullptr: none pending).
  // The caller ends the chain with drain() before it touches an
  // accumulator or releases the last stage. Only the waits move: every
  // product, operand and accumulation order is the same, so are the bits.
  // kHeld (under kPipe only): the score products take K and V from
  // *held instead of shared memory.
  template <bool kDV, bool kDK, bool kPtFree = false, bool kPipe = false, bool kHeld = false,
            class Hook = NoHook>
  __device__ static bool tile_raw(const Smem& sm, int s, const BwdScore& score,
                                  const BwdVisibility& vis, int m0, int key0, int lane, int warp,
                                  int t128, float (&acc_dv)[kDV ? kAccRegs : 1],
                                  float (&acc_dk)[kDK ? kAccRegs : 1], uint64_t* pt_empty = nullptr,
                                  uint32_t pt_phase = 0, const Hook& hook = Hook{},
                                  uint64_t* release = nullptr, Frags* af_pipe = nullptr,
                                  const HeldKV* held = nullptr) {
    if (skips(vis, m0, key0)) return false;  // adds exact zeros: skip
    if (vis.all_visible(m0, kBm, key0, 64))
      tile_raw_body<kDV, kDK, false, kPtFree, kPipe, kHeld>(sm, s, score, vis, m0, key0, lane, warp,
                                                            t128, acc_dv, acc_dk, pt_empty, pt_phase,
                                                            hook, release, af_pipe, held);
    else
      tile_raw_body<kDV, kDK, true, kPtFree, kPipe, kHeld>(sm, s, score, vis, m0, key0, lane, warp,
                                                           t128, acc_dv, acc_dk, pt_empty, pt_phase,
                                                           hook, release, af_pipe, held);
    return true;
  }

  // The tile columns (query rows) of a thread's S^T elements: element e
  // is in column col(e) = 8 (e / 4) + 2 q4 + e % 2, one of 16, numbered
  // c2_of(e). pre_row reads lse2 (lse times log2 e) and D of those 16
  // columns from the stage; tile_raw_joint and the chained tile_raw_body
  // call it while their score products run (Cfg::kJointPreRow,
  // kChainPreRow) rather than reading them in the element loop after the
  // wait. The same values either way.
  __device__ __forceinline__ static int c2_of(int e) { return 2 * (e / 4) + e % 2; }
  __device__ __forceinline__ static void pre_row(const float* lse_s, const float* dd_s, int q4,
                                                 float (&lse2_c)[kSRegs / 2], float (&dd_c)[kSRegs / 2]) {
#pragma unroll
    for (int c2 = 0; c2 < kSRegs / 2; ++c2) {
      const int col = 8 * (c2 / 2) + 2 * q4 + c2 % 2;
      constexpr float kLog2e = 1.4426950408889634f;
      lse2_c[c2] = __fmul_rn(lse_s[col], kLog2e);
      dd_c[c2] = dd_s[col];
    }
  }

  // One tile in the raw exponent form where one warpgroup owns dK and dV:
  // the operations and roundings of tile_raw_body (the same bits) in
  // another order. Both score products are waited for before one element
  // loop, which forms P and G of each register pair and packs them at once
  // (round(P^T) for dV, round(G^T) for dK); the f32 S^T and dP^T die as the
  // loop advances. Peak: dK, dV, S^T, dP^T = 192 registers, against 208
  // when P is formed while dP^T runs and kept for G. The fused kernel runs
  // it (with its hook, which stores round(G^T) for the dQ product), and so
  // does the dK/dV pass where Cfg::kRawJoint says (FREE).
  // Cfg::kJointPreRow: lse2 and D by pre_row (32 more registers at the
  // peak).
  template <bool kMasked, class Hook = NoHook>
  __device__ static void tile_raw_joint(const Smem& sm, int s, const BwdScore& score,
                                        const BwdVisibility& vis, int m0, int key0, int lane, int warp,
                                        float (&acc_dv)[kAccRegs], float (&acc_dk)[kAccRegs],
                                        const Hook& hook = Hook{}) {
    constexpr bool kPreRow = Cfg::kJointPreRow;
    constexpr uint32_t kRow = Cfg::kRowBytes;
    const uint32_t k_addr = smem_addr(sm.k()) + (key0 % kBn) * kRow;
    const uint32_t v_addr = smem_addr(sm.v()) + (key0 % kBn) * kRow;
    const uint32_t q_addr = smem_addr(sm.q(s));
    const uint32_t do_addr = smem_addr(sm.dout(s));
    const int q4 = lane % 4;
    const int key_r = key0 + warp * 16 + lane / 4;  // key of this thread's accumulator row 0
    const float* lse_s = sm.lse(s);
    const float* dd_s = sm.dd(s);
    // Element e = 4c + 2hh + jj: key key_r + 8hh, tile column (query row
    // m0 + col) col = 8c + 2q4 + jj.
    auto col = [&](int e) { return 8 * (e / 4) + 2 * q4 + (e % 2); };
    int rlo[2] = {0, 0}, rhi[2] = {0, 0};  // rows that see keys key_r, key_r + 8
    if constexpr (kMasked) {
      vis.rows_of_key(key_r, rlo[0], rhi[0]);
      vis.rows_of_key(key_r + 8, rlo[1], rhi[1]);
    }
    auto visible = [&](int e) -> bool {
      if constexpr (!kMasked) {
        return true;
      } else {
        const int i = m0 + col(e), hh = (e / 2) % 2;
        return (i >= rlo[hh]) & (i <= rhi[hh]);
      }
    };
    constexpr float kLog2e = 1.4426950408889634f;
    float st[kSRegs], dpt[kSRegs];
    uint32_t ap[kBm / 16][4], ag[kBm / 16][4];
    // gemm K_wg * Q^T -> S^T; gemm V_wg * dO^T -> dP^T (one group each)
    issue_ss<kBm, kD, Cfg::kBf16>(st, k_addr, kBn * kRow, q_addr, kBm * kRow);
    issue_ss<kBm, kD, Cfg::kBf16>(dpt, v_addr, kBn * kRow, do_addr, kBm * kRow);
    float lse2_c[kSRegs / 2], dd_c[kSRegs / 2];
    if constexpr (kPreRow) pre_row(lse_s, dd_s, q4, lse2_c, dd_c);
    wgmma_wait<0>();
    fence_regs(st);
    fence_regs(dpt);
    //   P = exp2(fma(s, c, -lse2))            (0 where invisible)
    //   G = P * (dP - D)                      (0 where invisible)
    // register pair (e, e + 1) -> A-fragment register e / 2 (pack_a's map)
#pragma unroll
    for (int e = 0; e < kSRegs; e += 2) {
      float pv[2], gv[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        float lse2, ddv;
        if constexpr (kPreRow) {
          lse2 = lse2_c[c2_of(e + k)];
          ddv = dd_c[c2_of(e + k)];
        } else {
          lse2 = __fmul_rn(lse_s[col(e + k)], kLog2e);
          ddv = dd_s[col(e + k)];
        }
        const float p = exp2_approx(__fmaf_rn(st[e + k], score.scale_log2, -lse2));
        const float g = __fmul_rn(p, __fsub_rn(dpt[e + k], ddv));
        pv[k] = visible(e + k) ? p : 0.f;
        gv[k] = visible(e + k) ? g : 0.f;
      }
      ap[e / 8][(e % 8) / 2] = pack2<Cfg::kBf16>(pv[0], pv[1]);
      ag[e / 8][(e % 8) / 2] = pack2<Cfg::kBf16>(gv[0], gv[1]);
    }
    // gemm round(P^T) * dO -> dV; the hook (the fused kernel's G^T store);
    // gemm round(G^T) * Q -> dK
    issue_rs<kBm, kD, Cfg::kBf16>(acc_dv, ap, do_addr, kBm * kRow);
    hook.on_g(ag);
    issue_rs<kBm, kD, Cfg::kBf16>(acc_dk, ag, q_addr, kBm * kRow);
    wgmma_wait<0>();  // every read of this stage, of ap and ag, is done
    fence_regs(acc_dk);
    fence_regs(acc_dv);
    fence_regs(ap);
    fence_regs(ag);
  }

  // The end of a kPipe chain: the last dK product has completed.
  template <bool kDV, bool kDK>
  __device__ __forceinline__ static void drain(float (&acc_dv)[kDV ? kAccRegs : 1],
                                               float (&acc_dk)[kDK ? kAccRegs : 1], Frags& af) {
    wgmma_wait<0>();
    if constexpr (kDK) fence_regs(acc_dk);
    if constexpr (kDV) fence_regs(acc_dv);
    fence_regs(af);
  }

  // Whether no row of the tile at m0 sees a key of [key0, key0 + 64): the
  // warpgroup's products would add exact zeros, and it skips the tile.
  __device__ __forceinline__ static bool skips(const BwdVisibility& vis, int m0, int key0) {
    int klo, khi;
    vis.keys_of_rows(m0, m0 + kBm - 1, klo, khi);
    return khi < klo || khi < key0 || klo > key0 + 63;
  }

  template <bool kDV, bool kDK, bool kMasked, bool kPtFree = false, bool kPipe = false,
            bool kHeld = false, class Hook = NoHook>
  __device__ static void tile_raw_body(const Smem& sm, int s, const BwdScore& score,
                                       const BwdVisibility& vis, int m0, int key0, int lane,
                                       int warp, int t128, float (&acc_dv)[kDV ? kAccRegs : 1],
                                       float (&acc_dk)[kDK ? kAccRegs : 1], uint64_t* pt_empty,
                                       uint32_t pt_phase, const Hook& hook = Hook{},
                                       uint64_t* release = nullptr, Frags* af_pipe = nullptr,
                                       const HeldKV* held = nullptr) {
    static_assert(!kPipe || (kDV && kDK), "kPipe: one warpgroup owns dK and dV");
    static_assert(!kHeld || kPipe, "kHeld: the chained form only");
    constexpr bool kShare = Cfg::kShareP;  // only read with split roles
    constexpr uint32_t kRow = Cfg::kRowBytes;
    const uint32_t k_addr = smem_addr(sm.k()) + (key0 % kBn) * kRow;
    const uint32_t v_addr = smem_addr(sm.v()) + (key0 % kBn) * kRow;
    const uint32_t q_addr = smem_addr(sm.q(s));
    const uint32_t do_addr = smem_addr(sm.dout(s));
    const int q4 = lane % 4;
    const int key_r = key0 + warp * 16 + lane / 4;  // key of this thread's accumulator row 0
    const float* lse_s = sm.lse(s);
    const float* dd_s = sm.dd(s);
    auto lse2 = [&](int colm) {
      constexpr float kLog2e = 1.4426950408889634f;
      return __fmul_rn(lse_s[colm], kLog2e);
    };
    // Element e = 4c + 2hh + jj: key key_r + 8hh, tile column (query row
    // m0 + col) col = 8c + 2q4 + jj.
    auto col = [&](int e) { return 8 * (e / 4) + 2 * q4 + (e % 2); };
    int rlo[2] = {0, 0}, rhi[2] = {0, 0};  // rows that see keys key_r, key_r + 8
    if constexpr (kMasked) {
      vis.rows_of_key(key_r, rlo[0], rhi[0]);
      vis.rows_of_key(key_r + 8, rlo[1], rhi[1]);
    }
    auto visible = [&](int e) -> bool {
      if constexpr (!kMasked) {
        return true;
      } else {
        const int i = m0 + col(e), hh = (e / 2) % 2;
        return (i >= rlo[hh]) & (i <= rhi[hh]);
      }
    };
    // The chained form (Cfg::kChainPreRow): lse2 and D by pre_row.
    constexpr bool kPreRow = kPipe && Cfg::kChainPreRow;
    float lse2_c[kSRegs / 2], dd_c[kSRegs / 2];
    // P of score sv at element e, given lse2 of its column
    auto p_of = [&](float sv, float l2, int e) {
      const float pv = exp2_approx(__fmaf_rn(sv, score.scale_log2, -l2));
      return visible(e) ? pv : 0.f;
    };
    float4* pt = reinterpret_cast<float4*>(sm.pt());  // [e / 4][thread] of 4 floats

    // This warpgroup needs S^T unless it only does dK and reads P^T.
    constexpr bool kNeedS = kDV || !kShare;
    float st[kNeedS ? kSRegs : 1];
    float dpt[kDK ? kSRegs : 1];
    // The A fragments of the dV and dK products. Under kPipe the caller's
    // (af_pipe): the dK product still reads them after this tile returns,
    // so they must stay in the same registers until the next tile's first
    // wait.
    Frags af_local;
    Frags& af = kPipe ? *af_pipe : af_local;
    // gemm K_wg * Q^T -> S^T (group 1); gemm V_wg * dO^T -> dP^T (group 2)
    if constexpr (kHeld)
      issue_rs_held<kBm, kD, Cfg::kBf16>(st, held->k, q_addr, kBm * kRow);
    else if constexpr (kNeedS)
      issue_ss<kBm, kD, Cfg::kBf16>(st, k_addr, kBn * kRow, q_addr, kBm * kRow);
    if constexpr (kPipe) {
      // The previous tile's dK has completed (S^T may still run): af and
      // acc_dk are free, and so is the stage that dK read. Only then dP^T:
      // with it in flight as well, the registers wgmma holds do not fit.
      wgmma_wait<1>();
      fence_regs(af);
      fence_regs(acc_dk);
      if (release != nullptr) mbar_arrive(release);
    }
    if constexpr (kHeld)
      issue_rs_held<kBm, kD, Cfg::kBf16>(dpt, held->v, do_addr, kBm * kRow);
    else if constexpr (kDK)
      issue_ss<kBm, kD, Cfg::kBf16>(dpt, v_addr, kBn * kRow, do_addr, kBm * kRow);
    if constexpr (kPreRow) pre_row(lse_s, dd_s, q4, lse2_c, dd_c);
    if constexpr (kNeedS) {
      wgmma_wait<kDK ? 1 : 0>();  // S^T landed (dP^T may still run)
      fence_regs(st);
#pragma unroll
      for (int e = 0; e < kSRegs; ++e) {
        if constexpr (kPreRow)
          st[e] = p_of(st[e], lse2_c[c2_of(e)], e);
        else
          st[e] = p_of(st[e], lse2(col(e)), e);
      }
    }
    if constexpr (kDV) {
      pack_a<kBm, Cfg::kBf16>(st, af);
      // gemm round(P^T) * dO -> dV (group 3)
      issue_rs<kBm, kD, Cfg::kBf16>(acc_dv, af, do_addr, kBm * kRow);
      if constexpr (!kDK && kShare) {
        if constexpr (kPtFree) mbar_wait(pt_empty, pt_phase ^ 1);  // the previous P^T was read
#pragma unroll
        for (int e4 = 0; e4 < kSRegs / 4; ++e4)
          pt[e4 * 128 + t128] = make_float4(st[4 * e4], st[4 * e4 + 1], st[4 * e4 + 2], st[4 * e4 + 3]);
        named_barrier_arrive(1, 256);
      }
    }
    if constexpr (kDK) {
      wgmma_wait<kDV ? 1 : 0>();  // dP^T landed (dV may still run)
      fence_regs(dpt);
      if constexpr (!kDV && kShare) {
        named_barrier_sync(1, 256);  // P^T written
#pragma unroll
        for (int e4 = 0; e4 < kSRegs / 4; ++e4) {
          const float4 p4 = pt[e4 * 128 + t128];
          const float pv[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const int e = 4 * e4 + k;
            const float g = __fmul_rn(pv[k], __fsub_rn(dpt[e], dd_s[col(e)]));
            dpt[e] = visible(e) ? g : 0.f;
          }
        }
        // P^T read (every value is consumed above): the dV warpgroup may
        // rewrite it once every thread of this warpgroup has arrived.
        if constexpr (kPtFree) mbar_arrive(pt_empty);
      } else {
#pragma unroll
        for (int e = 0; e < kSRegs; ++e) {
          float ddv;
          if constexpr (kPreRow)
            ddv = dd_c[c2_of(e)];
          else
            ddv = dd_s[col(e)];
          const float g = __fmul_rn(st[e], __fsub_rn(dpt[e], ddv));
          dpt[e] = visible(e) ? g : 0.f;
        }
      }
      if constexpr (kDV) {
        wgmma_wait<0>();  // dV done: af may be rewritten
        fence_regs(af);
        fence_regs(acc_dv);
      }
      pack_a<kBm, Cfg::kBf16>(dpt, af);
      hook.on_g(af);
      // gemm round(G^T) * Q -> dK (group 4)
      issue_rs<kBm, kD, Cfg::kBf16>(acc_dk, af, q_addr, kBm * kRow);
    }
    if constexpr (kPipe) return;  // dK runs on; the next tile's first wait (or drain) covers it
    wgmma_wait<0>();  // every read of this stage and of af is done
    if constexpr (kDK) fence_regs(acc_dk);
    if constexpr (kDV) fence_regs(acc_dv);
    fence_regs(af);
  }

  // One (h, m) tile for one warpgroup, any score form (softcap, or a
  // non-positive scale). kDV / kDK: which accumulators it owns.
  template <bool kDV, bool kDK, class Hook = NoHook>
  __device__ static void tile(const Smem& sm, int s, const BwdScore& score,
                              const BwdVisibility& vis, int m0, int key0, int lane, int warp,
                              float (&acc_dv)[kDV ? kAccRegs : 1],
                              float (&acc_dk)[kDK ? kAccRegs : 1], const Hook& hook = Hook{}) {
    if (skips(vis, m0, key0)) return;  // adds exact zeros: skip
    const bool full = vis.all_visible(m0, kBm, key0, 64);

    constexpr uint32_t kRow = Cfg::kRowBytes;
    const uint32_t k_addr = smem_addr(sm.k()) + (key0 % kBn) * kRow;
    const uint32_t v_addr = smem_addr(sm.v()) + (key0 % kBn) * kRow;
    const uint32_t q_addr = smem_addr(sm.q(s));
    const uint32_t do_addr = smem_addr(sm.dout(s));
    const int q4 = lane % 4;
    const int key_r = key0 + warp * 16 + lane / 4;  // key of this thread's accumulator row 0
    // lse2 = lse * log2e and D of tile column `colm` (shared memory).
    const float* lse_s = sm.lse(s);
    const float* dd_s = sm.dd(s);
    auto lse2 = [&](int colm) {
      constexpr float kLog2e = 1.4426950408889634f;
      return __fmul_rn(lse_s[colm], kLog2e);
    };
    auto dd = [&](int colm) { return dd_s[colm]; };

    float st[kSRegs];
    float dpt[kSRegs];
    uint32_t af[kBm / 16][4];
    // gemm K_wg * Q^T -> S^T (group 1); gemm V_wg * dO^T -> dP^T (group 2)
    issue_ss<kBm, kD, Cfg::kBf16>(st, k_addr, kBn * kRow, q_addr, kBm * kRow);
    if constexpr (kDK) issue_ss<kBm, kD, Cfg::kBf16>(dpt, v_addr, kBn * kRow, do_addr, kBm * kRow);
    wgmma_wait<kDK ? 1 : 0>();  // S^T landed (dP^T may still run)
    fence_regs(st);

    // Element e = 4c + 2hh + jj of a 64 x Bm slice: key key_r + 8hh,
    // query row m0 + 8c + 2q4 + jj.
    auto visible = [&](int e) {
      const int c = e / 4, hh = (e / 2) % 2, jj = e % 2;
      return full || vis.visible(m0 + 8 * c + 2 * q4 + jj, key_r + 8 * hh);
    };
    auto col = [&](int e) { return 8 * (e / 4) + 2 * q4 + (e % 2); };

    // P^T: in place when nothing needs the raw score again (no softcap),
    // else computed on the fly for the A fragments and again for G.
    const bool p_in_place = kDV && !score.softcap;
    if constexpr (kDV) {
      if (p_in_place) {
#pragma unroll
        for (int e = 0; e < kSRegs; ++e) st[e] = visible(e) ? score.p(st[e], lse2(col(e))) : 0.f;
        pack_a<kBm, Cfg::kBf16>(st, af);
      } else {
        pack_a_fn<kBm, Cfg::kBf16>(
            [&](int e) { return visible(e) ? score.p(st[e], lse2(col(e))) : 0.f; }, af);
      }
      // gemm round(P^T) * dO -> dV (group 3)
      issue_rs<kBm, kD, Cfg::kBf16>(acc_dv, af, do_addr, kBm * kRow);
    }
    if constexpr (kDK) {
      wgmma_wait<kDV ? 1 : 0>();  // dP^T landed (dV may still run)
      fence_regs(dpt);
#pragma unroll
      for (int e = 0; e < kSRegs; ++e) {
        float g = 0.f;
        if (visible(e)) {
          const float pv = p_in_place ? st[e] : score.p(st[e], lse2(col(e)));
          g = score.g(pv, dpt[e], dd(col(e)), st[e]);
        }
        dpt[e] = g;
      }
      if constexpr (kDV) {
        wgmma_wait<0>();  // dV done: af may be rewritten
        fence_regs(af);
        fence_regs(acc_dv);
      }
      pack_a<kBm, Cfg::kBf16>(dpt, af);
      hook.on_g(af);
      // gemm round(G^T) * Q -> dK (group 4)
      issue_rs<kBm, kD, Cfg::kBf16>(acc_dk, af, q_addr, kBm * kRow);
    }
    wgmma_wait<0>();  // every read of this stage and of af is done
    if constexpr (kDK) fence_regs(acc_dk);
    if constexpr (kDV) fence_regs(acc_dv);
    fence_regs(af);
  }

  // Writes one 64-key slice: dst = round(mul * acc) for keys < lk, 0 for
  // keys in [lk, lk_stored).
  __device__ static void store(void* dst, int64_t batch_stride, int64_t row_stride,
                               int64_t head_stride, int b, int g, const SeqGeom& sg, int key_r,
                               int q4, const float (&acc)[kAccRegs], bool scale, float mul) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int j = key_r + 8 * hh;
      if (j >= sg.lk_stored) continue;
      uint16_t* row = static_cast<uint16_t*>(dst) + b * batch_stride +
                      int64_t(sg.k_row0 + j) * row_stride + g * head_stride;
      const bool live = j < sg.lk;
#pragma unroll
      for (int c = 0; c < kD / 8; ++c) {
        float x0 = acc[4 * c + 2 * hh], x1 = acc[4 * c + 2 * hh + 1];
        if (scale) {
          x0 = __fmul_rn(mul, x0);
          x1 = __fmul_rn(mul, x1);
        }
        if (!live) x0 = x1 = 0.f;
        *reinterpret_cast<uint32_t*>(row + 8 * c + 2 * q4) = pack2<Cfg::kBf16>(x0, x1);
      }
    }
  }

  template <bool kDV, bool kDK>
  __device__ static void run(const AttentionBwdParams& p, const Smem& sm) {
    const int tid = threadIdx.x;
    const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const BwdScore score(p);
    Walker walker;
    int b, g, n;
    for (long unit = blockIdx.x; walker.get<true>(p, unit, p.num_heads_k, kBn, b, g, n);
         unit += gridDim.x) {
      const SeqGeom sg = seq_geom(p, b);
      const BwdVisibility vis{sg.lq, sg.lk, p.window_left, p.window_right};
      const int k0 = n * kBn;
      const int key0 = Cfg::kSplitRoles ? k0 : k0 + 64 * wg;  // this warpgroup's first key

      // K_n, V_n (keys past lk zero). The previous unit ended with a
      // __syncthreads after its last wgmma wait, so the buffers are free.
      {
        const int64_t row0 = sg.k_row0 + k0;
        const uint16_t* ks = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                             row0 * p.k_row_stride + g * p.k_head_stride;
        const uint16_t* vs = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                             row0 * p.v_row_stride + g * p.v_head_stride;
        load_tile<kBn, kD, kT>(sm.k(), ks, p.k_row_stride, sg.lk - k0, tid);
        load_tile<kBn, kD, kT>(sm.v(), vs, p.v_row_stride, sg.lk - k0, tid);
        cp_async_commit();
      }

      // Query tiles that see a key of this block.
      int r_lo, r_hi;
      vis.rows_of_keys(k0, k0 + kBn - 1, r_lo, r_hi);
      const int m_lo = r_lo / kBm;
      const int n_m = r_hi < r_lo ? 0 : r_hi / kBm - m_lo + 1;
      const int n_tiles = n_m * p.head_group;

      float acc_dv[kDV ? kAccRegs : 1];
      float acc_dk[kDK ? kAccRegs : 1];
#pragma unroll
      for (int i = 0; i < (kDV ? kAccRegs : 1); ++i) acc_dv[i] = 0.f;
#pragma unroll
      for (int i = 0; i < (kDK ? kAccRegs : 1); ++i) acc_dk[i] = 0.f;

      // Ring of kS stages, tile t in stage t % kS, one group per tile
      // (empty groups keep the count):
      //   prologue: tiles 0 .. kS - 2
      //   wait until tile t (and K, V) landed, fence to the async proxy, sync:
      //     every thread has also finished tile t - 1 (its wgmma_wait<0>),
      //     so stage (t - 1) % kS is free
      //   issue the loads of tile t + kS - 1 into that stage
      //   compute tile t (ends with wgmma_wait<0>)
      constexpr int kS = Cfg::kStages;
      auto load_t = [&](int t) {
        if (t < n_tiles)
          load_q_tile(p, sm, sg, b, g * p.head_group + t / n_m, m_lo + t % n_m, t % kS, tid);
        cp_async_commit();
      };
#pragma unroll
      for (int t = 0; t < kS - 1; ++t) load_t(t);
      for (int t = 0; t < n_tiles; ++t) {
        cp_async_wait<kS - 2>();
        fence_proxy_async_smem();
        __syncthreads();
        load_t(t + kS - 1);
        const int m0 = (m_lo + t % n_m) * kBm;
        if (score.raw)
          tile_raw<kDV, kDK>(sm, t % kS, score, vis, m0, key0, lane, warp, tid % 128, acc_dv,
                             acc_dk);
        else
          tile<kDV, kDK>(sm, t % kS, score, vis, m0, key0, lane, warp, acc_dv, acc_dk);
      }
      cp_async_wait<0>();  // (only the empty groups, or K/V when no tile ran)
      __syncthreads();     // K, V and every stage free for the next unit

      const int key_r = key0 + warp * 16 + lane / 4;
      if constexpr (kDV)
        store(p.dv, p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride, b, g, sg, key_r,
              lane % 4, acc_dv, false, 1.f);
      if constexpr (kDK)
        store(p.dk, p.dk_batch_stride, p.dk_row_stride, p.dk_head_stride, b, g, sg, key_r,
              lane % 4, acc_dk, true, p.softmax_scale);
    }
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    attention_bwd_dkdv_sm90_kernel(const __grid_constant__ AttentionBwdParams p) {
  extern __shared__ uint8_t smem_raw[];
  using K = DkdvKernel<Cfg>;
  const typename K::Smem sm{reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023))};
  if constexpr (Cfg::kSplitRoles) {
    if (threadIdx.x / 128 == 0)
      K::template run<true, false>(p, sm);
    else
      K::template run<false, true>(p, sm);
  } else {
    K::template run<true, true>(p, sm);
  }
}

}  // namespace samebits::cuda::sm90::bwd
