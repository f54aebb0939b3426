// The sm90 GEMM kernel of the small-M entries (Cfg::kMmaSync,
// gemm_tile_configs.h): persistent, TMA producer warp + mma.sync consumer
// warps around the ring of gemm_mainloop_sm90_tma_wgmma.cuh. Launched by
// launch_gemm_tma_wgmma (gemm_kernel_sm90_tma_wgmma.cuh), which picks this
// kernel for kMmaSync configurations.
#pragma once

#include <cuda_runtime.h>

#include "cuda/dense/gemm_epilogue_sm90.cuh"
#include "cuda/dense/gemm_mainloop_sm90_tma_mma.cuh"
#include "cuda/dense/gemm_scheduler_sm90.cuh"
#include "cuda/dense/gemm_sm90_params.h"

namespace samebits::cuda::dense::sm90 {

// Small-M entries (Cfg::kMmaSync, gemm_tile_configs.h): warp 0 is the TMA
// producer (lane 0, the same produce_tile and ring), warps 1 .. kWarpsN the
// mma.sync consumers (consume_tile_mma), each storing its m16 fragments.
// kLean: only the epilogue of a call without a bias whose output is in the
// operands' dtype compiled in (as the wgmma entries' lean kernels).
template <class Cfg, bool kF16, bool kLean = false>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kCtasPerSm) gemm_tma_mma_kernel(const __grid_constant__ GemmTmaParams p) {
  extern __shared__ uint8_t smem_raw[];
  const SmemRing<Cfg> ring = SmemRing<Cfg>::carve(smem_raw);
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x / 32), 0);  // warp-uniform to the compiler
  if (threadIdx.x == 0) {
    ring.init(Cfg::kWarpsN);  // lane 0 of every consumer warp
    mbar_fence_init();
    tma_prefetch_desc(&p.tma_a);
    tma_prefetch_desc(&p.tma_b);
  }
  __syncthreads();  // barriers initialised before anyone waits on them
  uint32_t it = 0;
  if (warp == 0) {
    if (threadIdx.x == 0)
      for (int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
        const TileCoord c = tile_coord(p, t);
        produce_tile<Cfg>(p, ring, it, c.bz, c.mt, c.nt, 0);
      }
  } else {
    const int wn = warp - 1;
    float acc[Cfg::kMBlocks][Cfg::WN / 2];
    for (int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
      const TileCoord c = tile_coord(p, t);
      consume_tile_mma<Cfg, kF16>(p, ring, it, wn, acc);
#pragma unroll
      for (int mb = 0; mb < Cfg::kMBlocks; ++mb) {
        const int64_t row0 = tile_row0<Cfg>(p, c.mt) + mb * 16, col0 = tile_col0<Cfg>(p, c.nt) + wn * Cfg::WN;
        if constexpr (kLean)
          store_warp_rows_lean<std::conditional_t<kF16, __half, __nv_bfloat16>, Cfg::WN>(p, acc[mb], c.bz, row0, col0);
        else
          store_warp_rows<Cfg::WN>(p, acc[mb], c.bz, row0, col0);
      }
    }
  }
}

}  // namespace samebits::cuda::dense::sm90
