// sm90 attention forward: the kernel's params struct (filled on the host,
// passed by value as a __grid_constant__) and the tile configuration of each
// (head dim, dtype), with the shared-memory layout derived from it.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "samebits/config.h"

namespace samebits::cuda::sm90 {

struct AttentionFwdParams {
  // Tensor maps over q, k, v as 4D (dim, row, head, batch) with 128-byte
  // swizzled boxes of 64 columns. For packed (varlen) tensors the batch
  // extent is 1 and rows index the token axis.
  CUtensorMap tma_q, tma_k, tma_v;

  // Raw views, used for the tiles that cross a sequence end (loaded by hand
  // with zero fill) and for the output. Strides are in elements.
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_row_stride, lse_head_stride;

  // Geometry. cu_seqlens_* and seqused_k live on the device (may be null).
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_k;
  int32_t batch;
  int32_t num_heads;
  int32_t head_group;  // num_heads / num_heads_k
  int32_t seqlen_q;    // dense batches only
  int32_t seqlen_k;

  // Logits (docs/numerics.md "Logits"), precomputed on the host in f32:
  // scale_log2 = softmax_scale * log2e; with softcap, softcap_in =
  // softmax_scale / cap and softcap_out = cap * log2e.
  float scale_log2;
  float softcap_in;
  float softcap_out;
  int32_t has_softcap;
  int32_t window_left;   // < 0: unbounded
  int32_t window_right;  // < 0: unbounded
  // FREE (the same bits either way): a tile that crosses a sequence end
  // goes through TMA where it can (1, the default; WorkItem::q_tail_tma ..
  // k_end say where), or is loaded by hand by the producer warp (0).
  // SAMEBITS_FWD_TAIL_TMA, read per call.
  int32_t tail_tma;
};

// Tile configuration of one (head dim, dtype). Bn and S come from the tile
// table (BITS); everything else here is FREE (speed only).
template <int kHeadDim_, bool kBf16_>
struct FwdConfig {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kBf16 = kBf16_;
  static constexpr sb_dtype kDtype = kBf16 ? SB_BF16 : SB_F16;

  // BITS (config.h): keys per KV block and per split.
  static constexpr int kBlockN = kv_block_size(kArchSm90, kHeadDim, kDtype);
  static constexpr int kSplit = split_size(kArchSm90, kHeadDim, kDtype);
  static_assert(kBlockN == 64 || kBlockN == 128, "KV block must be one wgmma N");
  static_assert(kSplit % kBlockN == 0, "a split holds whole KV blocks");

  // FREE. Consumer warpgroups, 64 query rows each. Head dim 256 keeps one:
  // its fold state (64 x 256 f32) and two K/V stages fill shared memory.
  static constexpr int kConsumerWarpgroups = kHeadDim <= 128 ? 2 : 1;
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;
  static constexpr int kThreads = 128 * (kConsumerWarpgroups + 1);
  // FREE. K/V pipeline depth.
  static constexpr int kStages = kHeadDim <= 64 ? 4 : 2;
  // FREE. Register split after setmaxnreg (producer, consumers): the 168
  // registers a thread gets at launch (384 threads) are moved from the
  // producer warpgroup to the two consumer warpgroups. The producer path
  // (scheduler state + hand loads) spills one word at 64, none at 72.
  static constexpr int kProducerRegs = 72;
  static constexpr int kConsumerRegs = kConsumerWarpgroups == 2 ? 216 : 240;
  static_assert(kConsumerWarpgroups != 2 || 128 * kProducerRegs + 256 * kConsumerRegs <= 65536,
                "setmaxnreg split over the register file");

  // Swizzled tiles are stored as kChunks column chunks of 64 elements
  // (128 bytes a row); each chunk is rows x 128 bytes.
  static constexpr int kChunk = 64;
  static constexpr int kChunks = kHeadDim / kChunk;
  static_assert(kHeadDim % kChunk == 0, "head dim must be a multiple of 64");
  static constexpr int kElemBytes = 2;
  static constexpr int kRowBytes = kChunk * kElemBytes;  // 128: the swizzle width

  // Shared memory, in bytes, every tile 1024-byte aligned (swizzle atoms).
  static constexpr int kQBytes = kBlockM * kHeadDim * kElemBytes;    // Q: kBlockM x d
  static constexpr int kKVBytes = kBlockN * kHeadDim * kElemBytes;   // K or V: Bn x d
  static constexpr int kFoldBytes = kBlockM * kHeadDim * 4;          // fold ACC: kBlockM x d f32
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  static constexpr int kOffV = kOffK + kStages * kKVBytes;
  static constexpr int kOffFold = kOffV + kStages * kKVBytes;
  static constexpr int kOffBarriers = kOffFold + kFoldBytes;
  // q_full, q_empty, k_full[S], v_full[S], k_empty[S], v_empty[S], tail
  static constexpr int kNumBarriers = 3 + 4 * kStages;
  static constexpr int kSmemBytes = kOffBarriers + kNumBarriers * 8 + 1024;  // + base alignment
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "tiles must keep 1024B alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm90 limit");
};

}  // namespace samebits::cuda::sm90
