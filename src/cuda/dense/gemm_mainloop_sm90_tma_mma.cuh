// Consumer of the sm90 GEMM's small-M entries (Cfg::kMmaSync): one warp's
// mma.sync.m16n8k16 chains over the TMA ring of
// gemm_mainloop_sm90_tma_wgmma.cuh (the same producer, stages and barrier
// protocol; a consumer warp releases a stage with one arrive from lane 0).
#pragma once

#include "cuda/dense/gemm_mainloop_sm90_tma_wgmma.cuh"
#include "cuda/dense/gemm_sm90_ptx.cuh"

namespace samebits::cuda::dense::sm90 {

// Consumer warp `wn` of a small-M entry (Cfg::kMmaSync): columns
// wn * WN .. + WN - 1 and all BM rows of the tile, as kMBlocks x kNB m16n8
// accumulators acc[mb][4 nb + i] (the epilogue's per-warp layout, see
// store_warp_rows). acc = +0; then for k tiles kb = 0, 1, ...: for
// j = 0..3, one mma.sync.m16n8k16 of A[:, kb*64 + 16j ..] * B[kb*64 + 16j .., :]
// into every accumulator: the k16 steps of consume_tile, in the same order.
// Operands come from the 128-byte-swizzled stage through ldmatrix: the
// 16-byte chunk c of row r (64 k = 8 chunks a row) sits at r * 128 +
// ((c ^ (r % 8)) * 16) (stage bases are 1024-byte aligned).
template <class Cfg, bool kF16>
__device__ __forceinline__ void consume_tile_mma(const GemmTmaParams& p, const SmemRing<Cfg>& ring, uint32_t& it,
                                                 int wn, float (&acc)[Cfg::kMBlocks][Cfg::WN / 2]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mb = 0; mb < Cfg::kMBlocks; ++mb)
#pragma unroll
    for (int i = 0; i < Cfg::WN / 2; ++i) acc[mb][i] = 0.0f;
  // ldmatrix.x4 row addresses. A (rows mb*16 + lane % 16, chunk 2j + lane / 16):
  // matrices {rows 0-7, rows 8-15} x {k 0-7, k 8-15} = registers a0..a3.
  // B (rows wn*WN + 16 q + 8 (lane / 16) + lane % 8, chunk 2j + (lane / 8) % 2):
  // n8 block 2q gets registers 0, 1 (k 0-7, 8-15), block 2q + 1 registers 2, 3.
  const int a_row = lane % 16, a_hi = lane / 16;
  const int b_row = wn * Cfg::WN + 8 * (lane / 16) + lane % 8, b_hi = (lane / 8) % 2;
  // A k tile's fragments (kSteps k16 steps) are loaded first, then its mma's
  // issued (the asm statements keep their order, so loading step by step
  // would put an ldmatrix latency in front of every step of the chain).
  // Software-pipelined by one k tile: tile kb + 1's wait and loads are
  // issued after tile kb's first mma, so they run under tile kb's chain
  // instead of between two chains (the accumulators see the same mma's in
  // the same order: the same bits). Two fragment sets, named statically by
  // a loop unrolled twice.
  constexpr int kSteps = kBK / 16;
  struct Frags {
    uint32_t a[kSteps][Cfg::kMBlocks][4];
    uint32_t b[kSteps][Cfg::kNB / 2][4];
  };
  auto load = [&](const RingPos<Cfg>& ps, Frags& f) {
    mbar_wait_at(ring.full_at + 8 * ps.s, ps.parity);  // stage s landed
    const uint32_t a0 = ring.a_at + ps.s * Cfg::kABytes, b0 = ring.b_at + ps.s * Cfg::kBBytes;
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
#pragma unroll
      for (int mb = 0; mb < Cfg::kMBlocks; ++mb) {
        const int r = mb * 16 + a_row;
        ldmatrix_x4(f.a[j][mb], a0 + r * 128 + (((2 * j + a_hi) ^ (r % 8)) * 16));
      }
#pragma unroll
      for (int q = 0; q < Cfg::kNB / 2; ++q) {
        const int r = b_row + 16 * q;
        ldmatrix_x4(f.b[j][q], b0 + r * 128 + (((2 * j + b_hi) ^ (r % 8)) * 16));
      }
    }
  };
  auto step = [&](const Frags& f, int j) {
#pragma unroll
    for (int mb = 0; mb < Cfg::kMBlocks; ++mb)
#pragma unroll
      for (int nb = 0; nb < Cfg::kNB; ++nb)
        mma_m16n8k16<kF16>(&acc[mb][4 * nb], f.a[j][mb], f.b[j][nb / 2][2 * (nb % 2)], f.b[j][nb / 2][2 * (nb % 2) + 1]);
  };
  // Tile `f` (in stage ps): its first k16 step, then (if `next`) the next
  // tile's wait and loads into `g`, then its other steps; then stage ps is
  // released (the mma's above consumed every register its ldmatrix's
  // delivered).
  auto consume = [&](const Frags& f, const RingPos<Cfg>& ps, bool next, const RingPos<Cfg>& ns, Frags& g) {
    step(f, 0);
    if (next) load(ns, g);
#pragma unroll
    for (int j = 1; j < kSteps; ++j) step(f, j);
    __syncwarp();
    if (lane == 0) mbar_arrive_at(ring.empty_at + 8 * ps.s);
  };
  const int k_tiles = p.k_tiles;
  Frags f0, f1;
  RingPos<Cfg> pos(it);
  if (k_tiles > 0) load(pos, f0);
  int kb = 0;
  for (; kb + 1 < k_tiles; kb += 2) {
    RingPos<Cfg> nxt = pos;
    nxt.next();
    consume(f0, pos, true, nxt, f1);  // tile kb; loads kb + 1
    pos = nxt;
    nxt.next();
    consume(f1, pos, kb + 2 < k_tiles, nxt, f0);  // tile kb + 1; loads kb + 2
    pos = nxt;
  }
  if (kb < k_tiles) consume(f0, pos, false, pos, f1);  // an odd count's last tile
  it += uint32_t(k_tiles);
}

}  // namespace samebits::cuda::dense::sm90
