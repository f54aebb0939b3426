// Mainloop of the sm90 GEMM: a TMA producer thread and wgmma consumer
// warpgroups around a ring of kStages shared-memory stages.
//
// Ring protocol (per stage s, two mbarriers):
//   full[s]  (count 1): the producer arrives with expect_tx(A box + B box
//            bytes); the TMA engine completes the bytes. Completes when stage
//            s holds the k tile. Consumed by every consumer warpgroup.
//   empty[s] (count 4 * kConsumers): lane 0 of every consumer warp arrives
//            once its wgmma's that read stage s have completed (wait_group).
//            Completes when nobody reads stage s any more; the producer then
//            refills it.
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
  uint64_t* full;   // kStages
  uint64_t* empty;  // kStages
  __device__ uint8_t* a_stage(int s) const { return a + s * Cfg::kABytes; }
  __device__ uint8_t* b_stage(int s) const { return b + s * Cfg::kBBytes; }
};

// Producer (one thread): loads the k tiles of output tile (bz, mt, nt).
template <class Cfg>
__device__ __forceinline__ void produce_tile(const GemmTmaParams& p, const SmemRing<Cfg>& ring,
                                             uint32_t& it, int bz, int mt, int nt) {
  const int za = p.a_batched ? bz : 0, zb = p.b_batched ? bz : 0;
  for (int kb = 0; kb < p.k_tiles; ++kb, ++it) {
    const int s = int(it % Cfg::kStages);
    const uint32_t parity = (it / Cfg::kStages) & 1;
    mbar_wait(&ring.empty[s], parity ^ 1);  // consumers released stage s
    mbar_arrive_expect_tx(&ring.full[s], Cfg::kStageBytes);
    tma_load_3d(ring.a_stage(s), &p.tma_a, &ring.full[s], kb * kBK, mt * Cfg::BM, za);
    tma_load_3d(ring.b_stage(s), &p.tma_b, &ring.full[s], kb * kBK, nt * Cfg::BN, zb);
  }
}

// Consumer warpgroup (cm, cn): rows cm*64 .. cm*64+63 times columns
// cn*WN .. cn*WN+WN-1 of the tile, into acc (the wgmma m64nWN fragment).
// acc = +0; then for k tiles kb = 0, 1, ...: gemm A[:, kb*64 + 16j ..] *
// B[kb*64 + 16j .., :] for j = 0..3, in that order, into acc.
template <class Cfg, bool kF16>
__device__ __forceinline__ void consume_tile(const GemmTmaParams& p, const SmemRing<Cfg>& ring,
                                             uint32_t& it, int cm, int cn, float (&acc)[Cfg::WN / 2]) {
  using Mma = Wgmma<Cfg::WN, kF16>;
  const bool signal = (threadIdx.x % 32) == 0;
#pragma unroll
  for (int i = 0; i < Cfg::WN / 2; ++i) acc[i] = 0.0f;
  for (int kb = 0; kb < p.k_tiles; ++kb, ++it) {
    const int s = int(it % Cfg::kStages);
    mbar_wait(&ring.full[s], (it / Cfg::kStages) & 1);  // stage s landed
    const uint64_t da = desc_k_major_sw128(smem_addr(ring.a_stage(s) + cm * 64 * kBK * 2));
    const uint64_t db = desc_k_major_sw128(smem_addr(ring.b_stage(s) + cn * Cfg::WN * kBK * 2));
    fence_regs(acc);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kBK / 16; ++j) Mma::mma(acc, da + 2 * j, db + 2 * j);  // +32 bytes per k16
    wgmma_commit();
    fence_regs(acc);
    // the previous k tile's group is done: release its stage
    wgmma_wait<1>();
    fence_regs(acc);
    if (kb > 0 && signal) mbar_arrive(&ring.empty[(it - 1) % Cfg::kStages]);
  }
  wgmma_wait<0>();
  fence_regs(acc);
  if (p.k_tiles > 0 && signal) mbar_arrive(&ring.empty[(it - 1) % Cfg::kStages]);  // release the last stage
}

}  // namespace samebits::cuda::dense::sm90
