// sm90 attention backward: the kernels' params struct (filled on the host,
// passed by value as a __grid_constant__), the tile configuration of each
// (head dim, dtype) with the shared-memory layout derived from it, and the
// per-sequence geometry every kernel of the backward reads the same way.
// The design and the order of every reduction: docs/backward_design.md.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include <type_traits>

#include "samebits/config.h"

// FREE build switch (speed only): 1 = the dK/dV kernel's two warpgroups
// share P^T through shared memory at head dims 128, 256 (see BwdConfig).
#ifndef SAMEBITS_BWD_SHARE_P
#define SAMEBITS_BWD_SHARE_P 1
#endif

// FREE build switch (speed only), default 0: 1 = the dQ pass runs the v3
// kernel (attention_bwd_sm90_dq_tma.h: a TMA producer warp and an mbarrier
// ring instead of cp.async and one __syncthreads per tile). Same bits.
// CMake: -DSAMEBITS_BWD_TMA=ON.
#ifndef SAMEBITS_BWD_TMA
#define SAMEBITS_BWD_TMA 0
#endif
// FREE build switch, default 0, needs SAMEBITS_BWD_TMA: 1 = the dK/dV pass
// runs its v3 kernel too (attention_bwd_sm90_dkdv_tma.h: a producer
// warpgroup with setmaxnreg). CMake: -DSAMEBITS_BWD_TMA_DKDV=ON.
#ifndef SAMEBITS_BWD_TMA_DKDV
#define SAMEBITS_BWD_TMA_DKDV 0
#endif
// BITS build switch, default 0 (CMake -DSAMEBITS_BWD_FUSED=ON), needs
// SAMEBITS_BWD_TMA_DKDV: 1 = head dim 128 runs the fused backward
// (BwdFusedConfig, attention_bwd_sm90_fused.h), whose dq is a fold of
// 128-key partials (docs/backward_design.md "Fused dQ, rebuilt"): other
// dq bits than the default build's. Experimental: correct and
// deterministic, not yet faster than the three passes.
#ifndef SAMEBITS_BWD_FUSED
#define SAMEBITS_BWD_FUSED 0
#endif

namespace samebits::cuda::sm90 {

struct AttentionBwdParams {
  // Raw views; strides in elements. For packed (varlen) tensors the batch
  // stride is 0 and rows index the token axis.
  const void* q;
  const void* k;
  const void* v;
  const void* out;
  const void* dout;
  const float* lse;
  void* dq;  // also holds D_i (f32, the first 4 bytes of row (i, h)) between
             // the preprocess and the dq pass; see docs/backward_design.md
  void* dk;
  void* dv;
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t do_batch_stride, do_row_stride, do_head_stride;
  int64_t lse_batch_stride, lse_row_stride, lse_head_stride;
  int64_t dq_batch_stride, dq_row_stride, dq_head_stride;
  int64_t dk_batch_stride, dk_row_stride, dk_head_stride;
  int64_t dv_batch_stride, dv_row_stride, dv_head_stride;

  // Geometry. cu_seqlens_* and seqused_k live on the device (may be null).
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  const int32_t* seqused_k;
  int32_t batch;
  int32_t num_heads;
  int32_t num_heads_k;
  int32_t head_group;  // num_heads / num_heads_k
  int32_t seqlen_q;    // dense batches only
  int32_t seqlen_k;

  // Logits (docs/numerics.md "Logits"), precomputed on the host in f32
  // exactly as the forward does: scale_log2 = softmax_scale * log2e; with
  // softcap, softcap_in = softmax_scale / cap, softcap_out = cap * log2e.
  float softmax_scale;
  float scale_log2;
  float softcap_in;
  float softcap_out;
  int32_t has_softcap;
  int32_t window_left;   // < 0: unbounded
  int32_t window_right;  // < 0: unbounded
  // FREE (the same bits either way): a tile that crosses a sequence end
  // goes through TMA where it can (1, the default; SeqGeom::q_tail_tma ..
  // k_end say where), or is loaded by hand by the producer warp (0).
  // SAMEBITS_BWD_TAIL_TMA, read per call.
  int32_t tail_tma;

  // Fused dQ (BwdFusedConfig, attention_bwd_sm90_fused.h): the caller's
  // workspace. dq_accum: one f32 tile of 64 rows x d per (query tile,
  // head), in the consumers' fragment order; dq_sem: one ordering counter
  // per (query tile, head). Query tile (b, m) is dq_tile_index(); dense
  // batches have dq_tiles_per_seq tiles a sequence. Null otherwise.
  float* dq_accum;
  int32_t* dq_sem;
  int32_t dq_tiles_per_seq;
  // FREE knobs of the fused kernel (the same bits for any value):
  // fused_inflight: bulk reductions the writer keeps in flight (1..4)
  // before it waits for the oldest to complete and raises its counter;
  // fused_block_major: units numbered KV block (descending) before KV head,
  // so the CTAs at work at one time hold few blocks of one head and each
  // query tile's chain of ordered additions is short. DIAGNOSTIC (wrong
  // dq, measurements only): fused_diag bit 0 drops the ordering wait,
  // bit 1 the reductions, bit 2 the consumers' stores of the f32 partial
  // to shared memory, bit 3 the dQ product, bit 4 (with bit 3) the G
  // buffers' named barriers, bit 5 the stores of G^T to shared memory,
  // bit 6 the writer and its per-tile hand-offs and proxy fences.
  int32_t fused_inflight;
  int32_t fused_block_major;
  int32_t fused_diag;
};

// Tile configuration of one (head dim, dtype). Nothing here is BITS: the
// backward's sums are k16 wgmma chains that run over all rows (dk, dv) or
// all keys (dq) of a sequence in ascending order, aligned at row / key 0,
// whatever the tile heights (docs/backward_design.md, "Why the tiles are
// free"). Everything is FREE (speed only).
template <int kHeadDim_, bool kBf16_>
struct BwdConfig {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kBf16 = kBf16_;
  static constexpr sb_dtype kDtype = kBf16 ? SB_BF16 : SB_F16;
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head dim 64, 128 or 256");

  static constexpr int kChunk = 64;  // columns per 128-byte swizzled chunk
  static constexpr int kChunks = kHeadDim / kChunk;
  static constexpr int kElemBytes = 2;
  static constexpr int kRowBytes = kChunk * kElemBytes;  // 128: the swizzle width
  static constexpr int kThreads = 256;                   // two warpgroups, both compute

  // ---- dK/dV kernel: a CTA owns kBlockN keys of one (sequence, KV head).
  // Head dims 64 and 128: each warpgroup owns 64 keys and accumulates both
  // dK and dV (2 x d/2 f32 registers a thread). Head dim 256: both
  // warpgroups own the same 64 keys, warpgroup 0 accumulates dV and
  // warpgroup 1 dK (split roles, P^T handed over through shared memory).
  // At d = 128 both products in one warpgroup need 208 registers of
  // accumulators and operands: v2 spills (255 registers, 124 bytes) and v3
  // (setmaxnreg 240) spills 588 bytes (in cold paths), yet v3 runs faster
  // than with split roles (fifth session, docs/backward_design.md): the two
  // warpgroups no longer wait for each other every tile, and each streamed
  // Q / dO tile serves 128 keys. FREE: the same bits either way.
  static constexpr bool kFused = false;  // BwdFusedConfig: true
  static constexpr bool kSplitRoles = kHeadDim > 128;
  static constexpr int kBlockN = kSplitRoles ? 64 : 128;
  static constexpr int kBlockM = 64;  // query rows per streamed Q / dO tile
  static constexpr int kKVBytes = kBlockN * kHeadDim * kElemBytes;  // K or V: Bn x d
  static constexpr int kQTileBytes = kBlockM * kHeadDim * kElemBytes;  // Q or dO: Bm x d
  // Streamed-tile ring (cp.async, one __syncthreads per tile): 3 stages
  // where shared memory allows, 2 at head dim 256.
  static constexpr int kStages = kHeadDim <= 128 ? 3 : 2;
  static constexpr int kDkdvOffK = 0;
  static constexpr int kDkdvOffV = kDkdvOffK + kKVBytes;
  static constexpr int kDkdvOffQ = kDkdvOffV + kKVBytes;                       // [stage]
  static constexpr int kDkdvOffDo = kDkdvOffQ + kStages * kQTileBytes;         // [stage]
  static constexpr int kDkdvOffRow = kDkdvOffDo + kStages * kQTileBytes;       // lse, D [stage]
  // Split roles: whether the dV warpgroup hands P^T (f32, 64 keys x Bm
  // rows) to the dK warpgroup through shared memory instead of the dK
  // warpgroup recomputing S^T (raw exponent form only; FREE, same bits).
  static constexpr bool kShareP = kSplitRoles && SAMEBITS_BWD_SHARE_P != 0;
  static constexpr int kDkdvOffP = kDkdvOffRow + kStages * 2 * kBlockM * 4;
  static constexpr int kPBytes = kShareP ? 64 * kBlockM * 4 : 0;
  static constexpr int kDkdvSmemBytes = kDkdvOffP + kPBytes + 1024;

  // ---- dQ kernel: a CTA owns kDqBlockM query rows of one (sequence, head),
  // 64 per warpgroup; K/V tiles of kDqBlockN keys stream through.
  static constexpr int kDqWarpgroups = kHeadDim <= 128 ? 2 : 1;
  static constexpr int kDqThreads = 128 * kDqWarpgroups;
  static constexpr int kDqBlockM = 64 * kDqWarpgroups;
  static constexpr int kDqBlockN = 64;
  static constexpr int kDqQBytes = kDqBlockM * kHeadDim * kElemBytes;
  static constexpr int kDqKVBytes = kDqBlockN * kHeadDim * kElemBytes;
  static constexpr int kDqOffQ = 0;
  static constexpr int kDqOffDo = kDqOffQ + kDqQBytes;
  static constexpr int kDqOffK = kDqOffDo + kDqQBytes;        // [stage]
  static constexpr int kDqOffV = kDqOffK + kStages * kDqKVBytes;  // [stage]
  static constexpr int kDqSmemBytes = kDqOffV + kStages * kDqKVBytes + 1024;

  // ---- dQ kernel, v3 (SAMEBITS_BWD_TMA): the same query tiles and
  // warpgroups, plus a producer that loads Q, dO once per unit and the K, V
  // tiles into a ring of kDqTmaStages stages (TMA for tiles inside the
  // sequence, by hand with zero fill for the one that crosses its end).
  // Head dim 256: one producer warp (the last), 160 threads, cap 255, 235
  // used, 64-key tiles, two stages. (Before kDqWide, d <= 128 ran 288
  // threads with 64-key tiles and four stages: ptxas caps a 288-thread
  // kernel at 168 registers, as a 384-thread one, and that kernel used 141.)
  // Head dims 64 and 128 (kDqWide): K / V tiles of 128 keys (m64n128 S and
  // dP, a k128 dQ product per tile; four stages at d = 64, two at 128) and
  // a producer warpgroup so that setmaxnreg can give the consumers 240
  // registers (384 threads; ptxas spills ~150 bytes, the producer's at 24).
  // Faster than 64-key tiles at both head dims (fifth session,
  // docs/backward_design.md). FREE: every dq element is
  // the same k16 chain over its keys whatever the tile width.
  static constexpr bool kDqWide = kHeadDim <= 128;
  static constexpr int kDqTmaBlockN = kDqWide ? 128 : kDqBlockN;
  static constexpr int kDqTmaKVBytes = kDqTmaBlockN * kHeadDim * kElemBytes;
  static constexpr int kDqTmaStages = kHeadDim == 64 ? 4 : 2;
  static constexpr int kDqTmaThreads = kDqWide ? 384 : kDqThreads + 32;
  // FREE (no bit moves): the raw-only dQ kernel leaves a tile's dQ product
  // running into the next tile's score products (its A fragments and the
  // stage it reads held until the next tile's first wait) at head dim 64.
  // H100, 2026-11-27 (docs/backward_design.md, "Head dim 64 in the joint
  // order"): 1-3.5 % faster at every d 64 shape. At d 128 the registers do
  // not fit: ptxas serializes every wgmma of the kernel; with the next
  // tile's dP issued only after the previous dQ product has completed (the
  // dK/dV pass's chained order) they fit, but that ran 1-5 % slower at
  // every d 128 shape (2026-11-27).
  static constexpr bool kDqChain = kHeadDim == 64;
  static constexpr int kDqTmaProducerRegs = 24;   // kDqWide only
  static constexpr int kDqTmaConsumerRegs = 240;  // kDqWide only
  static_assert(!kDqWide || 128 * kDqTmaProducerRegs + 256 * kDqTmaConsumerRegs <= 384 * 168,
                "setmaxnreg split over the registers the CTA launched with");
  static constexpr int kDqTmaOffQ = 0;
  static constexpr int kDqTmaOffDo = kDqTmaOffQ + kDqQBytes;
  static constexpr int kDqTmaOffK = kDqTmaOffDo + kDqQBytes;                     // [stage]
  static constexpr int kDqTmaOffV = kDqTmaOffK + kDqTmaStages * kDqTmaKVBytes;   // [stage]
  static constexpr int kDqTmaOffBars = kDqTmaOffV + kDqTmaStages * kDqTmaKVBytes;
  // q_full, q_empty, kv_full[stage], kv_empty[stage]
  static constexpr int kDqTmaBarriers = 3 + 2 * kDqTmaStages;  // q full/empty, kv full/empty[s], tail
  static constexpr int kDqTmaSmemBytes = kDqTmaOffBars + kDqTmaBarriers * 8 + 1024;
  static_assert(kDqTmaSmemBytes <= 227 * 1024, "v3 dQ shared memory over the sm90 limit");

  // ---- dK/dV kernel, v3 (SAMEBITS_BWD_TMA_DKDV): v2's shared memory
  // (K, V, the Q / dO / lse / D ring, P^T) plus the barriers; warpgroups 0
  // and 1 compute as in v2, warpgroup 2 is the producer (one warp loads).
  // 384 threads launch with 168 registers each (ptxas's cap); setmaxnreg
  // moves the producer's to the consumers (v2 uses 239 / 213 / 255 at
  // d = 64 / 128 / 256). The split must fit what the CTA got at launch
  // (384 x 168), or setmaxnreg.inc waits forever. ptxas -v, nvcc 13.0: the
  // producer spills at 24 (172 bytes) and 40 (d <= 128); consumers fit 224
  // at d = 64 (split roles at 128: 224) and 232 at d = 256 with no spill
  // (224: 4 bytes at d = 256). d = 128 takes the most the consumers can
  // get, 240 (producer 24), and spills (see kSplitRoles).
  static constexpr int kDkdvTmaThreads = 384;
  static constexpr int kDkdvLaunchRegs = (65536 / kDkdvTmaThreads) / 8 * 8;  // 168
  static constexpr int kDkdvProducerRegs = kHeadDim == 256 ? 40 : (kHeadDim == 128 ? 24 : 56);
  static constexpr int kDkdvConsumerRegs = kHeadDim == 256 ? 232 : (kHeadDim == 128 ? 240 : 224);
  static_assert(128 * kDkdvProducerRegs + 256 * kDkdvConsumerRegs <=
                    kDkdvTmaThreads * kDkdvLaunchRegs,
                "setmaxnreg split over the registers the CTA launched with");
  // FREE (no bit moves): whether the raw score form runs the dK/dV
  // kernel's chained form (DkdvTmaKernel::kRawChained) instead of kRaw;
  // the launcher's dkdv_form applies it. Measured on an H200 and an H100
  // (docs/backward_design.md, "Kernel forms for the raw score form", "Head
  // dim 64 in the joint order"): chaining costs 1-6 % at d = 128. At
  // d = 64, with lse and D read under the score products (kChainPreRow),
  // it is ahead of the joint kRaw form at every shape (H100, 2026-11-27:
  // 1.5-2.3 % unmasked, 2-3 % at 4k and 16k causal); before that it paid
  // only under a mask and from 8k keys.
  static constexpr bool kChainRaw = kHeadDim == 64;
  // FREE (no bit moves): whether the chained form has a variant that holds
  // K and V as A fragments in registers (DkdvTmaKernel::kRawHeld; 32
  // registers a thread at d 64): the score products then read Q and dO
  // alone from shared memory. dkdv_form runs it under a mask only
  // (docs/backward_design.md, "Held K and V").
  static constexpr bool kHeldKV = kHeadDim == 64;
  // FREE (no bit moves): the kRaw form's tile order at head dims 64 and
  // 128 is DkdvKernel::tile_raw_joint (both score products waited for,
  // then one element loop), the fused kernel's. H100 (docs/
  // backward_design.md): at d 128 (2026-11-27, "The joint tile order")
  // 3.5-5.6 % faster at 16k keys and at 4k causal, 1-2.5 % slower at 1k
  // non-causal, mixed at 4k; at d 64 (2026-11-27, "Head dim 64 in the
  // joint order") 4-6 % faster than the old order at every length, masked
  // or not (the rule now chains at d 64: kChainRaw).
  static constexpr bool kRawJoint = !kSplitRoles;
  // FREE (no bit moves): tile_raw_joint reads the tile's lse and D values
  // (16 columns a thread) from shared memory while its score products run,
  // instead of in its element loop, where ncu sampled 6 % of the d 64
  // kernel's stalls on the first of those loads. H100, 2026-11-27: 0.7-2 %
  // faster at d 64, within noise at d 128 (the same ptxas spills).
  static constexpr bool kJointPreRow = true;
  // FREE (no bit moves): the chained form's tile_raw_body reads lse2 and D
  // the same way (d 64 under a mask: 4k causal 3 % faster, 1k and 16k
  // causal within 1 %; H100, 2026-11-27).
  static constexpr bool kChainPreRow = true;
  static constexpr int kDkdvTmaOffBars = kDkdvOffP + kPBytes;
  // kv_full, kv_empty, q_full[stage], q_empty[stage], pt_empty, tail (last)
  static constexpr int kDkdvTmaBarriers = 4 + 2 * kStages;
  static constexpr int kDkdvTmaSmemBytes = kDkdvTmaOffBars + kDkdvTmaBarriers * 8 + 1024;
  static_assert(kDkdvTmaSmemBytes <= 227 * 1024, "v3 dK/dV shared memory over the sm90 limit");

  static_assert(kKVBytes % 1024 == 0 && kQTileBytes % 1024 == 0 && kDqKVBytes % 1024 == 0,
                "tiles must keep 1024-byte alignment (swizzle atoms)");
  static_assert(kDkdvSmemBytes <= 227 * 1024 && kDqSmemBytes <= 227 * 1024,
                "shared memory over the sm90 limit");
  static_assert(kBlockM % 16 == 0 && kDqBlockN % 16 == 0, "k16 steps");
};

// The fused dK/dV/dQ kernel's configuration (head dim 128): BwdConfig's
// tiles (128 keys a CTA, each consumer warpgroup 64 keys with both dK and
// dV, 64-row Q / dO tiles) with two Q / dO stages instead of three, so that
// shared memory also holds the round(G^T) tiles (the dQ product's A
// operand, two buffers) and the f32 dQ partials (two buffers, read by the
// bulk reductions). The layout members shadow BwdConfig's, so DkdvKernel
// and DkdvTmaKernel instantiated on this config address this layout.
//
// NUMERICS (BITS): dq is the fold of 128-key partials, each a k16 chain
// over its block's keys from zero, added into one f32 accumulator per
// (row, head, dim) in descending KV-block order (docs/numerics.md
// "Backward"). kBlockN is therefore part of the contract here; the other
// members are FREE.
template <int kHeadDim_, bool kBf16_>
struct BwdFusedConfig : BwdConfig<kHeadDim_, kBf16_> {
  using Base = BwdConfig<kHeadDim_, kBf16_>;
  static_assert(!Base::kSplitRoles && Base::kBlockN == 128 && Base::kBlockM == 64,
                "the fused kernel needs both products in each warpgroup, 128 keys a CTA");
  static constexpr bool kFused = true;
  // tile_raw_joint as measured in the fused kernel (the twenty-third
  // session), lse and D read in the element loop.
  static constexpr bool kJointPreRow = false;
  // Q / dO stages and f32 dQ buffers (shared memory holds 2 + 2 or 3 + 1).
#ifndef SAMEBITS_BWD_FUSED_STAGES
#define SAMEBITS_BWD_FUSED_STAGES 2
#endif
  static constexpr int kStages = SAMEBITS_BWD_FUSED_STAGES;
  static constexpr int kDqBufs = kStages >= 3 ? 1 : 2;
  // K, V | Q [stage] | dO [stage] | G^T [2] | dQ [kDqBufs] | lse, D [stage]
  // | barriers: the 1024-byte aligned tiles first.
  static constexpr int kDkdvOffQ = Base::kDkdvOffV + Base::kKVBytes;
  static constexpr int kDkdvOffDo = kDkdvOffQ + kStages * Base::kQTileBytes;
  // round(G^T) of a tile: kBlockN keys x kBlockM rows, 16-bit, one 128-byte
  // swizzled row a key (the dQ product reads it MN-major). Two buffers.
  static constexpr int kGBytes = Base::kBlockN * Base::kBlockM * 2;
  static constexpr int kFusedOffG = kDkdvOffDo + kStages * Base::kQTileBytes;
  // f32 dQ partial of a tile: kBlockM x d, kDqBufs buffers.
  static constexpr int kDqTileFloats = Base::kBlockM * Base::kHeadDim;
  static constexpr int kDqTileBytes = kDqTileFloats * 4;
  static constexpr int kFusedOffDq = kFusedOffG + 2 * kGBytes;
  static constexpr int kDkdvOffRow = kFusedOffDq + kDqBufs * kDqTileBytes;         // lse, D [stage]
  static constexpr int kDkdvOffP = kDkdvOffRow + kStages * 2 * Base::kBlockM * 4;  // (no P^T)
  static constexpr int kDkdvTmaOffBars = kDkdvOffP;
  // DkdvTmaKernel's barriers (3 + 2 kStages), then dq_full[2], dq_empty[2],
  // then DkdvTmaKernel's tail barrier (always the last).
  static constexpr int kDkdvTmaBarriers = 3 + 2 * kStages + 4 + 1;
  static constexpr int kDkdvTmaSmemBytes = kDkdvTmaOffBars + kDkdvTmaBarriers * 8 + 1024;
  static_assert(kDkdvTmaSmemBytes <= 227 * 1024, "fused shared memory over the sm90 limit");
  static_assert(kGBytes % 1024 == 0 && kDqTileBytes % 1024 == 0, "1024-byte aligned buffers");
};

// The configuration the library runs for (head dim, dtype): the fused
// kernel at head dim 128 (SAMEBITS_BWD_FUSED, with the v3 dK/dV kernel it
// builds on), else the three passes.
template <int kHeadDim, bool kBf16>
using BwdRunConfig =
    std::conditional_t<kHeadDim == 128 && SAMEBITS_BWD_FUSED && SAMEBITS_BWD_TMA &&
                           SAMEBITS_BWD_TMA_DKDV,
                       BwdFusedConfig<kHeadDim, kBf16>, BwdConfig<kHeadDim, kBf16>>;

// Tensor maps of a v3 kernel (SAMEBITS_BWD_TMA): q, dout, k, v as 4D
// (dim, row, head, batch) with 128-byte swizzled boxes of 64 columns and
// the kernel's tile heights (dQ pass: kDqBlockM, kDqBlockN rows; dK/dV
// pass: kBlockM, kBlockN). Packed (varlen) tensors have a batch extent of 1
// and rows index the token axis; only tiles that lie inside one sequence
// are loaded through them. A second __grid_constant__ argument, so
// AttentionBwdParams (and the v2 kernels) stay as they are.
struct BwdMaps {
  CUtensorMap q, dout, k, v;
};

// FREE. The D preprocess: query rows per work unit, threads per CTA.
constexpr int kBwdPreprocessRows = 64;
constexpr int kBwdPreprocessThreads = 256;

// One sequence as the kernels see it.
struct SeqGeom {
  int q_row0;     // first row of the sequence in q-like tensors (packed), else 0
  int k_row0;
  int lq;          // query rows
  int lk;          // visible keys (seqused_k when set)
  int lk_stored;   // stored key rows (dk/dv rows to write; rows >= lk get 0)
  // How a tile that crosses the sequence end is loaded (the producers;
  // FREE: every way gives the same bits). q/k_tail_tma: the tensor map's
  // rows end where the sequence ends (a dense batch; for keys also no
  // seqused_k below the stored length), so TMA zero-fills the rows past the
  // end. q/k_end: a packed batch's rows in use (cu_seqlens[batch]; 0 when
  // dense or with tail_tma off); a tile that ends there or before may be
  // read by TMA with its neighbour's rows (then made harmless), else it is
  // loaded by hand.
  bool q_tail_tma, k_tail_tma;
  int q_end, k_end;
};

__device__ __forceinline__ SeqGeom seq_geom(const AttentionBwdParams& p, int b) {
  SeqGeom s;
  if (p.cu_seqlens_q) {
    s.q_row0 = p.cu_seqlens_q[b];
    s.lq = p.cu_seqlens_q[b + 1] - s.q_row0;
  } else {
    s.q_row0 = 0;
    s.lq = p.seqlen_q;
  }
  if (p.cu_seqlens_k) {
    s.k_row0 = p.cu_seqlens_k[b];
    s.lk_stored = p.cu_seqlens_k[b + 1] - s.k_row0;
  } else {
    s.k_row0 = 0;
    s.lk_stored = p.seqlen_k;
  }
  const int used = p.seqused_k ? p.seqused_k[b] : s.lk_stored;
  s.lk = used > s.lk_stored ? s.lk_stored : used;  // never read past the stored keys
  if (s.lk < 0) s.lk = 0;
  s.q_tail_tma = p.tail_tma != 0 && p.cu_seqlens_q == nullptr;
  // Tested on `used`, not as `s.lk == s.lk_stored`: nvcc 13.0 (ptxas) turned
  // that comparison of the clamped value into a VIMNMX.RELU whose predicate
  // came out true for every seqused_k below the stored length, so the tile
  // that crosses seqused_k went through TMA with the rows past it, and NaN /
  // Inf keys there reached dq (docs/backward_design.md, "seqused_k").
  s.k_tail_tma = p.tail_tma != 0 && p.cu_seqlens_k == nullptr && used >= s.lk_stored;
  s.q_end = p.tail_tma != 0 && p.cu_seqlens_q ? p.cu_seqlens_q[p.batch] : 0;
  s.k_end = p.tail_tma != 0 && p.cu_seqlens_k ? p.cu_seqlens_k[p.batch] : 0;
  return s;
}

}  // namespace samebits::cuda::sm90
