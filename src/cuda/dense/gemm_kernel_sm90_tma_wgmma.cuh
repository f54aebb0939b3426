// The sm90 bf16/fp16 GEMM kernel: persistent, warp-specialized, TMA + wgmma.
//
// CTA = 1 producer warpgroup (one thread issues TMA) + Cfg::kConsumers
// consumer warpgroups (64 output rows x WN columns each). A persistent grid of
// min(tiles, kCtasPerSm * SMs) CTAs walks the output tiles with a static stride; the
// producer runs ahead across tile boundaries, so the next tile's loads overlap
// this tile's epilogue. Included by the one-configuration .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <atomic>

#include "cuda/dense/gemm_epilogue_sm90.cuh"
#include "cuda/dense/gemm_mainloop_sm90_tma_wgmma.cuh"
#include "cuda/dense/gemm_sm90_params.h"

namespace samebits::cuda::dense::sm90 {

// Tile scheduler: tile t -> (batch, m tile, n tile). Inside a batch, groups of
// kGroupM m tiles are walked n-tile by n-tile, so the CTAs running at one time
// share A rows and B columns in L2. Pure scheduling: BITS-FREE.
constexpr int kGroupM = 8;
struct TileCoord {
  int bz, mt, nt;
};
__device__ __forceinline__ TileCoord tile_coord(const GemmTmaParams& p, int64_t t) {
  const int64_t per_batch = int64_t(p.m_tiles) * p.n_tiles;
  TileCoord c;
  c.bz = int(t / per_batch);
  const int64_t r = t % per_batch;
  const int64_t span = int64_t(kGroupM) * p.n_tiles;
  const int first_m = int(r / span) * kGroupM;
  const int gm = min(p.m_tiles - first_m, kGroupM);
  const int64_t w = r % span;
  c.mt = first_m + int(w % gm);
  c.nt = int(w / gm);
  return c;
}

template <class Cfg, bool kF16>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kCtasPerSm) gemm_tma_wgmma_kernel(const __grid_constant__ GemmTmaParams p) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  SmemRing<Cfg> ring;
  ring.a = base;
  ring.b = base + Cfg::kStages * Cfg::kABytes;
  ring.full = reinterpret_cast<uint64_t*>(ring.b + Cfg::kStages * Cfg::kBBytes);
  ring.empty = ring.full + Cfg::kStages;

  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(&ring.full[s], 1);
      mbar_init(&ring.empty[s], 4 * Cfg::kConsumers);
    }
    mbar_fence_init();
    tma_prefetch_desc(&p.tma_a);
    tma_prefetch_desc(&p.tma_b);
  }
  __syncthreads();  // barriers initialised before anyone waits on them

  uint32_t it = 0;  // k tiles walked so far by this thread's role (see the ring protocol)
  if (wg == 0) {
    // producer warpgroup: one thread issues every TMA load
    if constexpr (Cfg::kSetMaxNreg) setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      for (int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
        const TileCoord c = tile_coord(p, t);
        produce_tile<Cfg>(p, ring, it, c.bz, c.mt, c.nt);
      }
    }
  } else {
    if constexpr (Cfg::kSetMaxNreg) setmaxnreg_inc<232>();
    const int cm = (wg - 1) % Cfg::kConsumersM;  // rows cm*64 .. cm*64+63 of the tile
    const int cn = (wg - 1) / Cfg::kConsumersM;  // columns cn*WN .. cn*WN+WN-1
    float acc[Cfg::WN / 2];
    for (int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
      const TileCoord c = tile_coord(p, t);
      consume_tile<Cfg, kF16>(p, ring, it, cm, cn, acc);
      store_tile<Cfg::WN>(p, acc, c.bz, int64_t(c.mt) * Cfg::BM + cm * 64, int64_t(c.nt) * Cfg::BN + cn * Cfg::WN);
    }
  }
}

// Host side of one configuration: raises the shared-memory limit (once per
// device) and launches the persistent grid of min(tiles, kCtasPerSm * sms) CTAs.
template <class Cfg, bool kF16>
cudaError_t launch_gemm_tma_wgmma(const GemmTmaParams& p, int device, int sms, cudaStream_t stream) {
  auto kernel = gemm_tma_wgmma_kernel<Cfg, kF16>;
  static std::atomic<uint64_t> raised{0};  // bit d: limit raised on device d
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(raised.load(std::memory_order_relaxed) & bit)) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes);
    if (e != cudaSuccess) return e;
    raised.fetch_or(bit, std::memory_order_relaxed);
  }
  const int64_t slots = int64_t(sms) * Cfg::kCtasPerSm;
  const int64_t grid = p.tiles < slots ? p.tiles : slots;
  kernel<<<unsigned(grid), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

// One configuration .cu instantiates one (Cfg, dtype) pair of this.
#define SB_GEMM_SM90_INSTANTIATE(CFG, F16)                                                       \
  template cudaError_t launch_gemm_tma_wgmma<CFG, F16>(const GemmTmaParams&, int, int, cudaStream_t);

}  // namespace samebits::cuda::dense::sm90
