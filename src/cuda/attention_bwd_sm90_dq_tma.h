// sm90 attention backward, pass 3 (dQ), v3: a TMA producer warp and an
// mbarrier ring (build switch SAMEBITS_BWD_TMA, default on; OFF builds the
// v2 kernel of attention_bwd_sm90_dq.h instead).
//
// Same work units, same tiles, same element formulas and the same wgmma
// chains as v2 (the consumer body below is v2's loop body with the loads
// replaced by barrier waits): every dq element is still one f32
// accumulator over the k16 steps of its keys in ascending order, so the
// bits, and the 50-run hashes, are v2's. What changes is who loads and how
// the warpgroups wait:
//
//   warps 0 .. 4 * kDqWarpgroups - 1   consumers, 64 query rows a warpgroup
//   the producer                       Q, dO once per unit, then the K, V
//                                      tiles in ascending order: the last
//                                      warp (d = 256), or warp 0 of a third
//                                      warpgroup that gives its registers
//                                      to the consumers (kDqWide, d <= 128)
//
// v2 met all 256 threads at one __syncthreads per KV tile, so both
// warpgroups started every tile together and their P / G phases collided.
// Here each consumer warpgroup waits only for the data it reads and
// releases a stage on its own: the two can drift by up to the ring's depth.
//
// Barriers (shared memory, BwdConfig::kDqTmaBarriers):
//   q_full        producer -> consumers: Q and dO of the unit landed.
//                 32 arrivals: every producer lane (lane 0's with the
//                 transaction bytes, or each after its part of a hand load)
//   q_empty       consumers -> producer: every consumer thread has finished
//                 its unit (last wgmma waited), Q and dO may be overwritten.
//                 kConsumerThreads arrivals
//   kv_full[s]    producer -> consumers: K and V of a tile in stage s.
//                 32 arrivals, as q_full
//   kv_empty[s]   consumers -> producer: every consumer thread is done with
//                 stage s (its last wgmma on it waited, or it skipped the
//                 tile after kv_full). kConsumerThreads arrivals
// Each thread arrives for itself, so no barrier completes before the
// stores and reads of every thread it stands for (no warp-level hand-off).
// Every consumer thread waits kv_full before it arrives on kv_empty, even for
// a tile its warpgroup skips, so a phase of kv_empty never completes while
// the TMA writes of the same phase are in flight.
// Both sides walk the same units and tiles, so running counters (units,
// tiles) give each barrier's stage and phase parity on both sides.
//
// Tiles that cross a sequence end (rows >= lq of Q / dO, keys >= lk of K /
// V, lk = seqused_k when set) are loaded by the producer warp by hand with
// those rows zeroed, as in the forward: TMA zero-fills only outside the
// tensor, not at a varlen sequence end, and a neighbour's rows (or NaNs)
// must never enter a product (numerics.md "Visibility"). TMA therefore
// reads only rows inside the sequence.
#pragma once

#include "cuda/attention_bwd_sm90_dq.h"
#include "cuda/attention_bwd_sm90_tile_loads.h"

namespace samebits::cuda::sm90::bwd {

template <class Cfg>
struct DqTmaKernel {
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBm = Cfg::kDqBlockM;
  static constexpr int kBn = Cfg::kDqTmaBlockN;
  static constexpr int kS = Cfg::kDqTmaStages;
  static constexpr int kConsumerThreads = Cfg::kDqThreads;
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  static constexpr int kSRegs = kBn / 2;  // S slice: 64 x Bn f32 over 128 threads
  static constexpr int kAccRegs = kD / 2;

  struct Smem {
    uint8_t* base;  // 1024-byte aligned
    __device__ uint8_t* q() const { return base + Cfg::kDqTmaOffQ; }
    __device__ uint8_t* dout() const { return base + Cfg::kDqTmaOffDo; }
    __device__ uint8_t* k(int s) const { return base + Cfg::kDqTmaOffK + s * Cfg::kDqTmaKVBytes; }
    __device__ uint8_t* v(int s) const { return base + Cfg::kDqTmaOffV + s * Cfg::kDqTmaKVBytes; }
    __device__ uint64_t* bars() const {
      return reinterpret_cast<uint64_t*>(base + Cfg::kDqTmaOffBars);
    }
    __device__ uint64_t* q_full() const { return bars(); }
    __device__ uint64_t* q_empty() const { return bars() + 1; }
    __device__ uint64_t* kv_full(int s) const { return bars() + 2 + s; }
    __device__ uint64_t* kv_empty(int s) const { return bars() + 2 + kS + s; }
    __device__ uint64_t* tail() const { return bars() + 2 + 2 * kS; }
  };

  // The unit's tile geometry, computed the same way by both roles (v2's
  // DqKernel::run): first row m0 (last tile first), KV tiles n_lo ..
  // n_lo + n_tiles - 1 that some row of the CTA sees.
  struct UnitTiles {
    SeqGeom sg;
    BwdVisibility vis;
    int m0, n_lo, n_tiles;
    __device__ __forceinline__ UnitTiles(const AttentionBwdParams& p, int b, int m) {
      sg = seq_geom(p, b);
      vis = BwdVisibility{sg.lq, sg.lk, p.window_left, p.window_right};
      m0 = ((sg.lq + kBm - 1) / kBm - 1 - m) * kBm;
      int k_lo, k_hi;
      vis.keys_of_rows(m0, m0 + kBm - 1, k_lo, k_hi);
      n_lo = k_lo / kBn;
      n_tiles = k_hi < k_lo ? 0 : k_hi / kBn - n_lo + 1;
    }
  };


  // ---------------------------------------------------------------- producer
  // (tile loads: attention_bwd_sm90_tile_loads.h)
  // After a hand load: every lane waits for its own copies, fences them
  // toward the async proxy (wgmma reads them) and arrives itself, so the
  // barrier completes only once every lane's stores are ordered (the full
  // barriers count 32 arrivals; on the TMA path lane 0 arrives with the
  // transaction bytes and the other lanes plainly).
  __device__ static void signal_after_hand_load(uint64_t* bar) {
    hand_tiles_landed();
    fence_proxy_async_smem();
    mbar_arrive(bar);
  }

  __device__ static void producer(const AttentionBwdParams& p, const BwdMaps& maps,
                                  const Smem& sm) {
    const int lane = threadIdx.x % 32;
    if (lane == 0) {
      prefetch_tensor_map(&maps.q);
      prefetch_tensor_map(&maps.dout);
      prefetch_tensor_map(&maps.k);
      prefetch_tensor_map(&maps.v);
    }
    const bool q_packed = p.cu_seqlens_q != nullptr, k_packed = p.cu_seqlens_k != nullptr;
    Walker walker;
    int b, h, m;
    uint32_t unit_iter = 0;  // units done: parity of q_empty
    uint32_t tile_iter = 0;  // KV tiles done: stage and parity of kv_empty
    uint32_t tail_iter = 0;  // tiles read through the tail barrier: its parity
    const bool walk_packed = p.cu_seqlens_q != nullptr;
    for (long unit = zigzag_unit(0, walk_packed);
         walker.get<false>(p, unit, p.num_heads, kBm, b, h, m);
         unit = zigzag_unit(++unit_iter, walk_packed)) {
      const UnitTiles u(p, b, m);
      const int hk = h / p.head_group;
      const int qb = q_packed ? 0 : b, kb = k_packed ? 0 : b;

      // K, V of tile t into stage tile_iter % kS, once every consumer warp
      // released that stage.
      auto load_kv = [&](int t) {
        const int s = tile_iter % kS;
        const uint32_t parity = (tile_iter / kS) & 1;
        const int k0 = (u.n_lo + t) * kBn;
        mbar_wait(sm.kv_empty(s), parity ^ 1);
        if (k0 + kBn <= u.sg.lk || u.sg.k_tail_tma) {
          if (lane == 0) {
            mbar_arrive_expect_tx(sm.kv_full(s), 2 * Cfg::kDqTmaKVBytes);
            tile_by_tma<Cfg, kBn>(sm.k(s), &maps.k, sm.kv_full(s), u.sg.k_row0 + k0, hk, kb);
            tile_by_tma<Cfg, kBn>(sm.v(s), &maps.v, sm.kv_full(s), u.sg.k_row0 + k0, hk, kb);
          } else {
            mbar_arrive(sm.kv_full(s));
          }
        } else if (u.sg.k_row0 + k0 + kBn <= u.sg.k_end) {
          // A packed batch's tile that crosses lk whose rows past it (a
          // neighbour's, or keys past seqused_k) are rows in use: K and V by
          // TMA onto the tail barrier, then K's rows >= lk zeroed (dQ += G K
          // with G = 0 there, and 0 * a NaN is not 0). V stays: dP of keys
          // >= lk reaches nothing, G = 0 is selected there.
          if (lane == 0) {
            mbar_arrive_expect_tx(sm.tail(), 2 * Cfg::kDqTmaKVBytes);
            tile_by_tma<Cfg, kBn>(sm.k(s), &maps.k, sm.tail(), u.sg.k_row0 + k0, hk, kb);
            tile_by_tma<Cfg, kBn>(sm.v(s), &maps.v, sm.tail(), u.sg.k_row0 + k0, hk, kb);
          }
          mbar_wait(sm.tail(), tail_iter++ & 1);
          zero_tile_rows<kBn, Cfg::kHeadDim, 32>(sm.k(s), u.sg.lk - k0, lane);
          fence_proxy_async_smem();
          mbar_arrive(sm.kv_full(s));
        } else {
          // The tile that crosses lk: keys >= lk zero (they are masked too).
          const int64_t row0 = u.sg.k_row0 + k0;
          const uint16_t* ks = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                               row0 * p.k_row_stride + hk * p.k_head_stride;
          const uint16_t* vs = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                               row0 * p.v_row_stride + hk * p.v_head_stride;
          load_tile<kBn, Cfg::kHeadDim, 32>(sm.k(s), ks, p.k_row_stride, u.sg.lk - k0, lane);
          load_tile<kBn, Cfg::kHeadDim, 32>(sm.v(s), vs, p.v_row_stride, u.sg.lk - k0, lane);
          signal_after_hand_load(sm.kv_full(s));
        }
        ++tile_iter;
      };

      // The first kS tiles go before Q, dO: their stages were last used by
      // earlier units, whose loads were all issued, so these waits need no
      // consumer progress on this unit, and the ring refills while the
      // consumers finish the previous unit. (A tile past kS would wait for
      // this unit's first tile, which needs Q: it comes after Q.)
      const int early = min(u.n_tiles, kS);
      for (int t = 0; t < early; ++t) load_kv(t);

      // Q, dO (kBm x d each), once every consumer warp finished the
      // previous unit.
      mbar_wait(sm.q_empty(), (unit_iter & 1) ^ 1);
      // A tile that crosses lq goes through TMA where the rows past lq are
      // zero-filled (dense) or are rows in use of a packed neighbour: a
      // row's dq depends on that row's Q, dO, lse and D alone, and rows >=
      // lq are never stored, so what they hold reaches no stored value.
      if (u.m0 + kBm <= u.sg.lq || u.sg.q_tail_tma || u.sg.q_row0 + u.m0 + kBm <= u.sg.q_end) {
        if (lane == 0) {
          mbar_arrive_expect_tx(sm.q_full(), 2 * Cfg::kDqQBytes);
          tile_by_tma<Cfg, kBm>(sm.q(), &maps.q, sm.q_full(), u.sg.q_row0 + u.m0, h, qb);
          tile_by_tma<Cfg, kBm>(sm.dout(), &maps.dout, sm.q_full(), u.sg.q_row0 + u.m0, h, qb);
        } else {
          mbar_arrive(sm.q_full());
        }
      } else {
        // The tile that crosses lq: rows >= lq zero (P = G = 0 there).
        const int64_t row0 = u.sg.q_row0 + u.m0;
        const uint16_t* qs = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                             row0 * p.q_row_stride + h * p.q_head_stride;
        const uint16_t* ds = static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
                             row0 * p.do_row_stride + h * p.do_head_stride;
        load_tile<kBm, Cfg::kHeadDim, 32>(sm.q(), qs, p.q_row_stride, u.sg.lq - u.m0, lane);
        load_tile<kBm, Cfg::kHeadDim, 32>(sm.dout(), ds, p.do_row_stride, u.sg.lq - u.m0, lane);
        signal_after_hand_load(sm.q_full());
      }

      for (int t = early; t < u.n_tiles; ++t) load_kv(t);
    }
  }

  // ---------------------------------------------------------------- consumers
  // v2's DqKernel::run for one warpgroup, with the cp.async ring and its
  // __syncthreads replaced by the barriers above. Keep the tile body in
  // step with v2 (attention_bwd_sm90_dq.h): it is what fixes the bits.
  // kRawOnly: the raw score form only (the launcher checked BwdScore::raw);
  // without the per-element softcap path ptxas allocates the raw body's
  // registers better (same operations, same bits).
  template <bool kRawOnly = false>
  __device__ static void consumer(const AttentionBwdParams& p, const Smem& sm) {
    // The raw-only kernel at head dim 64: a tile's dQ product runs on
    // into the next tile's score products (Cfg::kDqChain).
    constexpr bool kChain = kRawOnly && Cfg::kDqChain;
    const int tid = threadIdx.x;
    // warp-uniform to the compiler (shuffled from lane 0): the wgmma
    // descriptors derived from them stay in uniform registers
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0), warp = __shfl_sync(0xffffffffu, (tid % 128) / 32, 0),
              lane = tid % 32;
    const int q4 = lane % 4;
    const BwdScore score(p);
    constexpr uint32_t kRow = Cfg::kRowBytes;
    Walker walker;
    int b, h, m;
    uint32_t unit_iter = 0, tile_iter = 0;
    const bool walk_packed = p.cu_seqlens_q != nullptr;
    for (long unit = zigzag_unit(0, walk_packed);
         walker.get<false>(p, unit, p.num_heads, kBm, b, h, m);
         unit = zigzag_unit(++unit_iter, walk_packed)) {
      const UnitTiles u(p, b, m);
      const BwdVisibility& vis = u.vis;
      const SeqGeom& sg = u.sg;
      const int wrow0 = u.m0 + 64 * wg;                  // this warpgroup's first row
      const int row_r = wrow0 + warp * 16 + lane / 4;  // this thread's accumulator row 0

      // lse2 and D of this thread's two rows (D from pass 1, in dq); read
      // while the producer loads Q, dO.
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
      // The keys this warpgroup's rows see (other tiles add exact zeros),
      // and the keys this thread's two rows see (masks of the raw path).
      int w_lo, w_hi;
      vis.keys_of_rows(wrow0, wrow0 + 63, w_lo, w_hi);
      int klo[2], khi[2];
      vis.keys_of_row(row_r, klo[0], khi[0]);
      vis.keys_of_row(row_r + 8, klo[1], khi[1]);

      float acc[kAccRegs];
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.f;
      // The A fragments of the dQ product. kChain: the product still runs
      // after its tile; pending is the stage it reads, released by the
      // next tile's first wait, a skipped tile or the unit's end (nullptr:
      // none).
      uint32_t af[kBn / 16][4];
      uint64_t* pending = nullptr;

      mbar_wait(sm.q_full(), unit_iter & 1);  // Q, dO landed
      for (int t = 0; t < u.n_tiles; ++t, ++tile_iter) {
        const int s = tile_iter % kS;
        mbar_wait(sm.kv_full(s), (tile_iter / kS) & 1);  // K, V of tile t landed
        const int k0 = (u.n_lo + t) * kBn;
        if (w_hi >= w_lo && w_hi >= k0 && w_lo <= k0 + kBn - 1) {
          const bool full = vis.all_visible(wrow0, 64, k0, kBn);
          const uint32_t q_addr = smem_addr(sm.q()) + 64 * wg * kRow;
          const uint32_t do_addr = smem_addr(sm.dout()) + 64 * wg * kRow;
          const uint32_t k_addr = smem_addr(sm.k(s));
          const uint32_t v_addr = smem_addr(sm.v(s));
          float st[kSRegs];
          float dpt[kSRegs];
          // gemm Q_wg * K^T -> S (group 1); gemm dO_wg * V^T -> dP (group 2)
          issue_ss<kBn, kD, Cfg::kBf16>(st, q_addr, kBm * kRow, k_addr, kBn * kRow);
          issue_ss<kBn, kD, Cfg::kBf16>(dpt, do_addr, kBm * kRow, v_addr, kBn * kRow);
          // Element e = 4c + 2hh + jj: row row_r + 8hh, key k0 + 8c + 2q4 + jj.
          if (kRawOnly || score.raw) {
            // Raw exponent form: P while dP still runs; masks by selects
            // on tiles that are not fully visible (v2, same operations).
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
              wgmma_wait<1>();  // S landed (dP may still run), and kChain's previous dQ product
              fence_regs(st);
              if constexpr (kChain) {
                fence_regs(acc);
                fence_regs(af);
                if (pending != nullptr) mbar_arrive(pending);
                pending = nullptr;
              }
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
          } else if constexpr (!kRawOnly) {
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
          if constexpr (kChain) {
            pending = sm.kv_empty(s);  // read by the dQ product, still running
            continue;
          }
          wgmma_wait<0>();
          fence_regs(acc);
          fence_regs(af);
        } else if (kChain && pending != nullptr) {
          // A skipped tile: the stage the running product reads is
          // released now, not at the next tile this warpgroup computes
          // (the producer may need it before that tile).
          wgmma_wait<0>();
          fence_regs(acc);
          fence_regs(af);
          mbar_arrive(pending);
          pending = nullptr;
        }
        mbar_arrive(sm.kv_empty(s));  // release K, V of stage s (this thread's reads)
      }
      if constexpr (kChain) {
        // Unconditional, as the dK/dV pass's drain (a wait on one path
        // only makes ptxas serialize every wgmma).
        wgmma_wait<0>();
        fence_regs(acc);
        fence_regs(af);
        if (pending != nullptr) mbar_arrive(pending);
      }
      mbar_arrive(sm.q_empty());  // release Q, dO (this thread's reads)

      // dq = round(scale * dQ). Overwrites D of the same rows, read above by
      // this thread only, and by pass 2, which has finished.
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

// kRawOnly: DqTmaKernel::consumer's (the launcher picks it; same bits).
template <class Cfg, bool kRawOnly = false>
__global__ void __launch_bounds__(Cfg::kDqTmaThreads, 1)
    attention_bwd_dq_tma_sm90_kernel(const __grid_constant__ AttentionBwdParams p,
                                     const __grid_constant__ BwdMaps maps) {
  extern __shared__ uint8_t smem_raw[];
  using K = DqTmaKernel<Cfg>;
  const typename K::Smem sm{reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023))};
  if (threadIdx.x == 0) {
    // every producer lane and every consumer thread arrives (see
    // signal_after_hand_load and the consumers' releases)
    mbar_init(sm.q_full(), 32);
    mbar_init(sm.q_empty(), K::kConsumerThreads);
    mbar_init(sm.tail(), 1);
    for (int s = 0; s < K::kS; ++s) {
      mbar_init(sm.kv_full(s), 32);
      mbar_init(sm.kv_empty(s), K::kConsumerThreads);
    }
    fence_barrier_init();
  }
  __syncthreads();  // the only CTA-wide barrier: barriers initialised
  if constexpr (Cfg::kDqWide) {
    // warpgroup 2 gives its registers to the consumers; its warp 0 loads
    const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
    if (wg == 2) {
      setmaxnreg_dec<Cfg::kDqTmaProducerRegs>();
      if (threadIdx.x / 32 == 8) K::producer(p, maps, sm);
    } else {
      setmaxnreg_inc<Cfg::kDqTmaConsumerRegs>();
      K::template consumer<kRawOnly>(p, sm);
    }
  } else if (threadIdx.x >= K::kConsumerThreads) {
    K::producer(p, maps, sm);
  } else {
    K::template consumer<kRawOnly>(p, sm);
  }
}

}  // namespace samebits::cuda::sm90::bwd
