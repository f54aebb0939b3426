// Tile loads of the v3 backward producers (attention_bwd_sm90_dq_tma.h,
// attention_bwd_sm90_dkdv_tma.h): a kRows x d tile of 16-bit elements in the
// 128-byte-swizzled chunk layout that TMA writes and the wgmmas read
// (element (r, c): chunk c / 64, row r, 16-byte unit ((c % 64) / 8) ^ (r % 8)).
#pragma once

#include "cuda/attention_bwd_sm90_common.h"

namespace samebits::cuda::sm90::bwd {

// By the 32 lanes of one warp, with generic stores; rows >= valid_rows are
// zero and never read. The caller fences toward the async proxy and signals.
template <class Cfg, int kRows>
__device__ void tile_by_hand(uint8_t* dst, const uint16_t* src, int64_t row_stride,
                             int valid_rows, int lane) {
  constexpr int kUnitsPerRow = Cfg::kHeadDim / 8;
  constexpr int kRowBytes = Cfg::kRowBytes;
#pragma unroll 4
  for (int idx = lane; idx < kRows * kUnitsPerRow; idx += 32) {
    const int r = idx / kUnitsPerRow;
    const int unit = idx % kUnitsPerRow;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < valid_rows) val = __ldg(reinterpret_cast<const uint4*>(src + r * row_stride + unit * 8));
    uint8_t* chunk = dst + (unit / 8) * (kRows * kRowBytes);
    *reinterpret_cast<uint4*>(chunk + r * kRowBytes + (((unit % 8) ^ (r % 8)) << 4)) = val;
  }
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
