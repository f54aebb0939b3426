// sm90 attention backward, passes 1 and 3: the D preprocess and dQ.
//
// Pass 1 (preprocess): D_i = dot(dout_i, out_i) for every (query row, head),
// stored as an f32 in the first 4 bytes of dq's row (i, h): dq is written by
// pass 3 only, after pass 2 has read D, so it doubles as D's workspace and
// the backward needs no allocation. Order of the dot (fixed, a function of d
// only): lane l of the row's d/8 lanes sums the products of columns
// 8l .. 8l+7 in ascending order from +0 (each product and sum rounded on
// its own), then the lanes combine by a butterfly (xor 1, 2, 4, ...).
//
// Pass 3 (dQ): work unit (sequence b, head h, query tile of kDqBlockM rows,
// 64 per warpgroup). The CTA keeps Q, dO in shared memory and dQ in
// registers, and streams K, V tiles of kDqBlockN keys, ascending:
//   S   = Q_wg K_n^T,  dP = dO_wg V_n^T       (k16 chains over d)
//   P   = exp2(fma(x, k, -lse2)), G = P (dP - D) [* (1 - h^2)]   (masked)
//   dQ += round(G) K_n                        (k16 chain over the tile's keys)
// then dq = round(scale * dQ). Every dq element is one f32 accumulator that
// sees the k16 steps of its keys in ascending order, KV block after KV block
// (numerics.md "Backward"): deterministic by construction, no atomics, no
// semaphores, no workspace.
//
// Synchronization as in pass 2: cp.async loads by all threads into a ring of
// Cfg::kStages stages, then cp.async.wait_group + fence.proxy.async +
// __syncthreads, one barrier per tile; after it, the stage of tile t - 1 is
// refilled with tile t + kStages - 1.
#pragma once

#include "cuda/attention_bwd_sm90_common.h"

namespace samebits::cuda::sm90::bwd {

// ------------------------------------------------------------------ pass 1
constexpr int kPreprocessThreads = kBwdPreprocessThreads;
constexpr int kPreprocessRows = kBwdPreprocessRows;

template <int kD, bool kBf16>
__global__ void __launch_bounds__(kPreprocessThreads)
    attention_bwd_preprocess_sm90_kernel(const __grid_constant__ AttentionBwdParams p) {
  constexpr int kLanes = kD / 8;                        // lanes per row
  constexpr int kRowsPerPass = kPreprocessThreads / kLanes;
  static_assert(kLanes <= 32 && kPreprocessRows % kRowsPerPass == 0, "row groups inside a warp");
  const int tid = threadIdx.x;
  const int lane_in_row = tid % kLanes;
  Walker walker;
  int b, h, m;
  for (long unit = blockIdx.x;
       walker.get<false>(p, unit, p.num_heads, kPreprocessRows, b, h, m); unit += gridDim.x) {
    const SeqGeom sg = seq_geom(p, b);
#pragma unroll 1
    for (int r0 = 0; r0 < kPreprocessRows; r0 += kRowsPerPass) {
      const int i = m * kPreprocessRows + r0 + tid / kLanes;
      const bool live = i < sg.lq;
      const int64_t row = sg.q_row0 + (live ? i : 0);
      float sum = 0.f;
      if (live) {
        const uint4 o = *reinterpret_cast<const uint4*>(
            static_cast<const uint16_t*>(p.out) + b * p.o_batch_stride + row * p.o_row_stride +
            h * p.o_head_stride + 8 * lane_in_row);
        const uint4 g = *reinterpret_cast<const uint4*>(
            static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride + row * p.do_row_stride +
            h * p.do_head_stride + 8 * lane_in_row);
        const uint16_t* ou = reinterpret_cast<const uint16_t*>(&o);
        const uint16_t* gu = reinterpret_cast<const uint16_t*>(&g);
#pragma unroll
        for (int c = 0; c < 8; ++c)
          sum = __fadd_rn(sum, __fmul_rn(load_elem<kBf16>(gu, c), load_elem<kBf16>(ou, c)));
      }
#pragma unroll
      for (int x = 1; x < kLanes; x *= 2) sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, x));
      if (live && lane_in_row == 0)
        *reinterpret_cast<float*>(static_cast<uint16_t*>(p.dq) + b * p.dq_batch_stride +
                                  row * p.dq_row_stride + h * p.dq_head_stride) = sum;
    }
  }
}

// ------------------------------------------------------------------ pass 3
template <class Cfg>
struct DqKernel {
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBm = Cfg::kDqBlockM;
  static constexpr int kBn = Cfg::kDqBlockN;
  static constexpr int kT = Cfg::kDqThreads;
  static constexpr int kSRegs = kBn / 2;  // S slice: 64 x Bn f32 over 128 threads
  static constexpr int kAccRegs = kD / 2;

  struct Smem {
    uint8_t* base;
    __device__ uint8_t* q() const { return base + Cfg::kDqOffQ; }
    __device__ uint8_t* dout() const { return base + Cfg::kDqOffDo; }
    __device__ uint8_t* k(int s) const { return base + Cfg::kDqOffK + s * Cfg::kDqKVBytes; }
    __device__ uint8_t* v(int s) const { return base + Cfg::kDqOffV + s * Cfg::kDqKVBytes; }
  };

  __device__ static void load_kv_tile(const AttentionBwdParams& p, const Smem& sm,
                                      const SeqGeom& sg, int b, int hk, int n, int s, int tid) {
    const int k0 = n * kBn;
    const int64_t row0 = sg.k_row0 + k0;
    const uint16_t* ks = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                         row0 * p.k_row_stride + hk * p.k_head_stride;
    const uint16_t* vs = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                         row0 * p.v_row_stride + hk * p.v_head_stride;
    load_tile<kBn, kD, kT>(sm.k(s), ks, p.k_row_stride, sg.lk - k0, tid);
    load_tile<kBn, kD, kT>(sm.v(s), vs, p.v_row_stride, sg.lk - k0, tid);
  }

  __device__ static void run(const AttentionBwdParams& p, const Smem& sm) {
    const int tid = threadIdx.x;
    const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
    const int q4 = lane % 4;
    const BwdScore score(p);
    constexpr uint32_t kRow = Cfg::kRowBytes;
    Walker walker;
    int b, h, m;
    for (long unit = blockIdx.x; walker.get<false>(p, unit, p.num_heads, kBm, b, h, m);
         unit += gridDim.x) {
      const SeqGeom sg = seq_geom(p, b);
      const BwdVisibility vis{sg.lq, sg.lk, p.window_left, p.window_right};
      const int hk = h / p.head_group;
      // Query tiles of a (sequence, head) are taken last row first: under a
      // causal mask the longest units start first (FREE: order only).
      const int m0 = ((sg.lq + kBm - 1) / kBm - 1 - m) * kBm;
      const int wrow0 = m0 + 64 * wg;                    // this warpgroup's first row
      const int row_r = wrow0 + warp * 16 + lane / 4;  // this thread's accumulator row 0

      // Q, dO tiles (rows past lq zero); the previous unit ended with a
      // __syncthreads after its last wgmma wait.
      {
        const int64_t row0 = sg.q_row0 + m0;
        const uint16_t* qs = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                             row0 * p.q_row_stride + h * p.q_head_stride;
        const uint16_t* ds = static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
                             row0 * p.do_row_stride + h * p.do_head_stride;
        load_tile<kBm, kD, kT>(sm.q(), qs, p.q_row_stride, sg.lq - m0, tid);
        load_tile<kBm, kD, kT>(sm.dout(), ds, p.do_row_stride, sg.lq - m0, tid);
        cp_async_commit();
      }
      // lse2 and D of this thread's two rows (D from pass 1, in dq).
      float lse2[2], dd[2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int i = row_r + 8 * hh;
        lse2[hh] = CUDART_INF_F;
        dd[hh] = 0.f;
        if (i < sg.lq) {
          const int64_t r = sg.q_row0 + i;
          constexpr float kLog2e = 1.4426950408889634f;
          lse2[hh] = __fmul_rn(
              p.lse[b * p.lse_batch_stride + r * p.lse_row_stride + h * p.lse_head_stride], kLog2e);
          dd[hh] = *reinterpret_cast<const float*>(static_cast<const uint16_t*>(p.dq) +
                                                   b * p.dq_batch_stride + r * p.dq_row_stride +
                                                   h * p.dq_head_stride);
        }
      }

      // KV tiles any row of the CTA sees.
      int k_lo, k_hi;
      vis.keys_of_rows(m0, m0 + kBm - 1, k_lo, k_hi);
      const int n_lo = k_lo / kBn;
      const int n_tiles = k_hi < k_lo ? 0 : k_hi / kBn - n_lo + 1;
      // And the ones this warpgroup's rows see (others add exact zeros).
      int w_lo, w_hi;
      vis.keys_of_rows(wrow0, wrow0 + 63, w_lo, w_hi);
      // The keys this thread's two rows see (masks of the raw path).
      int klo[2], khi[2];
      vis.keys_of_row(row_r, klo[0], khi[0]);
      vis.keys_of_row(row_r + 8, klo[1], khi[1]);

      float acc[kAccRegs];
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.f;

      // Ring of kS stages, KV tile t in stage t % kS (same protocol as
      // pass 2: one __syncthreads per tile, after which stage (t - 1) % kS
      // is refilled with tile t + kS - 1).
      constexpr int kS = Cfg::kStages;
      auto load_t = [&](int t) {
        if (t < n_tiles) load_kv_tile(p, sm, sg, b, hk, n_lo + t, t % kS, tid);
        cp_async_commit();
      };
#pragma unroll
      for (int t = 0; t < kS - 1; ++t) load_t(t);
      for (int t = 0; t < n_tiles; ++t) {
        cp_async_wait<kS - 2>();
        fence_proxy_async_smem();
        __syncthreads();
        load_t(t + kS - 1);
        const int k0 = (n_lo + t) * kBn;
        if (w_hi >= w_lo && w_hi >= k0 && w_lo <= k0 + kBn - 1) {
          const int s = t % kS;
          const bool full = vis.all_visible(wrow0, 64, k0, kBn);
          const uint32_t q_addr = smem_addr(sm.q()) + 64 * wg * kRow;
          const uint32_t do_addr = smem_addr(sm.dout()) + 64 * wg * kRow;
          const uint32_t k_addr = smem_addr(sm.k(s));
          const uint32_t v_addr = smem_addr(sm.v(s));
          float st[kSRegs];
          float dpt[kSRegs];
          uint32_t af[kBn / 16][4];
          // gemm Q_wg * K^T -> S (group 1); gemm dO_wg * V^T -> dP (group 2)
          issue_ss<kBn, kD, Cfg::kBf16>(st, q_addr, kBm * kRow, k_addr, kBn * kRow);
          issue_ss<kBn, kD, Cfg::kBf16>(dpt, do_addr, kBm * kRow, v_addr, kBn * kRow);
          // Element e = 4c + 2hh + jj: row row_r + 8hh, key k0 + 8c + 2q4 + jj.
          if (score.raw) {
            // Raw exponent form (no softcap, positive scale): BwdScore::p
            // and ::g without branches per element; on tiles that are not
            // fully visible the mask is applied by selects (P = G = 0
            // where invisible). P while dP still runs.
            auto body = [&](auto masked) {
              constexpr bool kMasked = decltype(masked)::value;
              auto visible = [&](int e) -> bool {
                if constexpr (!kMasked) {
                  return true;
                } else {
                  const int j = k0 + 8 * (e / 4) + 2 * q4 + (e % 2), hh = (e / 2) % 2;
                  return (j >= klo[hh]) & (j <= khi[hh]);
                }
              };
              wgmma_wait<1>();
              fence_regs(st);
#pragma unroll
              for (int e = 0; e < kSRegs; ++e) {
                const float pv =
                    exp2_approx(__fmaf_rn(st[e], score.scale_log2, -lse2[(e / 2) % 2]));
                st[e] = visible(e) ? pv : 0.f;
              }
              wgmma_wait<0>();
              fence_regs(dpt);
#pragma unroll
              for (int e = 0; e < kSRegs; ++e) {
                const float g = __fmul_rn(st[e], __fsub_rn(dpt[e], dd[(e / 2) % 2]));
                dpt[e] = visible(e) ? g : 0.f;
              }
            };
            if (full)
              body(std::false_type{});
            else
              body(std::true_type{});
          } else {
          wgmma_wait<0>();
          fence_regs(st);
          fence_regs(dpt);
#pragma unroll
          for (int e = 0; e < kSRegs; ++e) {
            const int c = e / 4, hh = (e / 2) % 2, jj = e % 2;
            float g = 0.f;
            if (full || vis.visible(row_r + 8 * hh, k0 + 8 * c + 2 * q4 + jj)) {
              const float pv = score.p(st[e], lse2[hh]);
              g = score.g(pv, dpt[e], dd[hh], st[e]);
            }
            dpt[e] = g;
          }
          }
          pack_a<kBn, Cfg::kBf16>(dpt, af);
          // gemm round(G) * K -> dQ (group 3)
          issue_rs<kBn, kD, Cfg::kBf16>(acc, af, k_addr, kBn * kRow);
          wgmma_wait<0>();
          fence_regs(acc);
          fence_regs(af);
        }
      }
      cp_async_wait<0>();
      __syncthreads();  // Q, dO and every stage free for the next unit

      // dq = round(scale * dQ). Overwrites D of the same rows, read above by
      // this thread only... and by pass 2, which has finished.
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int i = row_r + 8 * hh;
        if (i >= sg.lq) continue;
        uint16_t* row = static_cast<uint16_t*>(p.dq) + b * p.dq_batch_stride +
                        int64_t(sg.q_row0 + i) * p.dq_row_stride + h * p.dq_head_stride;
#pragma unroll
        for (int c = 0; c < kD / 8; ++c)
          *reinterpret_cast<uint32_t*>(row + 8 * c + 2 * q4) =
              pack2<Cfg::kBf16>(__fmul_rn(p.softmax_scale, acc[4 * c + 2 * hh]),
                                __fmul_rn(p.softmax_scale, acc[4 * c + 2 * hh + 1]));
      }
    }
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kDqThreads, 1)
    attention_bwd_dq_sm90_kernel(const __grid_constant__ AttentionBwdParams p) {
  extern __shared__ uint8_t smem_raw[];
  using K = DqKernel<Cfg>;
  const typename K::Smem sm{reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023))};
  K::run(p, sm);
}

}  // namespace samebits::cuda::sm90::bwd
