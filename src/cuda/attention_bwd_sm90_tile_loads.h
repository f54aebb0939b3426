// Tile loads of the v3 backward producers (attention_bwd_sm90_dq_tma.h,
// attention_bwd_sm90_dkdv_tma.h): a kRows x d tile of 16-bit elements in the
// 128-byte-swizzled chunk layout that TMA writes and the wgmmas read
// (element (r, c): chunk c / 64, row r, 16-byte unit ((c % 64) / 8) ^ (r % 8)).
#pragma once

#include "cuda/attention_bwd_sm90_common.h"

namespace samebits::cuda::sm90::bwd {

// By the 32 lanes of one warp, every 16-byte unit by cp.async (all in
// flight at once; a load per unit that waited in groups of four made a
// sequence's partial last tile cost many round trips); rows >= valid_rows
// are zero and never read. The caller waits (hand_tiles_landed), fences
// toward the async proxy and signals.
template <class Cfg, int kRows>
__device__ void tile_by_hand(uint8_t* dst, const uint16_t* src, int64_t row_stride,
                             int valid_rows, int lane) {
  constexpr int kUnitsPerRow = Cfg::kHeadDim / 8;
  constexpr int kRowBytes = Cfg::kRowBytes;
#pragma unroll 8
  for (int idx = lane; idx < kRows * kUnitsPerRow; idx += 32) {
    const int r = idx / kUnitsPerRow;
    const int unit = idx % kUnitsPerRow;
    const bool valid = r < valid_rows;
    uint8_t* chunk = dst + (unit / 8) * (kRows * kRowBytes);
    cp_async_16(chunk + r * kRowBytes + (((unit % 8) ^ (r % 8)) << 4),
                valid ? src + r * row_stride + unit * 8 : src, valid);
  }
}

// This lane's tile_by_hand copies have landed (its cp.async groups drained).
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
