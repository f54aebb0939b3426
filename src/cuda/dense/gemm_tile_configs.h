// The tile table of the sm90 bf16/fp16 GEMM, part of the numerics contract
// (docs/numerics_dense.md, "GEMM").
//
// Every entry runs the same per-element computation: one fp32 accumulator,
// zeroed, then one tensor-core k16 step per 16 k in increasing k (k padded
// with zeros to a multiple of kBK = 64), then the same epilogue. The step is
// a wgmma.m64nNk16, or in the small-M entries (suffix "s", MmaTileConfig) an
// mma.sync.m16n8k16, which gives the same f32 result bit for bit
// (tests/cuda/experiment_mma_sync_vs_wgmma.cu; see MmaTileConfig). What an entry
// changes is which CTA computes an element, how many elements share the
// wgmma instruction's N, and how deep the TMA pipeline is: none of it changes
// the bits of an element, so EVERY ENTRY IS BITS-FREE. bench/bench_dense.py
// proves it: each entry is forced in turn (SAMEBITS_GEMM_TILE) and compared
// bitwise with the default choice at M = 1, 2, 7, 64, 513, 4096, 16384.
//
// A bits-changing entry would be one that changes kBK's k16 grouping, the k
// order, the step's f32 result or the epilogue: there is none, and adding one
// needs a version bump of the contract.
#pragma once

#include <cstdint>

namespace samebits::cuda::dense::sm90 {

constexpr int kBK = 64;           // BITS: k tile = the zero-padding unit of K; one 128-byte swizzle row of 16-bit
constexpr int kSmemBudget = 232448;  // sm90 opt-in dynamic shared memory per block (227 KiB)
constexpr int kEpiBlock = 64;  // the staged epilogue's block: 64 rows x 64 16-bit columns (one 128-byte swizzle row)

// kConsumersM x kConsumersN consumer warpgroups: consumer c owns output rows
// (c % kConsumersM) * 64 .. + 63 and columns (c / kConsumersM) * WN .. + WN-1
// of the BM x BN CTA tile (one wgmma m64nWNk16 fragment each); warpgroups
// along M share the B tile, warpgroups along N share the A tile. One more
// warpgroup is the TMA producer. kCtasPerSm CTAs share one SM (the shared
// memory budget is split; registers are capped by __launch_bounds__).
// kPingPong: instead, kConsumersM is the number of 64-row wgmma fragments
// ONE consumer warpgroup holds (kConsumersN = 1), and two consumer
// warpgroups each compute whole BM x BN tiles, taking the CTA's tiles in turn
// (even / odd): one warpgroup's epilogue runs while the other's mainloop
// keeps the tensor cores busy (the mainloops themselves take turns, see
// gemm_kernel_sm90_tma_wgmma.cuh).
// kClusterM > 1: a thread-block cluster of kClusterM CTAs on adjacent m
// tiles of the same n tile; they need the same B tile, so each CTA loads
// 1 / kClusterM of it (a box of BN / kClusterM rows) and the TMA multicasts
// that slice into every CTA of the cluster: L2 -> SM traffic of B divided by
// kClusterM. The scheduler then walks (kClusterM * BM) x BN cluster tiles.
// kFrags > 1 (not ping-pong): each consumer warpgroup holds kFrags 64-row
// fragments stacked along M (rows cm * 64 kFrags + 64 f), so one B slice
// feeds kFrags independent wgmma chains: BM = 64 kConsumersM kFrags.
// kTmaStore (not ping-pong): the staged epilogue is available
// (gemm_epilogue_sm90.cuh, store_tile_staged): each consumer warpgroup writes
// its fragment to shared memory 64 columns at a time, through two buffers of
// 64 x 64 16-bit elements, and one thread stores each buffer with a TMA
// tile store, so the warpgroup goes on to its next tile while the stores
// drain. Its buffers come out of the stage budget. The values stored are
// those of the direct epilogue (one function computes both): BITS-FREE.
template <int kConsumersM_, int kConsumersN_, int WN_, int kMaxStages_, int kCtasPerSm_ = 1, int kClusterM_ = 1,
          bool kPingPong_ = false, int kFrags_ = 1, bool kTmaStore_ = false>
struct TileConfig {
  static constexpr bool kMmaSync = false;
  static constexpr bool kPingPong = kPingPong_;
  static constexpr int kConsumersM = kConsumersM_, kConsumersN = kConsumersN_;
  static constexpr int kFragsM = kPingPong ? kConsumersM : kFrags_;  // 64-row fragments per consumer warpgroup
  static constexpr int kConsumers = kPingPong ? 2 : kConsumersM * kConsumersN;
  static constexpr int kReadersPerStage = kPingPong ? 1 : kConsumers;  // consumer warpgroups reading one stage
  static constexpr int WN = WN_;
  static constexpr int BM = 64 * kConsumersM * (kPingPong ? 1 : kFrags_);
  static constexpr int BN = WN * kConsumersN;
  static constexpr int kCtasPerSm = kCtasPerSm_;
  static constexpr int kClusterM = kClusterM_;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kABytes = BM * kBK * 2;  // one stage of A, 16-bit elements
  static constexpr int kBBytes = BN * kBK * 2;
  static constexpr int kBBoxRows = BN / kClusterM;  // rows of B one CTA loads (and multicasts)
  static constexpr int kBBoxBytes = kBBoxRows * kBK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr bool kTmaStore = kTmaStore_;
  static constexpr int kEpiBufBytes = kEpiBlock * kEpiBlock * 2;  // one staged block of 16-bit output
  static constexpr int kEpiBytes = kTmaStore ? kConsumers * 2 * kEpiBufBytes : 0;  // two buffers per consumer
  static constexpr int kBudget = kCtasPerSm == 1 ? kSmemBudget : (233472 / kCtasPerSm - 1024);
  static constexpr int kStagesFit = (kBudget - 2048 - kEpiBytes) / kStageBytes;
  static constexpr int kStages = kStagesFit < kMaxStages_ ? kStagesFit : kMaxStages_;
  static constexpr int kBarrierBytes = 2 * kStages * 8 + 2 * 8;  // full, empty; ping-pong order[2]
  static constexpr int kSmemBytes =
      kStages * kStageBytes + kEpiBytes + kBarrierBytes + 1024;  // + 1024-byte alignment slack
  // setmaxnreg only where it pays and fits: 2 or 3 consumer warpgroups, 1
  // CTA/SM; the producer drops to 40 registers, the consumers rise to
  // kConsumerRegs (128 x 40 + 128 x kConsumers x kConsumerRegs <= 65536)
  static constexpr bool kSetMaxNreg = (kConsumers == 2 || kConsumers == 3) && kCtasPerSm == 1;
  static constexpr int kConsumerRegs = kConsumers == 3 ? 152 : 232;
  static_assert(WN % 8 == 0 && WN <= 256, "wgmma N: 8..256");
  static_assert(BM <= 256 && BN <= 256, "a TMA box has at most 256 rows");
  static_assert(kStages >= 2 && kSmemBytes <= kBudget, "pipeline does not fit in shared memory");
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0 && (WN * kBK * 2) % 1024 == 0,
                "stage buffers and warpgroup slices must keep 1024-byte swizzle-atom alignment");
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of 1 or 2 CTAs");
  static_assert(!kPingPong || (kConsumersN == 1 && kCtasPerSm == 1 && kFrags_ == 1), "ping-pong: fragments along M only");
  static_assert(kFrags_ == 1 || kClusterM == 1, "stacked fragments without clusters");
  static_assert(!kTmaStore || !kPingPong, "staged epilogue: not ping-pong");
  static_assert(kClusterM == 1 || kCtasPerSm == 1, "a cluster entry runs one CTA per SM");
  static_assert(BN % kClusterM == 0 && kBBoxBytes % 1024 == 0,
                "each multicast slice of B must keep 1024-byte swizzle-atom alignment");
};

// Small-M entries (kMmaSync): the same k16 steps issued as warp-level
// mma.sync.m16n8k16 instead of wgmma. One producer warp (TMA, the same ring
// as above) and kWarpsN consumer warps; consumer w owns columns
// w * 8 kNB .. + 8 kNB - 1 of the BM x BN tile, all BM = 16 kMBlocks rows, as
// kMBlocks x kNB independent m16n8 accumulators, each a chain of k16 steps in
// increasing k from +0, like wgmma's. A dependent mma.sync step takes ~24
// cycles against ~130-160 for wgmma, so at small M the k chain no longer
// bounds the time; the weight bytes do. Their f32 results equal wgmma's bit
// for bit (tests/cuda/experiment_mma_sync_vs_wgmma.cu: every element of
// adversarial bf16 / fp16 inputs on an H100 and an H200; bench_dense.py
// compares each forced entry with the default at every M bucket).
template <int kMBlocks_, int kWarpsN_, int kNB_, int kMaxStages_>
struct MmaTileConfig {
  static constexpr bool kMmaSync = true;
  static constexpr bool kPingPong = false;
  static constexpr int kMBlocks = kMBlocks_, kWarpsN = kWarpsN_, kNB = kNB_;
  static constexpr int BM = 16 * kMBlocks;
  static constexpr int WN = 8 * kNB;  // columns of one consumer warp
  static constexpr int BN = WN * kWarpsN;
  static constexpr int kCtasPerSm = 1;
  static constexpr int kClusterM = 1;
  static constexpr int kThreads = 32 * (kWarpsN + 1);
  static constexpr int kABytes = BM * kBK * 2;
  static constexpr int kBBytes = BN * kBK * 2;
  static constexpr int kBBoxRows = BN;
  static constexpr int kBBoxBytes = kBBytes;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr bool kTmaStore = false;
  static constexpr int kEpiBytes = 0;
  static constexpr int kStagesFit = (kSmemBudget - 2048) / kStageBytes;
  static constexpr int kStages = kStagesFit < kMaxStages_ ? kStagesFit : kMaxStages_;
  static constexpr int kBarrierBytes = 2 * kStages * 8 + 2 * 8;
  static constexpr int kSmemBytes = kStages * kStageBytes + kBarrierBytes + 1024;
  static_assert(kNB % 2 == 0, "B fragments are loaded two n8 blocks at a time (ldmatrix.x4)");
  // a consumer holds a whole k tile's fragments (4 k16 steps) at once
  static_assert(4 * (4 * kMBlocks + 2 * kNB) <= 80, "a k tile's fragments: at most 80 registers");
  static_assert(kStages >= 2 && kSmemBytes <= kSmemBudget, "pipeline does not fit in shared memory");
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "stage buffers keep 1024-byte swizzle-atom alignment");
};

// The table. Reasons (measured: docs/benchmarks_dense.md, bench_dense.py --tiles):
//   T64x32    32 < M <= 64, N < ~12k: N/32 CTAs (128 for N = 4096), 16
//             stages = 64 KiB of weights in flight per SM.
//   T64x64    64 < M <= 128 with N < ~12k: at these M the time is the
//             latency of the K/16-long wgmma chain, not bandwidth; 64x64
//             measured best or within noise of best.
//   T64x128   32 < M <= 64 with N >= ~12k; 128 < M <= 256 with few column
//             tiles.
//   T64x256   (forced only since the small-M entries: was M <= 16 with
//             N >= ~67k.)
//   T16x32s   M <= 16 with N < ~12k: mma.sync consumers, 2 warps x 16
//             columns, 32 stages of 6 KiB (16 rows x 64 k of A, 32 x 64 k
//             of B): N / 32 CTAs.
//   T16x64s   M <= 16 with N >= ~12k, 16 < M <= 32 with N < ~12k: 4 warps,
//             22 stages of 10 KiB. T32x64s (32 rows, 2 m16 blocks a warp)
//             measured within a few % and stays forced only.
//   T128x128  64 < M <= 128 with N >= ~12k, or by the multi-tile rule:
//             2 consumer warpgroups share B.
//   T128x256  M >= 2048, or the multi-tile rule below: highest operand
//             reuse from shared memory (the tensor-core-bound shape), 4
//             stages, setmaxnreg 40/232.
//   T192x128w3  128 < M <= 192 with >= 0.75 wave of 128-column tiles (N >=
//             ~12k), since the twenty-sixth session: T192x128's tile as three
//             consumer warpgroups of one m64n128 fragment each (H100, 14336 x
//             4096 at M = 192: 50.0 -> 49.4 us; 128256 x 4096: 404.4 ->
//             398.8).
//   T192x128  forced only since the twenty-sixth session; before, the rule's
//             entry at 128 < M <= 192 with >= 0.75 wave of 128-column tiles:
//             two consumer warpgroups of 64 columns, each holding three
//             stacked m64n64 fragments (kFrags = 3), 5 stages of 40 KiB.
//             Tried with it (H100, not kept): 192x64, 256x128 (4 fragments)
//             and 128x64f (2 fragments), best at none or only one shape.
//   T128x192  the multi-tile rule (pick_gemm_tile, wide_tile: 256 < M < 2048
//             with >= 0.5 wave of 128x128 tiles, 192 < M <= 256 with >= 1
//             wave): of the staged 128- to 256-row entries, the least work
//             per SM over whole rounds, weighted by the entry's time per
//             element; e.g. N = 4096 at M = 768 and 1536: 22 column tiles.
//   T192x192w3  the multi-tile rule's 192x192 (twenty-sixth session): three
//             consumer warpgroups along M, one m64n192 fragment each, where
//             T192x192 (forced only since) has two of three stacked m64n96:
//             20 % fewer shared-memory bytes read by the wgmmas per k16
//             step, 1.5-7 % faster at every shape measured (H100, kernel
//             times with the L2 flushed: 1152 x 4096 x 4096 58.2 -> 55.7 us,
//             cuBLAS 52.9; 576 x 14336 x 4096 109.0 -> 105.4; 1920 x 14336 x
//             4096 306.3 -> 299.3). Same cost in the rule (same shape).
//   T128x224, T128x160, T128x96, T192x192, T256x160  (twelfth session)
//             staged, chosen by the same rule so that the tile count fills
//             whole rounds. 128x224 / 128x160 / 128x96 keep 128x256's
//             layout (two consumer warpgroups along M sharing B); 192x192 is
//             two warpgroups of 96 columns, each three stacked m64n96
//             fragments (144 accumulator registers); 256x160 two warpgroups
//             along M of two stacked m64n160 fragments (160), 3 stages.
//             Their widths leave half a 64-column staging block, stored
//             by a TMA store of its own since the thirty-first session
//             (before: straight from the accumulators). H100, kernel
//             times with the L2 flushed, us (cuBLAS / before -> after):
//             1152 x 4096 x 4096 49.8 / 75.5 -> 52.8 (192x192); 1280 x
//             4096 x 14336 185.9 / 233.8 -> 195.8 (256x160); 768 x 14336 x
//             4096 123.5 / 134.1 -> 123.0 (128x224). Tried with them:
//             64x96 (N = 4096 at M = 192: 129 CTAs against 96 of 64x128)
//             measured no faster, dropped (taken up again in the
//             twenty-eighth session, below).
//   T128x168  (twenty-eighth session) 128x192's layout, 168 columns: two
//             rounds of tiles where 128x192 needs two and 128x160 three at
//             N = 14336 and M = 257-384 (258 tiles against 225), so each
//             round computes 12.5 % fewer elements; its last 40 columns
//             are staged as a 64 x 40 block (unswizzled). Factor 1150,
//             as 128x160 (H100, kernel times with the L2 flushed: 384 x
//             14336 x 4096 70.5 -> 67.2 us, cuBLAS 62.3; 128x176 measured
//             68.2 and was dropped). On 132 SMs the rule also picks it at
//             N = 6144 (M = 769-896) and 11008 (M = 129-256 and 385-512).
//   T64x96    (twenty-eighth session) 128 < M <= 256 where 64x128 makes one
//             round and 64x96 does too: 129 CTAs at 192 x 4096, each a
//             quarter less work. Tried in the twelfth session and no faster
//             then; since the nineteenth session's k loop it is (H100,
//             kernel times with the L2 flushed: 192 x 4096 x 4096 20.6 ->
//             19.2 us, cuBLAS 18.5; 160 x 4096 x 4096 20.5 -> 19.2).
//   T64x128c2 2 CTAs per SM (4 stages each): one CTA's epilogue and pipeline
//             fill overlap the other's mainloop; 128 < M <= 256 with many
//             column tiles.
//   T128x256m2, T128x128m2  the same CTA tiles in clusters of 2 CTAs along
//             M, B multicast (L2 -> SM bytes per k tile: 128x256 48 -> 32
//             KiB, 128x128 32 -> 24 KiB). Both staged since the nineteenth
//             session (128x128m2 1-2 us faster than direct). With the
//             uniform-register k loop they run as fast as CUTLASS's own
//             2x1-cluster kernels of the same tiles, and like those they
//             lose to their unclustered twins below M = 2048 (H100, 512 x
//             4096 x 4096: 30.7-31.4 against 27.4-28.6 us; cuBLAS's 2x1
//             cluster kernel 27.0): forced only.
//   T128x128pp  ping-pong: 2 consumer warpgroups, each a whole 128x128 tile
//             (2 m64n128 fragments, 128 accumulator registers like
//             128x256), alternating tiles, so each epilogue overlaps the
//             other warpgroup's mainloop; T128x128ppm2 the same in 2-CTA
//             clusters with B multicast (L2 -> SM bytes per flop of 128x256).
//   Measured on an H100 (2026-11-21, bench/results/2026-11-21_h100_s3_gemm_v2):
//   T128x128pp was chosen for 256 < M < 2048 with >= 1 wave of 128x128 tiles
//   (1.02-1.15x T128x128 then); forced only since the eighth session, when
//   the staged entries became faster at every M of the sweep. The three cluster
//   entries measured 0.1-0.5x cuBLAS, far below their unclustered twins, so
//   they stay forced only. Cause (found in the SASS, branch gemm3): the
//   consumers' remote empty-barrier arrive was a cluster-scope release,
//   which ptxas lowers to MEMBAR.ALL.GPU in front of every arrive (two per
//   k tile per consumer warp): ~1.5 us per k tile whatever the tile size.
//   Fixed in mbar_arrive_cluster_at (gemm_sm90_ptx.cuh); to be re-measured
//   before any of them is chosen by pick_gemm_tile.
// Staged epilogue (kStaged) on 128x128, 128x192, 128x256, 128x256m2, 192x128 and the
// twelfth session's entries, the entries whose CTAs take several tiles (H100, 2026-11-22, kernel times
// against SAMEBITS_GEMM_EPILOGUE=direct in the same run, L2 flushed):
// 128x256 at M >= 2048 4-8 % faster (16384 x 4096 x 4096: 766 against 808
// us); 128x128 with 6 stages staged faster than with 7 direct at every
// M >= 1024 measured (16384 x 4096 x 4096: 899 against 1019). Not on the
// one-tile entries 64x64 / 64x128 (0-5 % slower at M = 128: nothing to
// overlap). Tried: 256x128 (cuBLAS's tile at large M, two stacked m64n128
// fragments per consumer, staged): 2-3 % slower than 128x256.
// Tried and dropped (2026-11-21 sweep): 64x32 as 4 consumer warpgroups of
// m64n8 side by side along N (kConsumersN = 4): 0.6-0.9x the speed of 64x32,
// so narrower wgmma N does not shorten the per-k16 latency at small M.
enum class GemmTile : int {
  T64x32 = 0, T64x64, T64x128, T64x256, T128x128, T128x256, T64x128c2, T128x256m2, T128x128m2, T128x128pp,
  T128x128ppm2, T16x32s, T16x64s, T32x64s, T192x128, T128x224, T128x192, T128x160, T192x192, T256x160, T128x96,
  T192x192w3, T192x128w3, T128x168, T64x96, T16x112s, kCount
};

constexpr bool kStaged = true;  // TileConfig's kTmaStore
using Cfg64x32 = TileConfig<1, 1, 32, 16>;
using Cfg64x64 = TileConfig<1, 1, 64, 12>;
using Cfg64x128 = TileConfig<1, 1, 128, 8>;
using Cfg64x256 = TileConfig<1, 1, 256, 5>;
using Cfg128x128 = TileConfig<2, 1, 128, 7, 1, 1, false, 1, kStaged>;
using Cfg128x256 = TileConfig<2, 1, 256, 4, 1, 1, false, 1, kStaged>;
using Cfg64x128c2 = TileConfig<1, 1, 128, 4, 2>;
using Cfg128x256m2 = TileConfig<2, 1, 256, 4, 1, 2, false, 1, kStaged>;
using Cfg128x128m2 = TileConfig<2, 1, 128, 7, 1, 2, false, 1, kStaged>;
using Cfg128x128pp = TileConfig<2, 1, 128, 7, 1, 1, true>;
using Cfg128x128ppm2 = TileConfig<2, 1, 128, 7, 1, 2, true>;
using Cfg192x128 = TileConfig<1, 2, 64, 5, 1, 1, false, 3, kStaged>;
using Cfg128x224 = TileConfig<2, 1, 224, 5, 1, 1, false, 1, kStaged>;
using Cfg128x192 = TileConfig<2, 1, 192, 5, 1, 1, false, 1, kStaged>;
using Cfg128x160 = TileConfig<2, 1, 160, 5, 1, 1, false, 1, kStaged>;
using Cfg192x192 = TileConfig<1, 2, 96, 4, 1, 1, false, 3, kStaged>;
using Cfg256x160 = TileConfig<2, 1, 160, 3, 1, 1, false, 2, kStaged>;
using Cfg128x96 = TileConfig<2, 1, 96, 8, 1, 1, false, 1, kStaged>;
// 192x192 as three consumer warpgroups along M, one m64n192 fragment each
// (96 accumulator registers), sharing B. Per k16 step the CTA's wgmmas read
// 3 x (64 + 192) x 16 elements of shared memory where 192x192's two
// warpgroups of three stacked m64n96 fragments read 6 x (64 + 96) x 16: 20 %
// fewer bytes. 3 stages (the third warpgroup's staging buffers take the
// fourth).
using Cfg192x192w3 = TileConfig<3, 1, 192, 4, 1, 1, false, 1, kStaged>;
// 192x128 the same way: three m64n128 fragments where 192x128 has two
// warpgroups of three stacked m64n64 (3 x 192 against 6 x 128 elements of
// shared memory read per k16 row of the tile: 25 % fewer); 4 stages.
using Cfg192x128w3 = TileConfig<3, 1, 128, 5, 1, 1, false, 1, kStaged>;
using Cfg128x168 = TileConfig<2, 1, 168, 5, 1, 1, false, 1, kStaged>;
using Cfg64x96 = TileConfig<1, 1, 96, 8>;
using Cfg16x32s = MmaTileConfig<1, 2, 2, 32>;
using Cfg16x64s = MmaTileConfig<1, 4, 2, 24>;
using Cfg32x64s = MmaTileConfig<2, 4, 2, 20>;
// 7 consumer warps x 16 columns: N = 14336 in 128 CTAs, one round on 132
// SMs (16x64s: 224, 1.7 rounds); 13 stages of 16 KiB.
using Cfg16x112s = MmaTileConfig<1, 7, 2, 16>;

// The measurement entries: forced only (SAMEBITS_GEMM_TILE), never chosen
// by pick_gemm_tile, kept to compare against (cluster and ping-pong
// entries, 64x256, 32x64s, and the two-warpgroup layouts of 192x128 and
// 192x192). A build includes them only with -DSAMEBITS_GEMM_RESEARCH_TILES=ON
// (cmake/cuda_dense_sources.cmake): they are about a third of the library's
// compile time. Forcing one that the build lacks is an error naming the
// option, never a silent fall back.
#ifndef SAMEBITS_GEMM_RESEARCH_TILES
#define SAMEBITS_GEMM_RESEARCH_TILES 0
#endif
template <class Cfg>
inline constexpr bool kGemmResearchCfg = false;
template <> inline constexpr bool kGemmResearchCfg<Cfg64x256> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg128x256m2> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg128x128m2> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg128x128pp> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg128x128ppm2> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg32x64s> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg192x128> = true;
template <> inline constexpr bool kGemmResearchCfg<Cfg192x192> = true;
// Whether this build has entry Cfg's kernels.
template <class Cfg>
inline constexpr bool kGemmCfgBuilt = SAMEBITS_GEMM_RESEARCH_TILES != 0 || !kGemmResearchCfg<Cfg>;

inline const char* gemm_tile_name(GemmTile t) {
  switch (t) {
    case GemmTile::T64x32: return "64x32";
    case GemmTile::T64x64: return "64x64";
    case GemmTile::T64x128: return "64x128";
    case GemmTile::T64x256: return "64x256";
    case GemmTile::T128x128: return "128x128";
    case GemmTile::T128x256: return "128x256";
    case GemmTile::T64x128c2: return "64x128c2";
    case GemmTile::T128x256m2: return "128x256m2";
    case GemmTile::T128x128m2: return "128x128m2";
    case GemmTile::T128x128pp: return "128x128pp";
    case GemmTile::T128x128ppm2: return "128x128ppm2";
    case GemmTile::T16x32s: return "16x32s";
    case GemmTile::T16x64s: return "16x64s";
    case GemmTile::T16x112s: return "16x112s";
    case GemmTile::T32x64s: return "32x64s";
    case GemmTile::T192x128: return "192x128";
    case GemmTile::T128x224: return "128x224";
    case GemmTile::T128x192: return "128x192";
    case GemmTile::T128x160: return "128x160";
    case GemmTile::T192x192: return "192x192";
    case GemmTile::T256x160: return "256x160";
    case GemmTile::T192x192w3: return "192x192w3";
    case GemmTile::T192x128w3: return "192x128w3";
    case GemmTile::T128x168: return "128x168";
    case GemmTile::T64x96: return "64x96";
    default: return "128x96";
  }
}

// Calls f(Cfg{}) with the configuration type of entry t (host and device
// code alike derive the shapes from the type, never from a second table).
template <class F>
decltype(auto) visit_gemm_tile(GemmTile t, F&& f) {
  switch (t) {
    case GemmTile::T64x32: return f(Cfg64x32{});
    case GemmTile::T64x64: return f(Cfg64x64{});
    case GemmTile::T64x128: return f(Cfg64x128{});
    case GemmTile::T64x256: return f(Cfg64x256{});
    case GemmTile::T128x128: return f(Cfg128x128{});
    case GemmTile::T128x256: return f(Cfg128x256{});
    case GemmTile::T64x128c2: return f(Cfg64x128c2{});
    case GemmTile::T128x256m2: return f(Cfg128x256m2{});
    case GemmTile::T128x128m2: return f(Cfg128x128m2{});
    case GemmTile::T128x128pp: return f(Cfg128x128pp{});
    case GemmTile::T128x128ppm2: return f(Cfg128x128ppm2{});
    case GemmTile::T16x32s: return f(Cfg16x32s{});
    case GemmTile::T16x64s: return f(Cfg16x64s{});
    case GemmTile::T16x112s: return f(Cfg16x112s{});
    case GemmTile::T32x64s: return f(Cfg32x64s{});
    case GemmTile::T192x128: return f(Cfg192x128{});
    case GemmTile::T128x224: return f(Cfg128x224{});
    case GemmTile::T128x192: return f(Cfg128x192{});
    case GemmTile::T128x160: return f(Cfg128x160{});
    case GemmTile::T192x192: return f(Cfg192x192{});
    case GemmTile::T256x160: return f(Cfg256x160{});
    case GemmTile::T192x192w3: return f(Cfg192x192w3{});
    case GemmTile::T192x128w3: return f(Cfg192x128w3{});
    case GemmTile::T128x168: return f(Cfg128x168{});
    case GemmTile::T64x96: return f(Cfg64x96{});
    default: return f(Cfg128x96{});
  }
}

inline bool gemm_tile_built(GemmTile t) {
  return visit_gemm_tile(t, [](auto cfg) { return kGemmCfgBuilt<decltype(cfg)>; });
}
inline bool gemm_tile_research(GemmTile t) {
  return visit_gemm_tile(t, [](auto cfg) { return kGemmResearchCfg<decltype(cfg)>; });
}

// BITS-FREE: the choice follows M (and N, the batch and the SM count) only
// through tile shape; see the top of this file. Thresholds from the sweep of
// 2026-11-21 (H200, docs/benchmarks_dense.md).
inline GemmTile pick_gemm_tile(int64_t m, int64_t n, int64_t batch, int sms) {
  auto tiles = [&](int bm, int bn) { return batch * ((m + bm - 1) / bm) * ((n + bn - 1) / bn); };
  const int64_t s = sms;
  // Multi-tile rule: of the staged entries below, the least cost = rounds of
  // `sms` tiles x tile area x the entry's time per output element relative
  // to 128x256 (per mille; a narrow tile is load-bound). Ties go to the
  // earlier entry. The shapes let the tile count fill whole rounds: N = 4096
  // at M = 1152 is 132 tiles of 192x192, at M = 1280 130 tiles of 256x160,
  // at M = 640 130 of 128x160, where 128x256 needs two rounds for 144 and
  // 160 tiles and leaves 52 SMs idle with 80. The factors were fitted to an H100 sweep
  // of every entry at N x K in {4096, 14336}^2 and M = 256-1792 (twelfth
  // session, bench/results/2026-11-22_h100_s12_gemm_widths/run3_unrolled/):
  // with them the rule picks the fastest of the eight entries, or one within
  // 1 % of it, at every point of it.
  // (Before, the rule weighed 128x256, 128x192 and 128x128 by their load
  // bytes per flop; bench/results/2026-11-22_h100_s8_{sweep,m2}/.)
  struct Shape {
    int bm, bn, per_mille;
    GemmTile tile;
  };
  auto cost = [&](int bm, int bn, int per_mille) {
    return (tiles(bm, bn) + s - 1) / s * (int64_t(bm) * bn) * per_mille;
  };
  // The multi-tile rule's entry (above), its cost in c.
  auto wide_tile = [&](int64_t& c) {
    constexpr Shape kShapes[] = {{128, 256, 1000, GemmTile::T128x256}, {192, 192, 1000, GemmTile::T192x192w3},
                                 {256, 160, 1030, GemmTile::T256x160}, {128, 224, 1020, GemmTile::T128x224},
                                 {128, 192, 1060, GemmTile::T128x192}, {128, 160, 1150, GemmTile::T128x160},
                                 {128, 128, 1250, GemmTile::T128x128}, {128, 96, 1400, GemmTile::T128x96},
                                 {128, 168, 1150, GemmTile::T128x168}};
    GemmTile best = GemmTile::T128x256;
    c = -1;
    for (const Shape& e : kShapes) {
      const int64_t ce = cost(e.bm, e.bn, e.per_mille);
      if (c < 0 || ce < c) best = e.tile, c = ce;
    }
    return best;
  };
  int64_t wide_cost = 0;
  // 32 < M <= 128: where the entry the rule below names needs more than one
  // round of tiles, the entry of least area that needs one, if any (H100,
  // twenty-eighth session, kernel times with the L2 flushed: 128 x 6144 x
  // 4096 27.4 us with 64x64 in two rounds against 25.0 with 64x128 in one;
  // 80 x 18944 x 4096 71.6 with 128x128 against 59.3 with 128x160; 40 x
  // 5120 x 4096 26.9 with 64x32 against 20.7 with 64x64). Never a tile
  // taller than both M and the entry it replaces: the TMA's zero fill of
  // the rows past M is slow (H100, 80 x 11008 x 4096: 39.5 us with 64x64 in
  // three rounds, 42.0 with 128x96 in one; H200, 40 x 18944 x 4096: 51.7
  // with 64x128 in two rounds, 59.6 with 128x160 in one).
  auto one_round = [&](GemmTile t) {
    struct Entry {
      int bm, bn;
      GemmTile tile;
    };
    constexpr Entry kByArea[] = {{64, 64, GemmTile::T64x64},     {64, 128, GemmTile::T64x128},
                                 {128, 96, GemmTile::T128x96},   {128, 128, GemmTile::T128x128},
                                 {128, 160, GemmTile::T128x160}, {128, 168, GemmTile::T128x168},
                                 {128, 192, GemmTile::T128x192}, {128, 224, GemmTile::T128x224},
                                 {128, 256, GemmTile::T128x256}};
    const int rows = visit_gemm_tile(t, [](auto cfg) { return decltype(cfg)::BM; });
    const int cols = visit_gemm_tile(t, [](auto cfg) { return decltype(cfg)::BN; });
    if (tiles(rows, cols) <= s) return t;
    for (const Entry& e : kByArea)
      if (tiles(e.bm, e.bn) <= s && (e.bm <= m || e.bm <= rows)) return e.tile;
    return t;
  };
  if (m <= 64) {
    // "wide": even one row of 64x128 tiles is >= 0.75 wave (N >= ~12k on 132 SMs)
    const bool wide = 4 * tiles(64, 128) >= 3 * s;
    // M <= 32: the mma.sync entries, whose k chain is short enough that the
    // weight bytes set the time (L2 flushed, 2026-11-21 sixth session:
    // 0.92-1.06x cuBLAS on an H100 and 0.90-1.01x on an H200 with the
    // choice below, against 0.80-1.05x and 0.58-0.97x for the wgmma entries;
    // bench/results/2026-11-21_*_s6_gemm_mma/). Narrow N at M <= 16: 16x32s
    // (N / 32 CTAs; 2-6 % faster than 16x64s on the H100, 0-6 % slower on
    // the H200); otherwise 16x64s.
    // Wide N at M <= 16 where 16x112s makes one round and 16x64s does not
    // (N = 14336: 128 CTAs against 224): 16x112s (H100, 1 and 16 x 14336
    // x 4096: 1.00x and 1.02x cuBLAS against 16x64s's 0.99x; same bits,
    // bench/results/2026-12-07_h100_s40/).
    if (m <= 16 && wide && tiles(16, 112) <= s && tiles(16, 64) > s) return GemmTile::T16x112s;
    if (m <= 16) return wide ? GemmTile::T16x64s : GemmTile::T16x32s;
    if (m <= 32 && !wide) return GemmTile::T16x64s;
    if (wide) return m > 32 ? one_round(GemmTile::T64x128) : GemmTile::T64x128;
    // narrow N, 32 < M <= 64: 64x32 (twice the CTAs of 64x64)
    return one_round(GemmTile::T64x32);
  }
  if (m <= 128) return one_round(4 * tiles(128, 128) >= 3 * s ? GemmTile::T128x128 : GemmTile::T64x64);
  if (m <= 256) {
    // 128 < M <= 192 with >= 0.75 wave of 128-column tiles: 192x128, three
    // stacked m64n64 chains per consumer warpgroup sharing each B slice, B
    // read once per column tile (H100, L2 flushed, 2026-11-21 sixth session:
    // 0.91-0.96x cuBLAS against 0.72-0.91x for 64x128c2;
    // bench/results/2026-11-21_h100_s6_gemm_frags/).
    // (192x128w3 since the twenty-sixth session: the same tile as three
    // m64n128 warpgroups, 1-1.5 % faster there, 3-8 % elsewhere.)
    if (m <= 192 && 4 * tiles(192, 128) >= 3 * s) return GemmTile::T192x128w3;
    // 192 < M <= 256: 128-row tiles waste no more rows than 64-row ones;
    // with >= 1 wave of them, the wide-tile rule (N = 128256 at M = 200:
    // 128x256, 452 us against 651 for 128x128pp, H100)
    if (m > 192 && tiles(128, 128) >= s) return wide_tile(wide_cost);
    if (tiles(64, 128) > 2 * s) return GemmTile::T64x128c2;
    // 64x128 in two rounds (N = 5.6k-12.7k at M <= 192, 4.2k-8.4k above):
    // a 128-row entry of the multi-tile rule, often in one round, where it
    // costs less, 64x128 weighing 1800 per mille (H100, twenty-eighth
    // session: one round of 64x128 at 192 x 4096 x 4096 20.0 us against
    // 23.4 for one of 128x96 at 384 x 4096 x 4096; 256 x 6144 x 4096
    // 34.5 us with 64x128, cuBLAS 24.5)
    if (tiles(64, 128) > s) {
      const GemmTile w = wide_tile(wide_cost);
      if (wide_cost < cost(64, 128, 1800)) return w;
    }
    // One round of 64x128: 64x96 where it is one round too (N <= ~4.2k at
    // M <= 192, ~3.2k above), a quarter less work a CTA (H100, twenty-eighth
    // session: 192 x 4096 x 4096 20.6 -> 19.2 us, cuBLAS 18.5; 192 x 4096 x
    // 14336 55.1 -> 51.8)
    if (tiles(64, 96) <= s) return GemmTile::T64x96;
    return GemmTile::T64x128;
  }
  if (m >= 2048) return GemmTile::T128x256;
  if (2 * tiles(128, 128) >= s) return wide_tile(wide_cost);  // >= 0.5 wave of 128x128
  return GemmTile::T64x128;
}

}  // namespace samebits::cuda::dense::sm90
