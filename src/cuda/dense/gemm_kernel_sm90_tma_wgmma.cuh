// The sm90 bf16/fp16 GEMM kernel: persistent, warp-specialized, TMA + wgmma.
//
// CTA = 1 producer warpgroup (one thread issues TMA) + Cfg::kConsumers
// consumer warpgroups (kFragsM x 64 output rows x WN columns each). A persistent grid of
// min(tiles, kCtasPerSm * SMs) CTAs walks the output tiles with a static stride; the
// producer runs ahead across tile boundaries, so the next tile's loads overlap
// this tile's epilogue. With Cfg::kClusterM = 2 the grid is made of 2-CTA
// clusters: a cluster walks (2 BM) x BN tiles, its CTA of rank r computes the
// m tile 2 mt + r, and B is multicast (gemm_mainloop_sm90_tma_wgmma.cuh).
// Cfg::kPingPong: the two consumer warpgroups take the CTA's tiles in turn
// (consumer 0 the even ones of its sequence, consumer 1 the odd ones), each
// computing the whole tile, so that one's epilogue overlaps the other's
// mainloop. Their mainloops take turns through order[2] (below).
// Cfg::kTmaStore (not ping-pong): with p.out_tma, each consumer warpgroup
// stores its fragments through its two shared-memory buffers and TMA tile
// stores (store_tile_staged, gemm_epilogue_sm90.cuh; named barrier `wg`
// orders the warpgroup's buffer writes and reuse) and starts its next tile's
// k loop while they drain; otherwise straight from the accumulators.
// kLean: the same kernel with only the epilogue of the common call compiled
// in: no bias, the output in the operands' dtype; for kTmaStore entries
// staged, the remainder columns by TMA (the host launches it only for such
// calls: GemmTmaParams::lean). The same functions compute every value, so
// it stores the same bits; what it saves is code (the generic kernel of
// 128x96 is ~30k instructions, most of them epilogue forms a call never
// runs), which a call fetches cold when another kernel ran before it.
// The host launcher below also launches the small-M entries' kernel
// (Cfg::kMmaSync, gemm_kernel_sm90_tma_mma.cuh).
// Included by the one-configuration .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "cuda/dense/gemm_epilogue_sm90.cuh"
#include "cuda/dense/gemm_kernel_sm90_tma_mma.cuh"
#include "cuda/dense/gemm_mainloop_sm90_tma_wgmma.cuh"
#include "cuda/dense/gemm_scheduler_sm90.cuh"
#include "cuda/dense/gemm_sm90_params.h"
#include "cuda/kernel_attributes.h"

namespace samebits::cuda::dense::sm90 {

// f(std::integral_constant<int, 0>{}), ..., f(std::integral_constant<int, N - 1>{}).
template <int N, class F, int... I>
__device__ __forceinline__ void for_each_index_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
__device__ __forceinline__ void for_each_index(F&& f) {
  for_each_index_impl<N>(f, std::make_integer_sequence<int, N>{});
}

template <class Cfg, bool kF16, bool kLean = false>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kCtasPerSm) gemm_tma_wgmma_kernel(const __grid_constant__ GemmTmaParams p) {
  static_assert(!kLean || !Cfg::kPingPong, "no lean ping-pong kernel");
  extern __shared__ uint8_t smem_raw[];
  const SmemRing<Cfg> ring = SmemRing<Cfg>::carve(smem_raw);

  // the warpgroup index, broadcast so that the compiler knows it is
  // warp-uniform (the k loops' descriptors then live in uniform registers)
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);
  if (threadIdx.x == 0) {
    ring.init(4 * Cfg::kReadersPerStage * Cfg::kClusterM);  // lane 0 of every reading warp, every cluster CTA
    if constexpr (Cfg::kPingPong) {
      mbar_init(&ring.order[0], 4);  // lane 0 of each warp of consumer 1
      mbar_init(&ring.order[1], 4);  // lane 0 of each warp of consumer 0
    }
    mbar_fence_init();
    tma_prefetch_desc(&p.tma_a);
    tma_prefetch_desc(&p.tma_b);
  }
  // barriers initialised before anyone waits on them, or (cluster) before a
  // peer CTA multicasts into this CTA's stages or arrives on its barriers
  if constexpr (Cfg::kClusterM > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  // cluster rank = blockIdx.x % kClusterM (1-D clusters of consecutive CTAs)
  const uint32_t rank = Cfg::kClusterM > 1 ? cluster_ctarank() : 0;
  const int64_t first = blockIdx.x / Cfg::kClusterM, stride = gridDim.x / Cfg::kClusterM;
  uint32_t it = 0;  // k tiles walked so far by this thread's role (see the ring protocol)
  if (wg == 0) {
    // producer warpgroup: one thread issues every TMA load
    if constexpr (Cfg::kSetMaxNreg) setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      for (int64_t t = first; t < p.tiles; t += stride) {
        const TileCoord c = tile_coord(p, t);
        produce_tile<Cfg>(p, ring, it, c.bz, c.mt * Cfg::kClusterM + int(rank), c.nt, rank);
      }
    }
  } else if constexpr (!Cfg::kPingPong) {
    if constexpr (Cfg::kSetMaxNreg) setmaxnreg_inc<Cfg::kConsumerRegs>();
    constexpr int F = Cfg::kFragsM;
    const int cm = (wg - 1) % Cfg::kConsumersM;  // rows cm*64F .. cm*64F+64F-1 of the tile
    const int cn = (wg - 1) / Cfg::kConsumersM;  // columns cn*WN .. cn*WN+WN-1
    float acc[F][Cfg::WN / 2];
    const bool staged = Cfg::kTmaStore && (kLean || p.out_tma);
    uint8_t* epi_buf = ring.epi + (wg - 1) * 2 * Cfg::kEpiBufBytes;  // this warpgroup's two staging buffers
    uint32_t chunk = 0;  // 64-column blocks this warpgroup has staged
    for (int64_t t = first; t < p.tiles; t += stride) {
      const TileCoord c = tile_coord(p, t);
      const int64_t mt = int64_t(c.mt) * Cfg::kClusterM + rank;
      consume_tile<Cfg, kF16>(p, ring, it, cm, cn, acc, [] {});
      // one copy of the epilogue per fragment, each indexing its acc[f] at
      // compile time (a loop the compiler leaves rolled would put acc in
      // local memory)
      for_each_index<F>([&](auto fi) {
        constexpr int f = decltype(fi)::value;
        const int64_t row0 = tile_row0<Cfg>(p, mt) + (cm * F + f) * 64, col0 = tile_col0<Cfg>(p, c.nt) + cn * Cfg::WN;
        if constexpr (kLean) {
          using TO = std::conditional_t<kF16, __half, __nv_bfloat16>;
          if constexpr (Cfg::kTmaStore)
            store_tile_staged_lean<TO, Cfg::WN>(p, acc[f], c.bz, row0, col0, epi_buf, wg, chunk);  // named barrier wg
          else
            store_tile_lean<TO, Cfg::WN>(p, acc[f], c.bz, row0, col0);
        } else {
          if constexpr (Cfg::kTmaStore) {
            if (staged) {
              store_tile_staged<Cfg::WN>(p, acc[f], c.bz, row0, col0, epi_buf, wg, chunk);  // named barrier wg
              return;
            }
          }
          store_tile<Cfg::WN>(p, acc[f], c.bz, row0, col0);
        }
      });
    }
    if constexpr (Cfg::kTmaStore) {
      // this thread's tile stores have read their buffers before the CTA's
      // shared memory is released (their global writes complete with the grid)
      if (staged && threadIdx.x % 128 == 0) bulk_wait_read<0>();
    }
  } else {
    // Ping-pong. Consumer `me` takes the tiles l = me, me + 2, ... of this
    // CTA's sequence and skips the other's k tiles in `it`. Turn-taking, so
    // that a consumer never waits on a full[s] phase more than one ahead of
    // the last one completed (a parity wait cannot tell phase q from q + 2):
    //   order[me] completes when the other consumer has waited on every
    //   stage of tile l - 1 (it arrives right after its last full[] wait,
    //   before its epilogue); consumer `me` waits on it before tile l's
    //   mainloop. order[me]'s phase q belongs to the other's q-th tile, that
    //   is tile l - 1 = 2q + 1 - me.
    if constexpr (Cfg::kSetMaxNreg) setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int me = wg - 1;
    const bool signal = (threadIdx.x % 32) == 0;
    float acc[Cfg::kFragsM][Cfg::WN / 2];
    int64_t l = 0;  // index in this CTA's tile sequence
    for (int64_t t = first; t < p.tiles; t += stride, ++l) {
      if ((l & 1) != me) {  // the other consumer's tile
        it += uint32_t(p.k_tiles);
        continue;
      }
      if (l > 0) mbar_wait(&ring.order[me], uint32_t(((l - 2 + me) / 2) & 1));  // the other's tile l - 1 loaded
      const TileCoord c = tile_coord(p, t);
      const int64_t mt = int64_t(c.mt) * Cfg::kClusterM + rank;
      consume_tile<Cfg, kF16>(p, ring, it, 0, 0, acc, [&] {
        if (signal) mbar_arrive(&ring.order[me ^ 1]);  // the other consumer may start tile l + 1
      });
#pragma unroll
      for (int f = 0; f < Cfg::kFragsM; ++f)
        store_tile<Cfg::WN>(p, acc[f], c.bz, tile_row0<Cfg>(p, mt) + f * 64, tile_col0<Cfg>(p, c.nt));
    }
  }
  // a peer may still arrive on this CTA's empty barriers (its consumers
  // release the last stages after this CTA's consumers are done): nobody
  // leaves the cluster before everybody is done
  if constexpr (Cfg::kClusterM > 1) cluster_sync();
}

// Measurement knobs, read at every launch (scheduling only, BITS-FREE):
// SAMEBITS_GEMM_CLUSTER_POLICY = spread | balance sets the cluster entries'
// scheduling policy preference (cudaLaunchAttributeClusterSchedulingPolicy
// Preference; unset: the driver's default); SAMEBITS_GEMM_FAKE_CLUSTER=2
// launches an unclustered entry in 2-CTA clusters whose CTAs ignore the
// cluster (the launch's placement alone, without multicast or shared stages).
inline int gemm_cluster_policy_env() {  // 0 default, 1 spread, 2 load balancing
  const char* e = std::getenv("SAMEBITS_GEMM_CLUSTER_POLICY");
  if (e == nullptr) return 0;
  if (std::strcmp(e, "spread") == 0) return 1;
  if (std::strcmp(e, "balance") == 0) return 2;
  return 0;
}
inline bool gemm_fake_cluster_env() {
  const char* e = std::getenv("SAMEBITS_GEMM_FAKE_CLUSTER");
  return e != nullptr && e[0] == '2';
}

// The launch configuration of Cfg's kernel in clusters of `cluster_x` CTAs
// (grid left to the caller): attr[0] the cluster shape, attr[1] the
// scheduling policy preference where SAMEBITS_GEMM_CLUSTER_POLICY sets one.
template <class Cfg>
cudaLaunchConfig_t cluster_launch_config(cudaLaunchAttribute (&attr)[2], unsigned cluster_x, cudaStream_t stream) {
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster_x;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(Cfg::kThreads);
  cfg.dynamicSmemBytes = Cfg::kSmemBytes;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (const int policy = gemm_cluster_policy_env(); policy != 0) {  // measurement only (see above)
    attr[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    attr[1].val.clusterSchedulingPolicyPreference =
        policy == 1 ? cudaClusterSchedulingPolicySpread : cudaClusterSchedulingPolicyLoadBalancing;
    cfg.numAttrs = 2;
  }
  return cfg;
}

// Host side of one kernel of a configuration: raises the shared-memory limit
// (once per device) and launches the persistent grid of min(tiles,
// kCtasPerSm * SMs) CTAs; for a cluster entry, min(tiles, co-resident
// clusters) clusters of kClusterM CTAs (cudaOccupancyMaxActiveClusters,
// once per device: a GPC need not hold an even number of free SMs).
template <class Cfg, auto kernel>
cudaError_t launch_gemm_grid(const GemmTmaParams& p, int device, int sms, cudaStream_t stream) {
  if (const cudaError_t e = opt_in_shared_memory<kernel>(Cfg::kSmemBytes); e != cudaSuccess) return e;
  if constexpr (Cfg::kClusterM == 1) {
    const int64_t slots = int64_t(sms) * Cfg::kCtasPerSm;
    const int64_t grid = p.tiles < slots ? p.tiles : slots;
    if (!Cfg::kMmaSync && gemm_fake_cluster_env()) {  // measurement only (see above)
      cudaLaunchAttribute attr[2];
      cudaLaunchConfig_t cfg = cluster_launch_config<Cfg>(attr, 2, stream);
      cfg.gridDim = dim3(unsigned((grid + 1) / 2 * 2));
      return cudaLaunchKernelEx(&cfg, kernel, p);
    }
    kernel<<<unsigned(grid), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
    return cudaGetLastError();
  } else {
    cudaLaunchAttribute attr[2];
    cudaLaunchConfig_t cfg = cluster_launch_config<Cfg>(attr, Cfg::kClusterM, stream);
    static std::atomic<int> max_clusters[64] = {};  // per device; 0: not asked yet
    int clusters = max_clusters[device & 63].load(std::memory_order_relaxed);
    if (clusters == 0) {
      cfg.gridDim = dim3(unsigned(sms / Cfg::kClusterM * Cfg::kClusterM));
      if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess || clusters < 1) {
        (void)cudaGetLastError();  // clear the query's error; fall back to one cluster per kClusterM SMs
        clusters = sms / Cfg::kClusterM > 0 ? sms / Cfg::kClusterM : 1;
      }
      max_clusters[device & 63].store(clusters, std::memory_order_relaxed);
    }
    const int64_t grid = p.tiles < clusters ? p.tiles : clusters;
    cfg.gridDim = dim3(unsigned(grid * Cfg::kClusterM));
    return cudaLaunchKernelEx(&cfg, kernel, p);
  }
}

// Host side of one configuration: its lean kernel where the host chose it
// (p.lean, gemm_launch_sm90.cu), else its generic one (or the small-M
// entries' kernel).
template <class Cfg, bool kF16>
cudaError_t launch_gemm_tma_wgmma(const GemmTmaParams& p, int device, int sms, cudaStream_t stream) {
  if constexpr (Cfg::kMmaSync) {
    if (p.lean) return launch_gemm_grid<Cfg, gemm_tma_mma_kernel<Cfg, kF16, true>>(p, device, sms, stream);
    return launch_gemm_grid<Cfg, gemm_tma_mma_kernel<Cfg, kF16, false>>(p, device, sms, stream);
  } else {
    if constexpr (!Cfg::kPingPong) {
      if (p.lean)
        return launch_gemm_grid<Cfg, gemm_tma_wgmma_kernel<Cfg, kF16, true>>(p, device, sms, stream);
    }
    return launch_gemm_grid<Cfg, gemm_tma_wgmma_kernel<Cfg, kF16, false>>(p, device, sms, stream);
  }
}

// One configuration .cu instantiates one (Cfg, dtype) pair of this.
#define SB_GEMM_SM90_INSTANTIATE(CFG, F16)                                                       \
  template cudaError_t launch_gemm_tma_wgmma<CFG, F16>(const GemmTmaParams&, int, int, cudaStream_t);

}  // namespace samebits::cuda::dense::sm90
