// Body of the per-configuration launcher; included only by the
// attention_decode_sm90_hdim<D>_<dtype>.cu files, each instantiating one Cfg.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/backend.h"
#include "cuda/attention_decode_sm90_combine.h"
#include "cuda/attention_decode_sm90_kernel.h"
#include "cuda/attention_decode_sm90_launch.h"
#include "cuda/attention_decode_sm90_spread.h"
#include "cuda/device_info.h"
#include "cuda/kernel_attributes.h"

namespace samebits::cuda::sm90 {

// Whether pass 1 runs its kernel's lean twin (DecodeConfig::kLean): where
// every block of the call comes by TMA and there is no softcap. The split
// and fold kernels only: the walk's twin measured ~1 % slower at 16 x 4k
// and 64 x 4k, the spread's no faster (H100, docs/decode_design.md, "The
// lean twins").
// SAMEBITS_DECODE_LEAN=0: never (measurement; the same bits either way;
// read on every call).
inline bool decode_lean(const AttentionDecodeParams& params) {
  if (!params.use_tma || params.has_softcap) return false;
  const char* env = std::getenv("SAMEBITS_DECODE_LEAN");
  return env == nullptr || env[0] != '0';
}

// Pass 1 of one schedule (DecodeConfig<D, dtype, variant>).
template <class Cfg>
sb_status launch_split(const AttentionDecodeParams& params, cudaStream_t stream) {
  if constexpr (!Cfg::kLean) {
    if (decode_lean(params)) return launch_split<typename DecodeLeanOf<Cfg>::type>(params, stream);
  }
  auto split_kernel = attention_decode_split_sm90_kernel<Cfg>;
  // Two CTAs per SM need the whole carveout as shared memory (a hint the
  // driver may otherwise resolve toward more L1, which a TMA stream does not
  // use).
  if (cudaError_t err = opt_in_shared_memory<attention_decode_split_sm90_kernel<Cfg>>(
          Cfg::kSmemBytes, Cfg::kCtasPerSm > 1);
      err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: cudaFuncSetAttribute: ") +
                                   cudaGetErrorString(err));
  // x = split, y = packed query tile, z = sequence x KV head (kHeadMajor:
  // x = split x KV head, z = sequence). CTAs whose split no row of the tile
  // sees exit at once (writing their rows when direct_out).
  const dim3 grid1 =
      Cfg::kHeadMajor
          ? dim3(static_cast<unsigned>(params.max_splits * params.num_heads_k),
                 static_cast<unsigned>(params.tiles_per_seq), static_cast<unsigned>(params.batch))
          : dim3(static_cast<unsigned>(params.max_splits), static_cast<unsigned>(params.tiles_per_seq),
                 static_cast<unsigned>(params.batch * params.num_heads_k));
  split_kernel<<<grid1, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: split kernel launch: ") +
                                   cudaGetErrorString(err));
  return SB_OK;
}

// A launch of `grid` CTAs in clusters of `cluster` CTAs along x
// (cudaLaunchKernelEx). Holds the attribute its config points at: not
// copied or moved.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  ClusterLaunch(dim3 grid, int threads, size_t smem, cudaStream_t stream, unsigned cluster) {
    cfg.gridDim = grid;
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// The most clusters of `cfg` (clusters of `n` <= 8 CTAs along x) of
// `kernel` that can be resident at once on the current device
// (cudaOccupancyMaxActiveClusters), asked once per device and n; 0 where
// none fits or a query fails.
template <auto kernel>
int resident_clusters(const cudaLaunchConfig_t& cfg, int n) {
  static std::atomic<int> known[64][9];  // the answer + 1; 0: not asked yet
  int dev = 0;
  if (n < 1 || n > 8 || cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
    cudaGetLastError();
    return 0;
  }
  int v = known[dev][n].load(std::memory_order_relaxed);
  if (v == 0) {
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess) {
      cudaGetLastError();  // clears only this query's error
      clusters = 0;
    }
    v = clusters + 1;
    known[dev][n].store(v, std::memory_order_relaxed);
  }
  return v - 1;
}

// Pass 1 as clusters of kCluster CTAs (kDecodeSpread: 8, kDecodeSpread4:
// 4; Cfg: the mma consumer's configuration). Grid (max_splits * kCluster,
// tiles, batch * Hk). Sets *launched = false, launching nothing, where no
// such cluster can be resident on this device (a partition of few SMs):
// the caller then runs the one-CTA schedule, which gives the same bits.
template <class Cfg, int kCluster>
sb_status launch_spread(const AttentionDecodeParams& params, cudaStream_t stream, bool* launched) {
  *launched = false;
  using Spread = DecodeSpread<Cfg, kCluster>;
  constexpr auto kernel = attention_decode_spread_sm90_kernel<Cfg, kCluster>;
  if (cudaError_t err = opt_in_shared_memory<kernel>(Spread::kSmemBytes, Spread::kCtasPerSm > 1);
      err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: cudaFuncSetAttribute: ") +
                                   cudaGetErrorString(err));
  const ClusterLaunch launch(dim3(static_cast<unsigned>(params.max_splits * Spread::kCluster),
                                 static_cast<unsigned>(params.tiles_per_seq),
                                 static_cast<unsigned>(params.batch * params.num_heads_k)),
                            Spread::kThreads, Spread::kSmemBytes, stream, Spread::kCluster);
  const cudaLaunchConfig_t& cfg = launch.cfg;
  if (resident_clusters<kernel>(cfg, Spread::kCluster) <= 0) return SB_OK;
  if (cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, params); err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: spread kernel launch: ") +
                                   cudaGetErrorString(err));
  *launched = true;
  return SB_OK;
}

// FREE. When the mma schedules (0, 4) fold a tile's splits inside pass 1
// (DecodeConfig::kFold) instead of launching the combine
// (SAMEBITS_DECODE_FOLD, read on every call): unset or 1 = the rule of
// launch_fold, 0 = never, `force` = wherever a cluster of the size fits,
// in as many waves as it takes (for tests: the suite's grids are small;
// and to measure the rule). All give the same bits.
// The knobs' three settings (SAMEBITS_DECODE_FOLD, SAMEBITS_DECODE_WALK):
// unset or anything else = the rule, "0" = never, "force".
enum class DecodeMode { kOff, kRule, kForce };
inline DecodeMode decode_env_mode(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr || env[0] == '\0') return DecodeMode::kRule;
  if (std::strcmp(env, "0") == 0) return DecodeMode::kOff;
  return std::strcmp(env, "force") == 0 ? DecodeMode::kForce : DecodeMode::kRule;
}
inline DecodeMode decode_fold_mode() { return decode_env_mode("SAMEBITS_DECODE_FOLD"); }

// FREE. The fewest clusters for which the rule folds. Measured on an H100
// (docs/decode_design.md, "The splits folded inside pass 1"; d 128, GQA 8:1,
// beside the combine in the same call, three rounds): 64 clusters of 2
// (8 x 2k) 7 % faster folded; 32 clusters (4 x 2k) and 8-16 clusters of 4
// (1-2 x 4k) within +-2 % either way; 16 clusters of 2 (2 x 2k) 2 % and 8
// of 8 (1 x 8k) 3-5 % slower; 32 clusters of 4 (4 x 4k: 30 resident) 10-20 %
// slower before the residency condition below. Schedule 4 (call 10):
// 16 x 2k (128 clusters of 2) 4.5 % and 8 x 4k (64 of 4) 1.5 % faster.
constexpr int64_t kFoldMinClusters = 32;

// Pass 1 with the fold inside (Cfg::kFold): grid (max_splits, tiles,
// batch * Hk) in clusters of (max_splits, 1, 1), so a cluster is one tile's
// splits, 2 to kFoldMaxSplits of them. Sets *launched = false, launching
// nothing, where the rule does not fold: fewer than kFoldMinClusters
// clusters, or more than can be resident at once on this device (the most
// resident clusters of n CTAs asked once per device and n); or where no
// such cluster fits at all. The caller then runs pass 1 and the combine,
// which give the same bits.
template <class Cfg>
sb_status launch_fold(const AttentionDecodeParams& params, cudaStream_t stream, DecodeMode mode, bool* launched) {
  if constexpr (!Cfg::kLean) {
    if (decode_lean(params))
      return launch_fold<typename DecodeLeanOf<Cfg>::type>(params, stream, mode, launched);
  }
  *launched = false;
  static_assert(Cfg::kFold && !Cfg::kHeadMajor, "clusters along x are one tile's splits");
  static_assert(kFoldMaxSplits <= 8, "portable clusters (resident_clusters)");
  const int n = params.max_splits;
  const int64_t clusters = static_cast<int64_t>(params.tiles_per_seq) * params.batch * params.num_heads_k;
  if (mode == DecodeMode::kOff || n < 2 || n > kFoldMaxSplits) return SB_OK;
  if (mode == DecodeMode::kRule && clusters < kFoldMinClusters) return SB_OK;
  constexpr auto kernel = attention_decode_split_sm90_kernel<Cfg>;
  if (cudaError_t err = opt_in_shared_memory<kernel>(Cfg::kSmemBytes, Cfg::kCtasPerSm > 1); err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: cudaFuncSetAttribute: ") +
                                   cudaGetErrorString(err));
  const ClusterLaunch launch(dim3(static_cast<unsigned>(n), static_cast<unsigned>(params.tiles_per_seq),
                                 static_cast<unsigned>(params.batch * params.num_heads_k)),
                            Cfg::kThreads, Cfg::kSmemBytes, stream, static_cast<unsigned>(n));
  const cudaLaunchConfig_t& cfg = launch.cfg;
  // Every cluster resident at once (the rule): 4 x 4k (32 clusters of 4,
  // 30 resident on an H100) ran 10-20 % slower folded than with the
  // combine, as if the last clusters waited for a second wave.
  const int fit = resident_clusters<kernel>(cfg, n);
  if (fit <= 0 || (mode == DecodeMode::kRule && clusters > fit)) return SB_OK;
  if (cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, params); err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: split kernel launch (fold): ") +
                                   cudaGetErrorString(err));
  *launched = true;
  return SB_OK;
}

// FREE. Where the mma schedule walks every split of a tile in one CTA and
// folds them itself (DecodeConfig::kWalk; no partials, no combine):
// SAMEBITS_DECODE_WALK (read on every call) unset or 1 = the rule below,
// 0 = never, `force` = wherever a tile has more than one split. All give
// the same bits.
inline DecodeMode decode_walk_mode() { return decode_env_mode("SAMEBITS_DECODE_WALK"); }

// FREE. Where the rule walks, in tiles (sequence x KV head x packed query
// tile; a walk is one CTA, two an SM): at least kWalkMinTiles, and a last
// wave of walks (of 2 x SMs) either whole or of at least kWalkMinTail
// tiles, so that the walks still running at the end keep the device's
// memory busy. Measured on an H100 (docs/decode_design.md, "Every split in
// one CTA"; d 128, GQA 8:1, walk against the split schedules and combine):
// 128-512 tiles 1-7 % faster (16 x 4k, 16 x 16k, 24-32 x 4k, 32 x 8k,
// 48 x 4k, 64 x 4k), 2048 tiles 2 %; 64 tiles (8 x 8k) 5 % and 320 tiles
// (40 x 4k: a last wave of 56) 3 % slower.
constexpr int64_t kWalkMinTiles = 128;
constexpr int64_t kWalkMinTail = 96;

// Whether the rule walks `tiles` on a device of `sms` SMs (two walks an SM;
// no SM count known: no).
constexpr bool walk_pays(int64_t tiles, int64_t sms) {
  if (sms <= 0 || tiles < kWalkMinTiles) return false;
  const int64_t tail = tiles % (2 * sms);
  return tail == 0 || tail >= kWalkMinTail;
}
static_assert(walk_pays(128, 132) && walk_pays(384, 132) && walk_pays(2048, 132) && !walk_pays(320, 132) &&
                  !walk_pays(64, 132) && !walk_pays(2048, 0),
              "the measured shapes");

// Pass 1 as one walk per tile (Cfg::kWalk): grid (Hk, tiles, batch). Sets
// *launched = false, launching nothing, where it does not walk (one split,
// or where walk_pays says no); the caller then runs the split schedules,
// which give the same bits.
template <class Cfg>
sb_status launch_walk(const AttentionDecodeParams& params, cudaStream_t stream, DecodeMode mode, bool* launched) {
  *launched = false;
  static_assert(Cfg::kWalk, "the walk's configuration");
  const int64_t tiles = static_cast<int64_t>(params.tiles_per_seq) * params.batch * params.num_heads_k;
  if (mode == DecodeMode::kOff || params.max_splits < 2) return SB_OK;
  if (mode == DecodeMode::kRule && !walk_pays(tiles, device_sm_count())) return SB_OK;
  constexpr auto kernel = attention_decode_split_sm90_kernel<Cfg>;
  if (cudaError_t err = opt_in_shared_memory<kernel>(Cfg::kSmemBytes, Cfg::kCtasPerSm > 1); err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: cudaFuncSetAttribute: ") +
                                   cudaGetErrorString(err));
  const dim3 grid(static_cast<unsigned>(params.num_heads_k), static_cast<unsigned>(params.tiles_per_seq),
                  static_cast<unsigned>(params.batch));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(params);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: split kernel launch (walk): ") +
                                   cudaGetErrorString(err));
  *launched = true;
  return SB_OK;
}

// FREE. Whether the combine is launched with programmatic dependent launch
// (SAMEBITS_DECODE_PDL: unset or 1 = yes, 0 = a plain launch; read on every
// call). Either way the combine reads the partials only after pass 1 has
// completed (griddepcontrol.wait, a no-op for a plain launch, which the
// stream orders after pass 1).
// An on/off knob that is on unless set to "0".
inline bool decode_env_on(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || env[0] == '\0' || std::strcmp(env, "0") != 0;
}
inline bool decode_pdl_enabled() { return decode_env_on("SAMEBITS_DECODE_PDL"); }

// Pass 2: one row group (DecodeCombine::kRowThreads threads) per output
// row, or per column part of a row (below), right behind pass 1 on the
// stream. With programmatic stream
// serialization its CTAs may be scheduled once every CTA of pass 1 has
// started (pass 1 triggers at its top) and run their prologue while pass 1
// drains; the launch is captured by CUDA graphs as a programmatic edge. If
// the driver refuses the attribute, a plain launch.
//
// Column parts (DecodeCombine, FREE): where the rows see many splits (at
// least kCombinePartsMinSplits) and are at most two an SM, each row's
// columns are cut in two, so that a row's partials load through two SMs.
// H100, bench_decode --graph, d 128, GQA 8:1 (docs/decode_design.md, "The
// combine's columns on more SMs"): 1 x 128k 200.5-200.9 -> 199.4-199.5 us,
// 2 x 32k 106.4-106.5 -> 104.3, 4 x 32k 197.2-197.5 -> 195.6-195.8,
// 1 x 16k 37.2-37.4 -> 36.6-36.9; four parts measured no better.
// SAMEBITS_DECODE_COMBINE_PARTS=1, 2 or 4 forces a count (d >= 128; read
// on every call).
constexpr int kCombinePartsMinSplits = 16;
template <class Cfg>
int combine_parts(const AttentionDecodeParams& params, int64_t rows) {
  if (DecodeCombine<Cfg>::kRowsPerCta != 1) return 1;
  const char* env = std::getenv("SAMEBITS_DECODE_COMBINE_PARTS");
  if (env != nullptr && env[0] != '\0') {
    const int v = std::atoi(env);
    return v >= 4 ? 4 : v >= 2 ? 2 : 1;
  }
  if (params.max_splits < kCombinePartsMinSplits) return 1;
  return rows <= 2 * int64_t(device_sm_count()) ? 2 : 1;
}

// FREE. Whether the combine warms its code before the wait
// (DecodeCombine::run; SAMEBITS_DECODE_COMBINE_WARM: unset or 1 = yes, 0 =
// no; read on every call). Only with programmatic dependent launch: a plain
// launch starts after pass 1, where the dry pass would only add to the
// critical path. The same bits either way.
inline bool decode_combine_warm() { return decode_env_on("SAMEBITS_DECODE_COMBINE_WARM"); }

template <class Cfg>
sb_status launch_combine(const AttentionDecodeParams& params_in, cudaStream_t stream) {
  using Combine = DecodeCombine<Cfg>;
  auto combine_kernel = attention_decode_combine_sm90_kernel<Cfg>;
  AttentionDecodeParams params = params_in;
  const int64_t rows = static_cast<int64_t>(params.batch) * params.num_heads * params.q_count;
  params.combine_parts = combine_parts<Cfg>(params, rows);
  const dim3 grid(static_cast<unsigned>((rows + Combine::kRowsPerCta - 1) / Combine::kRowsPerCta *
                                        params.combine_parts));
  const dim3 block(static_cast<unsigned>(Combine::kThreads / params.combine_parts));
  const size_t smem = Combine::smem_bytes(params.max_splits);  // <= 48 KiB: no opt-in
  if (decode_pdl_enabled()) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    params.combine_warm = decode_combine_warm() ? 1 : 0;
    if (cudaLaunchKernelEx(&cfg, combine_kernel, params) == cudaSuccess) return SB_OK;
    cudaGetLastError();  // not sticky: clear it and launch plainly
  }
  params.combine_warm = 0;
  combine_kernel<<<grid, block, smem, stream>>>(params);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return fail(SB_CUDA_ERROR, std::string("attention_decode_sm90: combine kernel launch: ") +
                                   cudaGetErrorString(err));
  return SB_OK;
}

template <class Cfg>
sb_status launch_attention_decode(const AttentionDecodeParams& params, int variant, bool mma,
                                  cudaStream_t stream) {
  constexpr int D = Cfg::kHeadDim;
  constexpr bool kBf16 = Cfg::kBf16;
  sb_status st = SB_OK;
  bool spread = false;
  if (variant == kDecodeSpread && mma)
    st = launch_spread<DecodeConfig<D, kBf16, kDecodeMain, true>, 8>(params, stream, &spread);
  else if (variant == kDecodeSpread4 && mma && D <= 128)
    st = launch_spread<DecodeConfig<D, kBf16, kDecodeMain, true>, D <= 128 ? 4 : 8>(params, stream, &spread);
  if (st != SB_OK) return st;
  if (!spread) {  // the one-CTA schedules (also where no cluster fits)
    // The mma schedules of 2 to 8 splits may fold them inside pass 1 (no
    // combine; launch_fold says where).
    if (mma && !params.direct_out) {
      const DecodeMode walk = decode_walk_mode();
      // (the rule's schedule at these grids is 4; a forced 0 keeps the splits)
      if (variant == kDecodeTwoPerSmHeadMajor || walk == DecodeMode::kForce) {
        bool walked = false;
        st = launch_walk<DecodeConfig<D, kBf16, kDecodeTwoPerSmHeadMajor, true, false, true>>(params, stream, walk,
                                                                                              &walked);
        if (st != SB_OK || walked) return st;
      }
      bool folded = false;
      st = variant == kDecodeTwoPerSmHeadMajor
               ? launch_fold<DecodeConfig<D, kBf16, kDecodeTwoPerSmHeadMajor, true, true>>(params, stream,
                                                                                             decode_fold_mode(), &folded)
               : launch_fold<DecodeConfig<D, kBf16, kDecodeMain, true, true>>(params, stream, decode_fold_mode(),
                                                                              &folded);
      if (st != SB_OK || folded) return st;
    }
    if (variant == kDecodeTwoPerSmHeadMajor)
      st = mma ? launch_split<DecodeConfig<D, kBf16, kDecodeTwoPerSmHeadMajor, true>>(params, stream)
               : launch_split<DecodeConfig<D, kBf16, kDecodeTwoPerSmHeadMajor>>(params, stream);
    else
      st = mma ? launch_split<DecodeConfig<D, kBf16, kDecodeMain, true>>(params, stream)
               : launch_split<DecodeConfig<D, kBf16, kDecodeMain>>(params, stream);
  }
  if (st != SB_OK || params.direct_out) return st;  // direct_out: pass 1 wrote out and lse
  return launch_combine<Cfg>(params, stream);
}

}  // namespace samebits::cuda::sm90
