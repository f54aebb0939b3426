// Tile loads of the v3 backward producers (attention_bwd_sm90_dq_tma.h,
// attention_bwd_sm90_dkdv_tma.h): a kRows x d tile of 16-bit elements in the
// 128-byte-swizzled chunk layout that TMA writes and the wgmmas read
// (element (r, c): chunk c / 64, row r, 16-byte unit ((c % 64) / 8) ^ (r % 8)).
#pragma once

#include "cuda/attention_bwd_sm90_common.h"

namespace samebits::cuda::sm90::bwd {

// By hand (a tile that crosses lq or lk): load_tile<kRows, d, 32> by the 32
// lanes of the producer warp (sm90_primitives.h), then hand_tiles_landed,
// a fence toward the async proxy and the signal.

// This lane's hand-load copies have landed (its cp.async groups drained).
__device__ __forceinline__ void hand_tiles_landed() {
  cp_async_commit();
  cp_async_wait<0>();
}

// By TMA: all d / 64 column chunks of one 4D map at (row, head, batch),
// completing on `bar` (whose expected bytes the caller set).
template <class Cfg, int kRows>
__device__ void tile_by_tma(uint8_t* dst, const CUtensorMap* map, uint64_t* bar, int row,
                            int head, int batch) {
#pragma unroll
  for (int c = 0; c < Cfg::kChunks; ++c)
    tma_load_4d(dst + c * kRows * Cfg::kRowBytes, map, bar, c * Cfg::kChunk, row, head, batch);
}

}  // namespace samebits::cuda::sm90::bwd
