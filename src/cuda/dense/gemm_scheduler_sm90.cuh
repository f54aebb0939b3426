// Tile scheduler of the sm90 GEMM kernels (gemm_kernel_sm90_tma_wgmma.cuh,
// gemm_kernel_sm90_tma_mma.cuh): a persistent CTA's tile index -> (batch,
// m tile, n tile).
#pragma once

#include "cuda/dense/gemm_sm90_params.h"

namespace samebits::cuda::dense::sm90 {

// Tile scheduler: tile t -> (batch, m tile, n tile). Inside a batch, groups of
// p.group_m m tiles are walked n-tile by n-tile, so the CTAs running at one
// time share A rows and B columns in L2 (the host sets p.group_m, default
// kGroupM). Tiles here are scheduling units: cluster tiles of kClusterM * BM
// rows (p.m_tiles counts those). Pure scheduling: BITS-FREE.
struct TileCoord {
  int bz, mt, nt;
};
__device__ __forceinline__ TileCoord tile_coord(const GemmTmaParams& p, int64_t t) {
  const int64_t per_batch = int64_t(p.m_tiles) * p.n_tiles;
  TileCoord c;
  c.bz = int(t / per_batch);
  const int64_t r = t % per_batch;
  const int64_t span = int64_t(p.group_m) * p.n_tiles;
  const int first_m = int(r / span) * p.group_m;
  const int gm = min(p.m_tiles - first_m, p.group_m);
  const int64_t w = r % span;
  c.mt = first_m + int(w % gm);
  c.nt = int(w / gm);
  return c;
}

}  // namespace samebits::cuda::dense::sm90
