// sm90 attention over a KV cache (decode, speculative verify, chunked
// prefill): the params struct of the split kernel and the combine kernel
// (filled on the host, passed by value as a __grid_constant__), the tile
// configuration of each (head dim, dtype), and the workspace layout.
//
// The numerics are the forward's (docs/numerics.md; docs/decode_design.md
// says which forward function computes each step). Everything in this file
// except kBlockN and kSplit is FREE: it shapes the work, never a reduction.
#pragma once

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "samebits/config.h"

namespace samebits::cuda::sm90 {

struct AttentionDecodeParams {
  // Tensor maps over the K and V caches as 4D (dim, slot, head, page) with
  // 128-byte swizzled boxes of 64 columns x box_rows slots. A contiguous
  // cache is a paged cache with one page of seqlen_k slots per sequence
  // (page = sequence). Only used when use_tma is set.
  CUtensorMap tma_k, tma_v;
  // V again, boxes of d / 8 (kDecodeSpread4: d / 4) columns x box_rows
  // slots, unswizzled: the columns one CTA of the spread schedules reads.
  // Set only for those schedules.
  CUtensorMap tma_v_cols;

  // Raw views. q, out: (batch, seqlen_q, num_heads, d); k, v: (page, slot,
  // num_heads_k, d); lse: (batch, num_heads, seqlen_q) f32. Strides in
  // elements.
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_page_stride, k_row_stride, k_head_stride;
  int64_t v_page_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_row_stride, lse_head_stride;

  // Geometry. seqused_k and block_table live on the device; seqused_k may be
  // null (every sequence has seqlen_k keys), block_table is null for a
  // contiguous cache.
  const int32_t* seqused_k;
  const int32_t* block_table;
  int64_t block_table_batch_stride;
  int32_t page_size;  // paged: slots per page; contiguous: seqlen_k
  int32_t box_rows;   // slots per TMA box: min(page_size, kBlockN)
  int32_t use_tma;    // 0: every K/V block is loaded by hand (odd page sizes or strides)
  int32_t batch;
  int32_t num_heads;
  int32_t num_heads_k;
  int32_t head_group;  // num_heads / num_heads_k: query heads packed into one tile
  int32_t seqlen_q;    // query rows per sequence (dense q)
  int32_t seqlen_k;    // cache capacity in keys; seqused_k is clamped to it

  // Logits: the forward's constants (AttentionFwdParams), computed on the
  // host by the same f32 expressions.
  float scale_log2;
  float softcap_in;
  float softcap_out;
  int32_t has_softcap;
  int32_t window_left;   // < 0: unbounded
  int32_t window_right;  // < 0: unbounded

  // This launch (a "wave") covers query rows [q_begin, q_begin + q_count) of
  // every sequence; the host cuts seqlen_q into waves so that one wave's
  // partials fit the workspace (FREE: waves never share a reduction).
  int32_t q_begin;
  int32_t q_count;
  int32_t tiles_per_seq;  // packed 64-row tiles per (sequence, KV head): ceil(q_count * head_group / 64)
  int32_t max_splits;     // ceil(seqlen_k / kSplit): the split stride of the workspace

  // Workspace (f32 partials of every split, see DecodeWorkspace).
  float* ws_acc;  // [row][split][d]
  float* ws_ml;   // [row][split][2]: (m, l)

  // FREE. Set when no row can see more than one split (max_splits == 1) and
  // the schedule allows it (decode_direct_out): pass 1 writes out and lse
  // itself with the
  // combine's arithmetic (decode_finish_row), the workspace is not touched
  // and no combine is launched. The combine copies a row's first split
  // without arithmetic, so the output of a one-split row is a function of
  // the split state alone, computed by the same operations either way.
  int32_t direct_out;

  // FREE. The combine's column parts per row (1, 2 or 4; DecodeCombine,
  // set by launch_combine).
  int32_t combine_parts;
  // FREE. The combine runs its code once dry before waiting for pass 1
  // (DecodeCombine::run; set by launch_combine).
  int32_t combine_warm;
  // FREE. Stages of the K/V ring the mma producer requests before Q has
  // landed (DecodeProducer::run, at most kStages; decode_early_stages in
  // attention_decode_sm90.cu sets it per call).
  int32_t early_stages;
};

// FREE. Schedules of the split kernel, selected per call on the host
// (SAMEBITS_DECODE_VARIANT, or the shape rule in attention_decode_sm90.cu).
// They change where K/V blocks wait in shared memory, how many CTAs share
// an SM, when each wgmma is issued and whether the combine is launched;
// never an operand, an operation or its order (docs/decode_design.md,
// "Variants").
//   0  main's kernel: deep ring, 1 CTA per SM, steps in series per block
//   4  2 CTAs per SM (one K and one V stage; d 64: 3 stages), steps in
//      series, the first K/V issued before Q, CTAs ordered KV head fastest
//      (grid x = split * Hk + hk): the Hk CTAs that read the same cache
//      pages (one head each, 256-byte pieces of each 2 KiB slot row at
//      d 128, Hk 8) start together. d 256 keeps the deep ring (its state
//      does not fit the 168 registers a thread gets with 2 x 160 threads
//      per SM).
// Every schedule but 0 at d 256 writes the rows of a one-split cache from
// pass 1 (direct_out, no combine; decode_direct_out). The numbers 1, 2, 3
// and 5 named schedules measured on an H100 and dropped on 2026-11-21
// (slower everywhere: docs/decode_design.md, "Variants"); they now select 0.
//   8  (the mma consumer's tiles only) one split computed by a cluster of
//      8 CTAs: CTA j loads K and V of the split's block(s) j, V's columns
//      [r d / 8, (r + 1) d / 8) straight into CTA r, which computes those
//      columns of P V; the softmax chain's values meet in distributed
//      shared memory (attention_decode_sm90_spread.h). For grids of a few
//      CTAs, where one SM's load path sets a split's time.
//   9  as 8 with clusters of 4 CTAs, two blocks each (d <= 128; d 256:
//      as 8).
// FREE. The most splits (cluster CTAs) the fold inside pass 1 takes: the
// portable cluster size.
constexpr int kFoldMaxSplits = 8;

enum DecodeVariant : int {
  kDecodeMain = 0,
  kDecodeTwoPerSmHeadMajor = 4,
  kDecodeSpread = 8,
  kDecodeSpread4 = 9,
};

// FREE. Whether a schedule writes the rows of a one-split cache from pass 1
// (direct_out, no combine). Every schedule except main's wgmma consumer at
// d 256, where the extra epilogue raises pass 1 from 195 to 214 registers
// (ptxas, no spills).
constexpr bool decode_direct_out(int variant, int head_dim, bool mma) {
  return mma || variant != kDecodeMain || head_dim <= 128;
}

// Workspace layout of one wave. Row index: ((b * num_heads + h) * q_count +
// (i - q_begin)); every row has max_splits slots, of which only the splits
// the row sees are written and read. Both arrays start 256-byte aligned.
struct DecodeWorkspace {
  static constexpr size_t kAlign = 256;
  static size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
  static size_t acc_bytes(int64_t rows, int max_splits, int head_dim) {
    return align_up(static_cast<size_t>(rows) * max_splits * head_dim * sizeof(float));
  }
  static size_t ml_bytes(int64_t rows, int max_splits) {
    return align_up(static_cast<size_t>(rows) * max_splits * 2 * sizeof(float));
  }
  // Bytes for `q_rows` query rows of every (sequence, head).
  static size_t bytes(int batch, int num_heads, int q_rows, int max_splits, int head_dim) {
    const int64_t rows = static_cast<int64_t>(batch) * num_heads * q_rows;
    return acc_bytes(rows, max_splits, head_dim) + ml_bytes(rows, max_splits) + kAlign;
  }
};

// Tile configuration of one (head dim, dtype). The names the forward's
// Consumer<Cfg> reads (kHeadDim, kBf16, kBlockN, kBlockM, kRowBytes) mean
// exactly what they mean in FwdConfig, so Consumer<DecodeConfig> runs the
// forward's own S = Q K^T, softmax step and P V (attention_fwd_sm90_mainloop.h).
template <int kHeadDim_, bool kBf16_, int kVariant_ = kDecodeMain, bool kMma_ = false, bool kFold_ = false,
          bool kWalk_ = false, bool kLean_ = false>
struct DecodeConfig {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kBf16 = kBf16_;
  static constexpr sb_dtype kDtype = kBf16 ? SB_BF16 : SB_F16;

  // BITS (config.h): keys per KV block and per split, the forward's.
  static constexpr int kBlockN = kv_block_size(kArchSm90, kHeadDim, kDtype);
  static constexpr int kSplit = split_size(kArchSm90, kHeadDim, kDtype);
  static_assert(kBlockN == 64 || kBlockN == 128, "KV block must be one wgmma N");
  static_assert(kSplit % kBlockN == 0, "a split holds whole KV blocks");
  static constexpr int kBlocksPerSplit = kSplit / kBlockN;

  // FREE. One consumer warpgroup of 64 packed rows (query row x query head
  // of one KV group) and one producer warp: 160 threads. No setmaxnreg: 160
  // threads leave every thread the 255-register maximum.
  static constexpr int kBlockM = 64;
  static constexpr int kConsumerThreads = 128;
  static constexpr int kThreads = kConsumerThreads + 32;
  // FREE. The schedule (DecodeVariant above).
  static constexpr int kVariant = kVariant_;
  static_assert(kVariant == kDecodeMain || kVariant == kDecodeTwoPerSmHeadMajor, "unknown decode variant");
  static constexpr bool kTwoPerSm = kVariant == kDecodeTwoPerSmHeadMajor && kHeadDim <= 128;
  // (kFold_: the grid keeps a tile's splits next to each other, the
  // cluster, whatever the schedule.)
  static constexpr bool kHeadMajor = kVariant == kDecodeTwoPerSmHeadMajor && !kFold_ && !kWalk_;
  static constexpr bool kEarlyKv = kVariant != kDecodeMain;     // K/V of the first stages before Q
  static constexpr bool kDirectOut = decode_direct_out(kVariant, kHeadDim, kMma_);  // one-split rows by pass 1
  static constexpr int kCtasPerSm = kTwoPerSm ? 2 : 1;
  // FREE. The consumer of a tile of at most 16 packed rows (decode at a
  // head group <= 16): warp-level mma.sync steps, which give the wgmma
  // steps' f32 results bit for bit (docs/decode_design.md, "The split's
  // chain on mma.sync"). The four consumer warps share the 16 rows: warp w
  // computes S for keys [w Bn / 4, (w + 1) Bn / 4) and O for head-dim
  // columns [w d / 4, (w + 1) d / 4); the row maxima, P and the row sums'
  // terms meet in shared memory (kXBytes). Q holds the 16 rows only.
  static constexpr bool kMma = kMma_;
  static constexpr int kQRows = kMma ? 16 : kBlockM;
  // FREE. The splits of a tile fold inside pass 1 (DecodeClusterFold,
  // attention_decode_sm90_mma.h): the grid's max_splits CTAs of one tile
  // (2 to kFoldMaxSplits) form a cluster, each leaves its split's partial
  // in its own shared memory, and after a cluster barrier the cluster folds
  // them as the combine does and writes out and lse; no workspace traffic,
  // no combine launch. The one-CTA schedules (0, 4) with the mma consumer;
  // schedule 4's grid is then split-major like 0's.
  static constexpr bool kFold = kFold_;
  static_assert(!kFold || kMma, "the fold runs with the mma consumer");
  // FREE. One CTA walks every split of its tile, one after the other
  // through one K/V ring, folds each finished split into the row's running
  // state in the combine's order (fold_weights, splits ascending, the first
  // one the row sees copied) and writes out and lse itself: no partials,
  // no combine launch. Grid (Hk, tiles, batch), KV head fastest. The mma
  // consumer only ("Every split in one CTA", docs/decode_design.md).
  static constexpr bool kWalk = kWalk_;
  // FREE. The split or fold kernel of a call whose blocks all come by TMA
  // and which has no softcap (launch_split, launch_fold pick it per call):
  // the hand loads and the mma consumer's softcap form are not compiled in.
  // The same functions run the same operations, so the same bits; it saves
  // code a call never runs (~5,600 -> ~3,000 instructions at d 128), which
  // a call fetches cold when another kernel ran before it.
  static constexpr bool kLean = kLean_;
  static_assert(!kWalk || (kMma && !kFold), "the walk runs with the mma consumer, without the cluster fold");
  // Arrivals that release a K or V stage: one per consumer warp after its
  // wgmma wait, or (kMma) every consumer thread after its ldmatrix reads.
  static constexpr int kEmptyArrivals = kMma ? kConsumerThreads : 4;
  // FREE. K/V pipeline depth (a split is kBlocksPerSplit blocks). Deep: the
  // ring fills one SM's shared memory. Two per SM: the most stages that let
  // two CTAs share an SM (d 64: 3 stages of 16 KiB, 104 KiB with Q;
  // d 128: one stage of 32 KiB each for K and V, 80 KiB with Q).
  static constexpr int kStages = kTwoPerSm ? (kHeadDim <= 64 ? 3 : 1) : (kHeadDim <= 64 ? 6 : 3);

  static constexpr int kChunk = 64;
  static constexpr int kChunks = kHeadDim / kChunk;
  static_assert(kHeadDim % kChunk == 0, "head dim must be a multiple of 64");
  static constexpr int kElemBytes = 2;
  static constexpr int kRowBytes = kChunk * kElemBytes;  // 128: the swizzle width

  // Shared memory, every tile 1024-byte aligned (swizzle atoms).
  static constexpr int kQBytes = kQRows * kHeadDim * kElemBytes;    // Q: 64 (kMma: 16) x d
  static constexpr int kKVBytes = kBlockN * kHeadDim * kElemBytes;  // K or V: Bn x d
  // kMma exchange: row maxima [warp][16] f32, row sums [16] f32, P as the
  // mma A fragments [Bn / 16][lane] x 16 bytes, P f32 [Bn / 8][h][j][lane].
  static constexpr int kXOffMax = 0;
  static constexpr int kXOffL = 256;
  static constexpr int kXOffP = 512;
  static constexpr int kXOffPf32 = kXOffP + kBlockN / 16 * 32 * 16;
  static constexpr int kXBytes = kMma ? (kXOffPf32 + kBlockN / 8 * 4 * 32 * 4 + 1023) / 1024 * 1024 : 0;
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  static constexpr int kOffV = kOffK + kStages * kKVBytes;
  static constexpr int kOffX = kOffV + kStages * kKVBytes;
  static constexpr int kOffBarriers = kOffX + kXBytes;
  // q_full, k_full[S], v_full[S], k_empty[S], v_empty[S]
  static constexpr int kNumBarriers = 1 + 4 * kStages;
  static constexpr int kSmemBytes = kOffBarriers + kNumBarriers * 8 + 1024;  // + base alignment
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles must keep 1024B alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm90 limit");
  // sm90: 228 KiB of shared memory per SM, 1 KiB of it reserved per CTA.
  static_assert(kCtasPerSm * (kSmemBytes + 1024) <= 228 * 1024, "CTAs per SM do not fit shared memory");
};

// The lean twin of a decode configuration (DecodeConfig::kLean).
template <class Cfg>
struct DecodeLeanOf;
template <int D, bool B, int V, bool M, bool F, bool W, bool L>
struct DecodeLeanOf<DecodeConfig<D, B, V, M, F, W, L>> {
  using type = DecodeConfig<D, B, V, M, F, W, true>;
};

}  // namespace samebits::cuda::sm90
