// Mainloop of the sm90 GEMM: a TMA producer thread and wgmma consumer
// warpgroups around a ring of kStages shared-memory stages.
//
// Ring protocol (per stage s, two mbarriers):
//   full[s]  (count 1): the producer arrives with expect_tx(A box + B box
//            bytes); the TMA engine completes the bytes. Completes when stage
//            s holds the k tile. Consumed by every consumer warpgroup.
//   empty[s] (count 4 * kReadersPerStage * kClusterM): lane 0 of every
//            consumer warp that reads stage s arrives once its wgmma's that
//            read it have completed (wait_group). Completes when nobody reads
//            stage s any more; the producer then refills it. (Ping-pong: one
//            consumer warpgroup reads a stage, the one whose tile it holds.)
// In a cluster (kClusterM = 2) a producer's B slice is multicast into stage
// s of every CTA of the cluster, so stage s may be refilled only when the
// consumers of EVERY CTA have released it: each consumer warp arrives on
// empty[s] of every CTA of the cluster (its own included), and full[s] of a
// CTA completes with its own A box plus all B slices, whichever CTA's TMA
// wrote them. The CTAs of a cluster walk the same tiles (same n tile, same
// k tiles), so their `it` sequences, stages and parities agree.
// Boxes entirely outside the operand (the m tile of a cluster CTA past M,
// or a B slice past N) are not loaded and not counted in full[s]'s bytes:
// the stale shared memory they would have replaced only feeds output rows
// >= M or columns >= N, which the epilogue does not store.
// Both sides walk the same global sequence of k tiles (every tile of this CTA
// in schedule order, k ascending inside a tile), `it` counting them: stage
// it % kStages, phase parity (it / kStages) & 1. The producer waits on the
// opposite parity of `empty` (the first pass through the ring finds every
// stage free).
#pragma once

#include "cuda/dense/gemm_sm90_ptx.cuh"
#include "cuda/dense/gemm_sm90_wgmma_ops.cuh"
#include "cuda/dense/gemm_tile_configs.h"

namespace samebits::cuda::dense::sm90 {

template <class Cfg>
struct SmemRing {
  uint8_t* a;       // kStages x [BM rows][64 k], 128-byte swizzled
  uint8_t* b;       // kStages x [BN rows][64 k]
  uint8_t* epi;     // kTmaStore: 2 x [64 rows][64 columns] 16-bit per consumer warpgroup, 128-byte swizzled
  uint64_t* full;   // kStages
  uint64_t* empty;  // kStages
  uint64_t* order;  // 2, ping-pong only: order[c] = "consumer c may start its next mainloop"
  // The same as shared-space addresses, for the k loops: computed once, so
  // that the loops add constant offsets instead of converting pointers.
  uint32_t a_at, b_at, full_at, empty_at;
  // The layout in dynamic shared memory (Cfg::kSmemBytes): from the base
  // rounded up to 1024 bytes (the 128-byte swizzle atom), kStages A stages,
  // kStages B stages, the staged epilogue's buffers (kEpiBytes), full[kStages],
  // empty[kStages], order[2].
  __device__ static SmemRing carve(uint8_t* smem_raw) {
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t pad = ((raw + 1023) & ~1023u) - raw;  // to the 1024-byte aligned base
    uint8_t* base = smem_raw + pad;
    SmemRing r;
    r.a = base;
    r.b = base + Cfg::kStages * Cfg::kABytes;
    r.epi = r.b + Cfg::kStages * Cfg::kBBytes;
    r.full = reinterpret_cast<uint64_t*>(r.epi + Cfg::kEpiBytes);
    r.empty = r.full + Cfg::kStages;
    r.order = r.empty + Cfg::kStages;
    r.a_at = raw + pad;
    r.b_at = r.a_at + Cfg::kStages * Cfg::kABytes;
    r.full_at = r.b_at + Cfg::kStages * Cfg::kBBytes + Cfg::kEpiBytes;
    r.empty_at = r.full_at + 8 * Cfg::kStages;
    return r;
  }
  // One thread, before anyone waits: full[s] completes on the producer's
  // arrive (plus the TMA bytes), empty[s] on `releases` consumer arrivals.
  __device__ void init(uint32_t releases) const {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], releases);
    }
  }
};

// A position in the ring: stage s = it % kStages and the phase parity
// (it / kStages) & 1 of the running k-tile count `it`, advanced by one k
// tile at a time without a division.
template <class Cfg>
struct RingPos {
  uint32_t s, parity;
  __device__ explicit RingPos(uint32_t it) : s(it % Cfg::kStages), parity((it / Cfg::kStages) & 1) {}
  __device__ void next() {
    if (++s == Cfg::kStages) {
      s = 0;
      parity ^= 1;
    }
  }
};

// First row of m tile mt and first column of n tile nt, as the tile is
// loaded and stored (BITS-FREE). Where a dimension does not divide into
// whole tiles, its last tile is moved back to end at the dimension's end
// (if the dimension holds one whole tile; columns only where N is a multiple
// of 8, so that stored pairs stay aligned), so that no TMA box of A or B
// reaches past the operand: a box whose rows past the operand the TMA
// fills with zeros takes far longer than a box inside it (H100,
// 2026-11-26: 128x96 at 288 x 4096 x 4096, a last m tile of 32 rows, 36.3
// us against 23.2 at 384 rows; docs/benchmarks_dense.md, twentieth
// session). The rows (columns)
// the moved tile shares with the tile before it are computed and stored by
// both with the same bits: an output element depends only on its row of A
// and its column of B, never on its place in the tile (the property the
// M-bucket tile choice rests on). Cluster entries keep the plain grid.
template <class Cfg>
__device__ __forceinline__ int64_t tile_row0(const GemmTmaParams& p, int64_t mt) {
  const int64_t r = mt * Cfg::BM;
  if constexpr (Cfg::kClusterM > 1) return r;
  const int64_t past = r + Cfg::BM - p.m;  // rows of the tile past the operand
  return p.m >= Cfg::BM && past > 0 && 8 * past >= int64_t(p.tail_m8) * Cfg::BM ? p.m - Cfg::BM : r;
}
template <class Cfg>
__device__ __forceinline__ int64_t tile_col0(const GemmTmaParams& p, int64_t nt) {
  const int64_t c = nt * Cfg::BN;
  if constexpr (Cfg::kClusterM > 1) return c;
  const int64_t past = c + Cfg::BN - p.n;
  return p.n >= Cfg::BN && p.n % 8 == 0 && past > 0 && 8 * past >= int64_t(p.tail_n8) * Cfg::BN ? p.n - Cfg::BN : c;
}

// Producer (one thread): loads the k tiles of output tile (bz, mt, nt);
// `rank` is this CTA's rank in its cluster (0 without clusters).
template <class Cfg>
__device__ __forceinline__ void produce_tile(const GemmTmaParams& p, const SmemRing<Cfg>& ring,
                                             uint32_t& it, int bz, int mt, int nt, uint32_t rank) {
  const int za = p.a_batched ? bz : 0, zb = p.b_batched ? bz : 0;
  uint32_t bytes = Cfg::kStageBytes;
  bool a_live = true, b_live = true;
  if constexpr (Cfg::kClusterM > 1) {
    a_live = int64_t(mt) * Cfg::BM < p.m;
    bytes = a_live ? Cfg::kABytes : 0;
#pragma unroll
    for (int r = 0; r < Cfg::kClusterM; ++r)  // every CTA's slice lands here
      if (int64_t(nt) * Cfg::BN + r * Cfg::kBBoxRows < p.n) bytes += Cfg::kBBoxBytes;
    b_live = int64_t(nt) * Cfg::BN + int64_t(rank) * Cfg::kBBoxRows < p.n;
  }
  const int32_t a_row = int32_t(tile_row0<Cfg>(p, mt)), b_col = int32_t(tile_col0<Cfg>(p, nt));
  RingPos<Cfg> pos(it);
  for (int kb = 0; kb < p.k_tiles; ++kb, ++it, pos.next()) {
    const uint32_t full = ring.full_at + 8 * pos.s;
    mbar_wait_at(ring.empty_at + 8 * pos.s, pos.parity ^ 1);  // consumers (of every cluster CTA) released stage s
    mbar_arrive_expect_tx_at(full, bytes);
    if (a_live) tma_load_3d_at(ring.a_at + pos.s * Cfg::kABytes, &p.tma_a, full, kb * kBK, a_row, za);
    if constexpr (Cfg::kClusterM == 1) {
      tma_load_3d_at(ring.b_at + pos.s * Cfg::kBBytes, &p.tma_b, full, kb * kBK, b_col, zb);
    } else if (b_live) {  // slice `rank` of B into stage s of every cluster CTA
      tma_load_3d_multicast_at(ring.b_at + pos.s * Cfg::kBBytes + rank * Cfg::kBBoxBytes, &p.tma_b, full, kb * kBK,
                               nt * Cfg::BN + int(rank) * Cfg::kBBoxRows, zb, uint16_t((1u << Cfg::kClusterM) - 1));
    }
  }
}

// Consumer warp lane 0: stage s is no longer read by this warp (arrive on
// empty[s] of every CTA of the cluster).
template <class Cfg>
__device__ __forceinline__ void release_stage(const SmemRing<Cfg>& ring, uint32_t s) {
  if constexpr (Cfg::kClusterM == 1) {
    mbar_arrive_at(ring.empty_at + 8 * s);
  } else {
#pragma unroll
    for (int r = 0; r < Cfg::kClusterM; ++r) mbar_arrive_cluster_at(ring.empty_at + 8 * s, uint32_t(r));
  }
}

// Consumer warpgroup (cm, cn): rows (cm F + f)*64 .. + 63, f < F, times
// columns cn*WN .. cn*WN+WN-1 of the tile, into acc[f] (F wgmma m64nWN
// fragments; F = kFragsM). acc = +0; then for k tiles
// kb = 0, 1, ...: gemm A[:, kb*64 + 16j ..] * B[kb*64 + 16j .., :] for
// j = 0..3, in that order, into every acc[f]. `loads_done()` runs once the
// last k tile's stage has been waited on (before the last wgmma's complete).
// cm and cn must be warp-uniform values the compiler can see as such (the
// kernel broadcasts the warpgroup index): the descriptors are then built
// in uniform registers, next to the wgmma's that read them.
template <class Cfg, bool kF16, int F, class LoadsDone>
__device__ __forceinline__ void consume_tile(const GemmTmaParams& p, const SmemRing<Cfg>& ring, uint32_t& it,
                                             int cm, int cn, float (&acc)[F][Cfg::WN / 2], LoadsDone loads_done) {
  using Mma = Wgmma<Cfg::WN, kF16>;
  // descriptor units (16 bytes) between fragments, stages and k16 slices
  constexpr uint32_t kFragDesc = (64 * kBK * 2) >> 4, kAStageDesc = Cfg::kABytes >> 4,
                     kBStageDesc = Cfg::kBBytes >> 4, kK16Desc = 32 >> 4;
  const uint32_t da0 = desc_k_major_sw128_lo(ring.a_at + cm * F * 64 * kBK * 2);
  const uint32_t db0 = desc_k_major_sw128_lo(ring.b_at + cn * Cfg::WN * kBK * 2);
  const bool signal = (threadIdx.x % 32) == 0;
#pragma unroll
  for (int f = 0; f < F; ++f)
#pragma unroll
    for (int i = 0; i < Cfg::WN / 2; ++i) acc[f][i] = 0.0f;
  RingPos<Cfg> pos(it);
  uint32_t prev = 0;  // the previous k tile's stage
  for (int kb = 0; kb < p.k_tiles; ++kb, ++it) {
    mbar_wait_at(ring.full_at + 8 * pos.s, pos.parity);  // stage s landed
    const uint32_t da = da0 + pos.s * kAStageDesc, db = db0 + pos.s * kBStageDesc;
#pragma unroll
    for (int f = 0; f < F; ++f) fence_regs(acc[f]);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kBK / 16; ++j)
#pragma unroll
      for (int f = 0; f < F; ++f)
        Mma::mma(acc[f], desc_sw128(da + f * kFragDesc + j * kK16Desc), desc_sw128(db + j * kK16Desc));
    wgmma_commit();
#pragma unroll
    for (int f = 0; f < F; ++f) fence_regs(acc[f]);
    // the previous k tile's group is done: release its stage
    wgmma_wait<1>();
#pragma unroll
    for (int f = 0; f < F; ++f) fence_regs(acc[f]);
    if (kb > 0 && signal) release_stage<Cfg>(ring, prev);
    prev = pos.s;
    pos.next();
  }
  loads_done();
  wgmma_wait<0>();
#pragma unroll
  for (int f = 0; f < F; ++f) fence_regs(acc[f]);
  if (p.k_tiles > 0 && signal) release_stage<Cfg>(ring, prev);  // the last stage
}

}  // namespace samebits::cuda::dense::sm90
