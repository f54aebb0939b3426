// sm90 attention backward, pass 2 (dK, dV), v3: a producer warpgroup (TMA
// and mbarriers) instead of cp.async by every thread and one __syncthreads
// per tile. Build switch SAMEBITS_BWD_TMA_DKDV (default on; needs
// SAMEBITS_BWD_TMA); with it off, the v2 kernel in
// attention_bwd_sm90_dkdv.h runs instead.
//
// Same work units, same tiles, same walk, and the same tile functions: the
// consumers call v2's DkdvKernel::tile_raw / ::tile_raw_joint / ::tile on
// the same shared memory layout, so every product and element formula, and
// therefore every bit, is v2's.
//
//   warpgroups 0, 1   consumers, v2's roles (d = 64, 128: 64 keys each, dK
//                     and dV; d = 256: warpgroup 0 dV, warpgroup 1 dK),
//                     setmaxnreg up to kDkdvConsumerRegs
//   warpgroup 2       producer, setmaxnreg down to kDkdvProducerRegs; its
//                     warp 0 loads, the other three exit
//
// Barriers (shared memory, BwdConfig::kDkdvTmaBarriers):
//   kv_full       producer -> consumers: K_n, V_n of the unit landed.
//                 32 arrivals, every producer lane after its own stores
//                 (lane 0's carries the TMA transaction bytes)
//   kv_empty      consumers -> producer: every consumer thread finished the
//                 unit, K and V may be overwritten. 256 arrivals
//   q_full[s]     producer -> consumers: Q, dO (TMA or by hand) and lse, D
//                 (cp.async: strided f32 vectors, not a tile) of a query
//                 tile in stage s. 32 arrivals, one a producer lane: where
//                 Q, dO come by TMA, lane 0 first announces their bytes
//                 (expect_tx, no arrival) and every lane's arrival is
//                 asynchronous, made once its lse, D copies have landed
//                 (cp.async.mbarrier.arrive.noinc), so the producer goes on
//                 to the next tile without waiting for those loads;
//                 otherwise every lane arrives after its own copies and
//                 stores
//   q_empty[s]    consumers -> producer: every consumer thread is done with
//                 stage s (its tile ended with wgmma_wait<0>; its shared
//                 loads of lse, D, P^T are before its arrival). 256 arrivals
// Every thread that touches a stage with generic loads or stores arrives
// itself: an arrive releases only its own thread's accesses, so no
// __syncwarp + one-lane hand-off is relied on.
//   named barrier 1   (v2) dV warpgroup -> dK warpgroup: P^T written
//   pt_empty      dK warpgroup -> dV warpgroup: P^T read, it may be
//                 rewritten (v2 had the per-tile __syncthreads for this).
//                 128 arrivals, every dK thread after its own reads; the
//                 dV warpgroup waits before each write (d >= 128 only).
// Every consumer warp waits q_full before it arrives on q_empty, also for
// a tile it skips. Running counters (units, tiles) give each barrier's
// stage and parity on both sides.
//
// Tiles that cross a sequence end (query rows >= lq, keys >= lk) are loaded
// by hand with those rows zeroed, as in the forward and in v2 (TMA
// zero-fills only outside the tensor, not at a varlen sequence end).
#pragma once

#include "cuda/attention_bwd_sm90_dkdv.h"
#include "cuda/attention_bwd_sm90_tile_loads.h"

namespace samebits::cuda::sm90::bwd {

template <class Cfg>
struct DkdvTmaKernel {
  using V2 = DkdvKernel<Cfg>;
  using Smem = typename V2::Smem;
  static constexpr int kD = Cfg::kHeadDim;
  static constexpr int kBn = Cfg::kBlockN;
  static constexpr int kBm = Cfg::kBlockM;
  static constexpr int kS = Cfg::kStages;
  static constexpr int kConsumerWarps = 8;
  static constexpr int kAccRegs = kD / 2;
  static constexpr bool kPtFree = Cfg::kShareP;  // P^T hand-off needs barrier 2
  // The kernel's forms (its template argument kForm; the launcher picks
  // one, launch_impl.h; every form gives the same bits):
  //   kGeneral      any score form: softcap and non-positive scales (BwdScore
  //                 per element) and the raw form.
  //   kRaw          the raw form only. Without the softcap path in the same
  //                 function, ptxas spills less in the raw tile bodies at
  //                 head dim 128 (160 bytes against 472) and the pass runs
  //                 1-5 % faster (H200). At head dims 64 and 128 its
  //                 tiles run DkdvKernel::tile_raw_joint
  //                 (BwdConfig::kRawJoint); the rule runs it at d 128.
  //   kRawChained   the raw form, tiles chained without a drain
  //                 (DkdvKernel::tile_raw, kPipe): the next tile's S^T
  //                 queues behind this tile's dK. With the softcap path in
  //                 the same function ptxas finds too few registers for a
  //                 dK product in flight across tiles and serializes every
  //                 wgmma (C7512).
  //   kRawHeld      kRawChained with K and V of the warpgroup's keys held
  //                 as A fragments in registers for the unit
  //                 (DkdvKernel::HeldKV): the score products read only Q
  //                 and dO from shared memory, and K_n, V_n are released
  //                 to the producer as soon as they are in registers, so
  //                 the next unit's K, V load under this unit's tiles.
  //                 Where Cfg::kHeldKV (16 registers each at d 64).
  // The raw forms exist where one warpgroup owns dK and dV (head dims 64,
  // 128); with split roles (d = 256, whose general kernel does not spill)
  // and in the fused build there is only kGeneral.
  enum Form : int { kGeneral = 0, kRaw = 1, kRawChained = 2, kRawHeld = 3 };
  static constexpr bool kHasRawForms = !Cfg::kSplitRoles && !Cfg::kFused;
  static constexpr bool kHasHeldForm = kHasRawForms && Cfg::kHeldKV;

  struct Bars {
    uint64_t* base;
    __device__ uint64_t* kv_full() const { return base; }
    __device__ uint64_t* kv_empty() const { return base + 1; }
    __device__ uint64_t* q_full(int s) const { return base + 2 + s; }
    __device__ uint64_t* q_empty(int s) const { return base + 2 + kS + s; }
    __device__ uint64_t* pt_empty() const { return base + 2 + 2 * kS; }
    __device__ uint64_t* tail() const { return base + Cfg::kDkdvTmaBarriers - 1; }
  };

  // The unit's geometry, computed the same way by both roles (v2's
  // DkdvKernel::run): keys k0 .. k0 + kBn - 1; query tiles m_lo ..
  // m_lo + n_m - 1 of each of the group's head_group heads, tile t =
  // (head t / n_m, query tile m_lo + t % n_m).
  struct UnitTiles {
    SeqGeom sg;
    BwdVisibility vis;
    int k0, m_lo, n_m, n_tiles;
    __device__ __forceinline__ UnitTiles(const AttentionBwdParams& p, int b, int n) {
      sg = seq_geom(p, b);
      vis = BwdVisibility{sg.lq, sg.lk, p.window_left, p.window_right};
      k0 = n * kBn;
      int r_lo, r_hi;
      vis.rows_of_keys(k0, k0 + kBn - 1, r_lo, r_hi);
      m_lo = r_lo / kBm;
      n_m = r_hi < r_lo ? 0 : r_hi / kBm - m_lo + 1;
      n_tiles = n_m * p.head_group;
    }
  };

  // The (KV head g, KV block n) of the unit Walker numbered (g, nn) inside
  // sequence b (head-major, blocks ascending). The three passes keep it.
  // The fused kernel (Cfg::kFused) walks blocks descending, since its dQ
  // fold adds block n + 1's partial before block n's and a unit must only
  // wait for units earlier in the walk; with p.fused_block_major, block
  // before head (FREE: which CTA runs a unit, and when, moves no bit).
  __device__ __forceinline__ static void unit_of(const AttentionBwdParams& p, int b, int& g, int& n) {
    if constexpr (Cfg::kFused) {
      const int len = p.cu_seqlens_k ? p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b] : p.seqlen_k;
      const int blocks = (len + kBn - 1) / kBn;
      if (p.fused_block_major) {
        const long r = long(g) * blocks + n;
        g = static_cast<int>(r % p.num_heads_k);
        n = static_cast<int>(r / p.num_heads_k);
      }
      n = blocks - 1 - n;
    }
  }

  // The barriers' arrival counts (above), set by one thread before the
  // kernel's only __syncthreads; the caller fences them (fence_barrier_init).
  __device__ static void init_barriers(const Bars& bars) {
    mbar_init(bars.kv_full(), 32);
    mbar_init(bars.kv_empty(), kConsumerWarps * 32);
    for (int s = 0; s < kS; ++s) {
      mbar_init(bars.q_full(s), 32);
      mbar_init(bars.q_empty(s), kConsumerWarps * 32);
    }
    mbar_init(bars.pt_empty(), 128);
    mbar_init(bars.tail(), 1);
  }

  // ---------------------------------------------------------------- producer
  // (tile loads: attention_bwd_sm90_tile_loads.h)
  __device__ static void producer(const AttentionBwdParams& p, const BwdMaps& maps,
                                  const Smem& sm, const Bars& bars) {
    const int lane = threadIdx.x % 32;
    if (lane == 0) {
      prefetch_tensor_map(&maps.q);
      prefetch_tensor_map(&maps.dout);
      prefetch_tensor_map(&maps.k);
      prefetch_tensor_map(&maps.v);
    }
    const bool q_packed = p.cu_seqlens_q != nullptr, k_packed = p.cu_seqlens_k != nullptr;
    Walker walker;
    int b, g, n;
    uint32_t unit_iter = 0;  // units done: parity of kv_empty
    uint32_t tile_iter = 0;  // query tiles done: stage and parity of q_empty
    uint32_t tail_iter = 0;  // tiles read through the tail barrier: its parity
    const bool walk_packed = p.cu_seqlens_k != nullptr;
    for (long unit = zigzag_unit(0, walk_packed);
         walker.get<true>(p, unit, p.num_heads_k, kBn, b, g, n);
         unit = zigzag_unit(++unit_iter, walk_packed)) {
      unit_of(p, b, g, n);
      const UnitTiles u(p, b, n);
      const int qb = q_packed ? 0 : b, kb = k_packed ? 0 : b;

      // Tile t: Q, dO rows m0 .. m0 + kBm - 1 of head h, and their lse, D
      // (zero past lq; those rows are masked), into stage tile_iter % kS
      // once every consumer warp released it.
      auto load_q = [&](int t) {
        const int s = tile_iter % kS;
        const uint32_t parity = (tile_iter / kS) & 1;
        const int h = g * p.head_group + t / u.n_m;
        const int m0 = (u.m_lo + t % u.n_m) * kBm;
        mbar_wait(bars.q_empty(s), parity ^ 1);
        const bool by_tma = m0 + kBm <= u.sg.lq || u.sg.q_tail_tma;
        if (by_tma && lane == 0) {
          // The bytes before this lane's arrival (below), so the phase
          // cannot complete without them.
          mbar_expect_tx(bars.q_full(s), 2 * Cfg::kQTileBytes);
          tile_by_tma<Cfg, kBm>(sm.q(s), &maps.q, bars.q_full(s), u.sg.q_row0 + m0, h, qb);
          tile_by_tma<Cfg, kBm>(sm.dout(s), &maps.dout, bars.q_full(s), u.sg.q_row0 + m0, h, qb);
        }
        // lse, D of the tile's rows (zero past lq; those rows are masked)
        // by cp.async, so that the producer does not wait for their global
        // loads before it issues the next tile's.
#pragma unroll
        for (int r = lane; r < kBm; r += 32) {
          const bool live = m0 + r < u.sg.lq;
          const int64_t row = u.sg.q_row0 + m0 + (live ? r : 0);
          cp_async_4(sm.lse(s) + r,
                     p.lse + b * p.lse_batch_stride + row * p.lse_row_stride + h * p.lse_head_stride,
                     live);
          cp_async_4(sm.dd(s) + r,
                     static_cast<const uint16_t*>(p.dq) + b * p.dq_batch_stride +
                         row * p.dq_row_stride + h * p.dq_head_stride,
                     live);
        }
        if (by_tma) {
          cp_async_mbar_arrive_noinc(bars.q_full(s));  // once this lane's lse, D copies landed
        } else if (u.sg.q_row0 + m0 + kBm <= u.sg.q_end) {
          // A packed batch's tile that crosses lq whose rows past it are a
          // neighbour's rows in use: Q and dO by TMA onto the tail barrier,
          // then their rows >= lq zeroed (dK += G^T Q and dV += P^T dO sum
          // over rows, with G = P = 0 there, and 0 * a NaN is not 0).
          if (lane == 0) {
            mbar_arrive_expect_tx(bars.tail(), 2 * Cfg::kQTileBytes);
            tile_by_tma<Cfg, kBm>(sm.q(s), &maps.q, bars.tail(), u.sg.q_row0 + m0, h, qb);
            tile_by_tma<Cfg, kBm>(sm.dout(s), &maps.dout, bars.tail(), u.sg.q_row0 + m0, h, qb);
          }
          mbar_wait(bars.tail(), tail_iter++ & 1);
          zero_tile_rows<kBm, Cfg::kHeadDim, 32>(sm.q(s), u.sg.lq - m0, lane);
          zero_tile_rows<kBm, Cfg::kHeadDim, 32>(sm.dout(s), u.sg.lq - m0, lane);
          hand_tiles_landed();  // this lane's lse, D copies
          fence_proxy_async_smem();
          mbar_arrive(bars.q_full(s));  // this lane's lse, D and zero stores
        } else {
          const int64_t row0 = u.sg.q_row0 + m0;
          const uint16_t* qs = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride +
                               row0 * p.q_row_stride + h * p.q_head_stride;
          const uint16_t* ds = static_cast<const uint16_t*>(p.dout) + b * p.do_batch_stride +
                               row0 * p.do_row_stride + h * p.do_head_stride;
          load_tile<kBm, Cfg::kHeadDim, 32>(sm.q(s), qs, p.q_row_stride, u.sg.lq - m0, lane);
          load_tile<kBm, Cfg::kHeadDim, 32>(sm.dout(s), ds, p.do_row_stride, u.sg.lq - m0, lane);
          hand_tiles_landed();
          fence_proxy_async_smem();  // generic-proxy writes -> wgmma's async proxy
          mbar_arrive(bars.q_full(s));
        }
        ++tile_iter;
      };

      // The first kS query tiles go before K, V: their stages were last
      // used by earlier units, whose loads were all issued, so these waits
      // need no progress on this unit (a tile past kS would wait for this
      // unit's first tile, which needs K, V: it comes after them).
      const int early = min(u.n_tiles, kS);
      for (int t = 0; t < early; ++t) load_q(t);

      // K_n, V_n (kBn x d), once every consumer warp finished the previous
      // unit.
      mbar_wait(bars.kv_empty(), (unit_iter & 1) ^ 1);
      // A block that crosses lk goes through TMA where the rows past lk are
      // zero-filled (dense) or are rows in use of a packed neighbour (or
      // keys past seqused_k): a key's dk and dv depend on that key's K, V
      // alone, and rows >= lk are stored as zeros, so what they hold
      // reaches no stored value (the fused kernel's dQ product reads K:
      // there a packed neighbour's rows are zeroed, below).
      const bool k_neighbours = u.sg.k_row0 + u.k0 + kBn <= u.sg.k_end;
      if (u.k0 + kBn <= u.sg.lk || u.sg.k_tail_tma || (k_neighbours && !Cfg::kFused)) {
        if (lane == 0) {
          mbar_arrive_expect_tx(bars.kv_full(), 2 * Cfg::kKVBytes);
          tile_by_tma<Cfg, kBn>(sm.k(), &maps.k, bars.kv_full(), u.sg.k_row0 + u.k0, g, kb);
          tile_by_tma<Cfg, kBn>(sm.v(), &maps.v, bars.kv_full(), u.sg.k_row0 + u.k0, g, kb);
        } else {
          mbar_arrive(bars.kv_full());
        }
      } else if (Cfg::kFused && k_neighbours) {
        // The fused kernel (Cfg::kFused) also multiplies K into dQ (dQ +=
        // G K, with G = 0 for keys >= lk, and 0 * a NaN is not 0): K and V
        // by TMA onto the tail barrier, then K's rows >= lk zeroed. V stays:
        // dP of keys >= lk reaches nothing, G = 0 is selected there.
        if (lane == 0) {
          mbar_arrive_expect_tx(bars.tail(), 2 * Cfg::kKVBytes);
          tile_by_tma<Cfg, kBn>(sm.k(), &maps.k, bars.tail(), u.sg.k_row0 + u.k0, g, kb);
          tile_by_tma<Cfg, kBn>(sm.v(), &maps.v, bars.tail(), u.sg.k_row0 + u.k0, g, kb);
        }
        mbar_wait(bars.tail(), tail_iter++ & 1);
        zero_tile_rows<kBn, Cfg::kHeadDim, 32>(sm.k(), u.sg.lk - u.k0, lane);
        fence_proxy_async_smem();
        mbar_arrive(bars.kv_full());  // this lane's zero stores
      } else {
        // The block that crosses lk: keys >= lk zero.
        const int64_t row0 = u.sg.k_row0 + u.k0;
        const uint16_t* ks = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride +
                             row0 * p.k_row_stride + g * p.k_head_stride;
        const uint16_t* vs = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride +
                             row0 * p.v_row_stride + g * p.v_head_stride;
        load_tile<kBn, Cfg::kHeadDim, 32>(sm.k(), ks, p.k_row_stride, u.sg.lk - u.k0, lane);
        load_tile<kBn, Cfg::kHeadDim, 32>(sm.v(), vs, p.v_row_stride, u.sg.lk - u.k0, lane);
        hand_tiles_landed();
        fence_proxy_async_smem();
        mbar_arrive(bars.kv_full());
      }

      for (int t = early; t < u.n_tiles; ++t) load_q(t);
    }
  }

  // ---------------------------------------------------------------- consumers
  // v2's DkdvKernel::run with the cp.async ring and its __syncthreads
  // replaced by the barriers above; the tiles are v2's functions.
  template <bool kDV, bool kDK, int kForm = kGeneral>
  __device__ static void consumer(const AttentionBwdParams& p, const Smem& sm, const Bars& bars) {
    static_assert(kForm == kGeneral || kHasRawForms, "the raw forms: one warpgroup owns dK and dV");
    static_assert(kForm != kRawHeld || kHasHeldForm, "the held form: Cfg::kHeldKV");
    constexpr bool kHeld = kForm == kRawHeld;
    constexpr bool kChained = kForm == kRawChained || kHeld;
    const int tid = threadIdx.x;
    // warp-uniform to the compiler (shuffled from lane 0): the wgmma
    // descriptors derived from them stay in uniform registers
    const int wg = __shfl_sync(0xffffffffu, tid / 128, 0), warp = __shfl_sync(0xffffffffu, (tid % 128) / 32, 0),
              lane = tid % 32;
    const BwdScore score(p);
    Walker walker;
    int b, g, n;
    uint32_t unit_iter = 0, tile_iter = 0;
    uint32_t pt_iter = 0;  // tiles processed (not skipped): phase of pt_empty
    typename V2::Frags af;  // kChained: the A fragments the running dK product reads
    const bool walk_packed = p.cu_seqlens_k != nullptr;
    for (long unit = zigzag_unit(0, walk_packed);
         walker.get<true>(p, unit, p.num_heads_k, kBn, b, g, n);
         unit = zigzag_unit(++unit_iter, walk_packed)) {
      unit_of(p, b, g, n);
      const UnitTiles u(p, b, n);
      const int key0 = Cfg::kSplitRoles ? u.k0 : u.k0 + 64 * wg;  // this warpgroup's first key

      float acc_dv[kDV ? kAccRegs : 1];
      float acc_dk[kDK ? kAccRegs : 1];
#pragma unroll
      for (int i = 0; i < (kDV ? kAccRegs : 1); ++i) acc_dv[i] = 0.f;
#pragma unroll
      for (int i = 0; i < (kDK ? kAccRegs : 1); ++i) acc_dk[i] = 0.f;

      mbar_wait(bars.kv_full(), unit_iter & 1);  // K_n, V_n landed
      typename V2::HeldKV held;
      if constexpr (kHeld) {
        load_held<kBn, Cfg::kHeadDim>(held.k, smem_addr(sm.k()), key0 - u.k0, warp, lane);
        load_held<kBn, Cfg::kHeadDim>(held.v, smem_addr(sm.v()), key0 - u.k0, warp, lane);
        mbar_arrive(bars.kv_empty());  // K_n, V_n are in registers: the producer may refill
      }
      // kChained: the stage the last issued dK product reads (released by
      // the next tile's first wait, or after the drain below); nullptr: none.
      uint64_t* pending = nullptr;
      for (int t = 0; t < u.n_tiles; ++t, ++tile_iter) {
        const int s = tile_iter % kS;
        mbar_wait(bars.q_full(s), (tile_iter / kS) & 1);  // Q, dO, lse, D of tile t landed
        const int m0 = (u.m_lo + t % u.n_m) * kBm;
        if constexpr (kChained) {  // the raw forms: the launcher checked score.raw
          if (V2::template tile_raw<kDV, kDK, kPtFree, true, kHeld>(sm, s, score, u.vis, m0, key0,
                                                                    lane, warp, tid % 128, acc_dv,
                                                                    acc_dk, nullptr, 0, NoHook{},
                                                                    pending, &af, &held)) {
            pending = bars.q_empty(s);  // read by this tile's dK, still running
            continue;
          }
        } else if (kForm == kRaw || score.raw) {
          if constexpr (Cfg::kRawJoint && kDV && kDK && kForm == kRaw) {
            if (!V2::skips(u.vis, m0, key0)) {
              if (u.vis.all_visible(m0, kBm, key0, 64))
                V2::template tile_raw_joint<false>(sm, s, score, u.vis, m0, key0, lane, warp, acc_dv, acc_dk);
              else
                V2::template tile_raw_joint<true>(sm, s, score, u.vis, m0, key0, lane, warp, acc_dv, acc_dk);
            }
          } else if (V2::template tile_raw<kDV, kDK, kPtFree>(sm, s, score, u.vis, m0, key0, lane, warp,
                                                              tid % 128, acc_dv, acc_dk, bars.pt_empty(),
                                                              pt_iter & 1)) {
            ++pt_iter;
          }
        } else if constexpr (kForm == kGeneral) {
          V2::template tile<kDV, kDK>(sm, s, score, u.vis, m0, key0, lane, warp, acc_dv, acc_dk);
        }
        mbar_arrive(bars.q_empty(s));  // release stage s (this thread's reads)
      }
      if constexpr (kChained) {
        // Unconditional: a wait on one path only makes ptxas serialize
        // every wgmma (C7518).
        V2::template drain<kDV, kDK>(acc_dv, acc_dk, af);
        if (pending != nullptr) mbar_arrive(pending);
      }
      if constexpr (!kHeld) mbar_arrive(bars.kv_empty());  // release K_n, V_n

      const int key_r = key0 + warp * 16 + lane / 4;
      if constexpr (kDV)
        V2::store(p.dv, p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride, b, g, u.sg, key_r,
                  lane % 4, acc_dv, false, 1.f);
      if constexpr (kDK)
        V2::store(p.dk, p.dk_batch_stride, p.dk_row_stride, p.dk_head_stride, b, g, u.sg, key_r,
                  lane % 4, acc_dk, true, p.softmax_scale);
    }
  }
};

// kForm: DkdvTmaKernel::Form (the launcher picks it; same bits).
template <class Cfg, int kForm = 0>
__global__ void __launch_bounds__(Cfg::kDkdvTmaThreads, 1)
    attention_bwd_dkdv_tma_sm90_kernel(const __grid_constant__ AttentionBwdParams p,
                                       const __grid_constant__ BwdMaps maps) {
  extern __shared__ uint8_t smem_raw[];
  using K = DkdvTmaKernel<Cfg>;
  uint8_t* base = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const typename K::Smem sm{base};
  const typename K::Bars bars{reinterpret_cast<uint64_t*>(base + Cfg::kDkdvTmaOffBars)};
  // Warpgroup index, warp-uniform (shuffled from lane 0) for the role branch.
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  if (threadIdx.x == 0) {
    K::init_barriers(bars);
    fence_barrier_init();
  }
  __syncthreads();  // the only CTA-wide barrier: barriers initialised
  if (wg == 2) {
    setmaxnreg_dec<Cfg::kDkdvProducerRegs>();
    if (threadIdx.x / 32 == 8) K::producer(p, maps, sm, bars);
  } else {
    setmaxnreg_inc<Cfg::kDkdvConsumerRegs>();
    if constexpr (Cfg::kSplitRoles) {
      if (wg == 0)
        K::template consumer<true, false>(p, sm, bars);
      else
        K::template consumer<false, true>(p, sm, bars);
    } else {
      K::template consumer<true, true, kForm>(p, sm, bars);
    }
  }
}

}  // namespace samebits::cuda::sm90::bwd
