// sm90 attention over a KV cache, host side: checks, tensor maps over the
// cache, the workspace, the waves, and the explicit list of configurations
// (no dispatch macros). See attention_decode_sm90_launch.h.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "cuda/driver_entry_points.h"
#include "cuda/attention_decode_sm90_launch.h"
#include "cuda/device_info.h"
#include "samebits/config.h"

namespace samebits::cuda::sm90 {
namespace {

bool aligned(const void* p, size_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }
bool stride_ok(int64_t s) { return s % 8 == 0 && s > 0 && s * 2 < (int64_t(1) << 40); }

// A 4D map (dim, slot, head, page) of 16-bit elements over a K or V cache,
// boxes of 64 columns x box_rows slots, 128-byte swizzle (the wgmma layout,
// as the forward's maps), or boxes of box_cols < 64 columns, unswizzled.
// A contiguous cache has one page per sequence.
sb_status make_cache_map(CUtensorMap* map, const sb_view& v, bool bf16, int head_dim,
                         int64_t slots, int heads, int64_t pages, int box_rows, int box_cols = 64) {
  auto encode = samebits::cuda::tensor_map_encode_fn();
  if (encode == nullptr) return fail(SB_CUDA_ERROR, "cuTensorMapEncodeTiled is not available");
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(slots),
                        static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(pages)};
  // One page (a contiguous cache of one sequence): the page stride is never
  // used and may be anything; give the encoder a valid one.
  const int64_t page_stride = pages == 1 && !stride_ok(v.batch_stride) ? v.row_stride * slots : v.batch_stride;
  cuuint64_t strides[3] = {static_cast<cuuint64_t>(v.row_stride * 2),
                           static_cast<cuuint64_t>(v.head_stride * 2),
                           static_cast<cuuint64_t>(page_stride * 2)};
  cuuint32_t box[4] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1, 1};
  cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUresult r = encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                      4, v.data, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      box_cols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(SB_CUDA_ERROR, "attention_decode_sm90: cuTensorMapEncodeTiled failed with CUresult " +
                                   std::to_string(r));
  return SB_OK;
}

int block_n(const sb_attention_params& p) { return kv_block_size(kArchSm90, p.head_dim, p.dtype); }
int split_keys(const sb_attention_params& p) { return split_size(kArchSm90, p.head_dim, p.dtype); }
int max_splits(const sb_attention_params& p) {
  const int S = split_keys(p);
  return std::max(1, (p.seqlen_k + S - 1) / S);
}

sb_status check(const sb_attention_params& p) {
  const std::string who = "sm90 attention with KV cache: ";
  if (p.dtype != SB_BF16 && p.dtype != SB_F16) return fail(SB_UNSUPPORTED, who + "only bf16 and fp16 are built");
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return fail(SB_UNSUPPORTED, who + "head_dim must be 64, 128 or 256, got " + std::to_string(p.head_dim));
  if (p.cu_seqlens_q != nullptr || p.cu_seqlens_k != nullptr)
    return fail(SB_UNSUPPORTED, who + "q and the cache must be dense (no cu_seqlens)");
  if (p.num_heads_k <= 0 || p.num_heads % p.num_heads_k != 0)
    return fail(SB_INVALID_ARGUMENT, who + "num_heads must be a multiple of num_heads_k");
  if (p.block_table != nullptr && p.page_size <= 0)
    return fail(SB_INVALID_ARGUMENT, who + "page_size must be > 0");
  if (!aligned(p.q.data, 16) || !stride_ok(p.q.row_stride) || !stride_ok(p.q.head_stride) ||
      (p.batch > 1 && !stride_ok(p.q.batch_stride)))
    return fail(SB_UNSUPPORTED, who + "q needs 16-byte aligned data and strides that are multiples of 8 elements");
  for (const sb_view* v : {&p.k, &p.v})
    if (!aligned(v->data, 16) || !stride_ok(v->row_stride) || !stride_ok(v->head_stride) ||
        ((p.block_table != nullptr || p.batch > 1) && !stride_ok(v->batch_stride)))
      return fail(SB_UNSUPPORTED,
                  who + "k and v caches need 16-byte aligned data and strides that are multiples of 8 elements");
  if (!aligned(p.out.data, 4) || p.out.row_stride % 2 != 0 || p.out.head_stride % 2 != 0 ||
      p.out.batch_stride % 2 != 0)
    return fail(SB_UNSUPPORTED, who + "out needs 4-byte aligned pairs");
  if (static_cast<int64_t>(p.batch) * p.num_heads_k > 65535)
    return fail(SB_UNSUPPORTED, who + "batch * num_heads_k must be <= 65535");
  return SB_OK;
}

// The schedule of pass 1 (DecodeVariant, all FREE: they compute the same
// bits). Unset or "auto": the shape rule below; SAMEBITS_DECODE_VARIANT =
// 0, 4, 8 or 9 forces one (8 and 9 only where the mma consumer runs, else
// the rule picks between 0 and 4; 9 at d 256 is 8; any other number
// selects 0). Read on every call,
// so a process may switch between calls (a captured graph keeps the one it
// captured).
int decode_variant(const sb_attention_params& p, int tiles_per_seq, int splits, bool mma) {
  // Shape rule, a pure function of (batch, num_heads_k, query rows, head
  // group, cache capacity): CTAs of pass 1 at most. A grid of more than
  // about one H100 wave (132 SMs) runs two CTAs per SM, KV head fastest,
  // so that one CTA's start and end overlap the other's stream and the
  // heads that read the same pages start together; a smaller one keeps
  // main's deep ring, whose bytes in flight per CTA are what a few CTAs
  // need. Measured on an H100 (docs/decode_design.md, "Variants";
  // 2026-11-21, before the mma consumer): 4 the fastest from 256 CTAs up,
  // 0 at 128 and below; the overlap of S = Q K^T with P V (3, 5) slower
  // than 0 at every shape. A grid of
  // at most kSpreadMaxCtas CTAs with the mma consumer's tiles spreads each
  // split over a cluster of 8 (decode_design.md, "One split on 8 SMs"):
  // on an H100, batch 1 x 1k (8 CTAs) 17.4 -> 11.9 us, while at 32 CTAs
  // (1 x 4k, 4 x 1k) the 256 CTAs of the clusters need two waves (at most
  // 30 clusters of 8 are resident) and it is slower than 0 (24-25 us
  // against 19-22). With the mma consumer at d <= 128 two CTAs an SM pay
  // from 64 CTAs (thirty-eighth session, H100, the lean twins; "Variants"
  // in decode_design.md): d 128 1 x 8k-16k, 2 x 4k-8k, 4 x 2k-4k,
  // 8 x 1k 3-6 % faster than main's ring, 16 x 1k 1.4 %, 8 x 2k equal;
  // at 48-56 CTAs main's ring stays 2-9 % ahead (1 x 6k-7k, 3 x 2k); d 64
  // the same at 64-128 CTAs (1 x 12k +6 %, 2 x 8k +7 %, 4 x 4k -1.5 %).
  // On an H200 (thirty-ninth session) the 64-CTA shapes went the other
  // way (1 x 8k, 4 x 2k, 8 x 1k 9-11 % slower than main's ring) while
  // 96-128 CTAs kept 3-4 % (1 x 12k, 1 x 16k, 2 x 8k), so the bound
  // depends on the card (below). The wgmma consumer and d 256 keep
  // 160 (wgmma at 32-128 CTAs on an H200: schedule 4 0.5-6 % slower;
  // d 256 at 64-128 CTAs on an H100: within 1 % either way).
  constexpr int64_t kSpreadMaxCtas = 16;
  // A card whose memory clock is above 3 GHz (an H200, 3.2 GHz) takes 96,
  // where both cards gain; a slower one (an H100, 2.6 GHz) 64, where it
  // measured 3 % (fortieth session: with this rule the 64-CTA shapes run as
  // fast as with a fixed 64, 3-4 % ahead of a fixed 96). The schedules give
  // the same bits: the choice is BITS-FREE.
  const int64_t two_per_sm_min = mma && p.head_dim <= 128 ? (device_memory_khz() > 3000000 ? 96 : 64) : 160;
  const int64_t ctas = static_cast<int64_t>(p.batch) * p.num_heads_k * tiles_per_seq * splits;
  const int rule = mma && ctas <= kSpreadMaxCtas ? kDecodeSpread
                   : ctas >= two_per_sm_min     ? kDecodeTwoPerSmHeadMajor
                                                : kDecodeMain;
  const char* env = std::getenv("SAMEBITS_DECODE_VARIANT");
  if (env == nullptr || env[0] == '\0' || std::strcmp(env, "auto") == 0) return rule;
  const int v = std::atoi(env);
  if (v == kDecodeSpread || v == kDecodeSpread4)
    return mma ? (v == kDecodeSpread4 && p.head_dim <= 128 ? kDecodeSpread4 : kDecodeSpread)
               : ctas >= two_per_sm_min ? kDecodeTwoPerSmHeadMajor : kDecodeMain;
  return v == kDecodeTwoPerSmHeadMajor ? kDecodeTwoPerSmHeadMajor : kDecodeMain;
}

// How many stages of pass 1's K/V ring the mma producer requests before
// Q has landed (AttentionDecodeParams::early_stages, FREE: only when bytes
// are asked for). One SM takes bytes in at a bounded rate, and the bytes
// of all of a CTA's requested stages arrive interleaved: with the whole
// ring requested at once (192 KiB at d 64, 128 and 256) the first block
// lands with the last of them (docs/decode_design.md, "Pass 1's chain timed
// again": block 0 ~7,500 cycles against ~1,700 for the next ones at
// 1 x 4k), and the ring then drains before its next request. One stage
// first, the rest once Q is in shared memory, lets the first block land
// alone. Measured on an H100 (docs/decode_design.md, "The first stage
// alone"). SAMEBITS_DECODE_EARLY_STAGES=n forces n (1 .. kStages; "all"
// the whole ring, the order before; read on every call).
int decode_early_stages() {
  constexpr int kAll = 1 << 20;  // at least every ring's kStages
  const char* env = std::getenv("SAMEBITS_DECODE_EARLY_STAGES");
  if (env == nullptr || env[0] == '\0') return 1;
  return std::strcmp(env, "all") == 0 ? kAll : std::max(1, std::atoi(env));
}

// The consumer of pass 1 (FREE: both compute the forward's bits). A wave
// whose packed rows per (sequence, KV head) fit 16 (decode at a head group
// <= 16, a few query rows of a smaller group) runs the mma.sync consumer
// (DecodeConfig::kMma), which computes only those 16 rows; larger waves
// the wgmma consumer of a 64-row tile. SAMEBITS_DECODE_MMA=0 forces the
// wgmma consumer (read on every call).
bool decode_mma(int q_count, int head_group) {
  if (q_count * head_group > 16) return false;
  const char* env = std::getenv("SAMEBITS_DECODE_MMA");
  return env == nullptr || env[0] == '\0' || std::strcmp(env, "0") != 0;
}

template <int D, bool kBf16>
sb_status launch_waves(const sb_attention_params& p, AttentionDecodeParams& kp, void* workspace,
                       size_t bytes, cudaStream_t stream) {
  using Cfg = DecodeConfig<D, kBf16>;
  const bool paged = p.block_table != nullptr;
  // TMA boxes must start on a swizzle atom (8 slots) and a KV block must be
  // whole pages or lie inside one page; other page sizes load by hand.
  kp.box_rows = paged ? std::min(p.page_size, Cfg::kBlockN) : Cfg::kBlockN;
  kp.use_tma = !paged || (p.page_size % 8 == 0 &&
                          (Cfg::kBlockN % p.page_size == 0 || p.page_size % Cfg::kBlockN == 0));
  if (kp.use_tma) {
    const int64_t slots = paged ? p.page_size : p.seqlen_k;
    const int64_t pages = paged ? int64_t(0x7fffffff) : p.batch;  // pages: a bound (the table is on the device)
    if (slots >= kp.box_rows) {  // else no block is whole: every one loads by hand
      if (sb_status s = make_cache_map(&kp.tma_k, p.k, kBf16, D, slots, p.num_heads_k, pages, kp.box_rows);
          s != SB_OK)
        return s;
      if (sb_status s = make_cache_map(&kp.tma_v, p.v, kBf16, D, slots, p.num_heads_k, pages, kp.box_rows);
          s != SB_OK)
        return s;
    } else {
      kp.use_tma = 0;
    }
  }
  // Waves: as many query rows per launch as the workspace holds.
  const size_t min_bytes = DecodeWorkspace::bytes(p.batch, p.num_heads, 1, kp.max_splits, D);
  if (workspace == nullptr || bytes < min_bytes)
    return fail(SB_INVALID_ARGUMENT, "sm90 attention with KV cache: workspace_bytes must be at least " +
                                         std::to_string(min_bytes) + " (sb_attention_workspace_size), got " +
                                         std::to_string(workspace == nullptr ? 0 : bytes));
  const int max_rows_by_grid = 65535 * Cfg::kBlockM / kp.head_group;
  int q_count = std::min(p.seqlen_q, std::max(1, max_rows_by_grid));
  while (q_count > 1 &&
         DecodeWorkspace::bytes(p.batch, p.num_heads, q_count, kp.max_splits, D) > bytes)
    q_count = std::max(1, q_count / 2);
  const bool mma = decode_mma(q_count, kp.head_group);  // every wave has <= q_count rows
  const int variant = decode_variant(p, (q_count * kp.head_group + Cfg::kBlockM - 1) / Cfg::kBlockM,
                                     kp.max_splits, mma);
  // One split per row at most (cache capacity <= one split): pass 1 writes
  // the output itself and no combine is launched (decode_direct_out).
  kp.direct_out = kp.max_splits == 1 && decode_direct_out(variant, D, mma);
  kp.early_stages = decode_early_stages();
  if (kp.use_tma && (variant == kDecodeSpread || variant == kDecodeSpread4)) {
    const int64_t slots = paged ? p.page_size : p.seqlen_k;
    const int64_t pages = paged ? int64_t(0x7fffffff) : p.batch;
    const int cols = D / (variant == kDecodeSpread4 ? 4 : 8);  // the columns of one CTA
    if (sb_status s = make_cache_map(&kp.tma_v_cols, p.v, kBf16, D, slots, p.num_heads_k, pages, kp.box_rows, cols);
        s != SB_OK)
      return s;
  }
  const uintptr_t base = (reinterpret_cast<uintptr_t>(workspace) + DecodeWorkspace::kAlign - 1) /
                         DecodeWorkspace::kAlign * DecodeWorkspace::kAlign;
  for (int q0 = 0; q0 < p.seqlen_q; q0 += q_count) {
    kp.q_begin = q0;
    kp.q_count = std::min(q_count, p.seqlen_q - q0);
    kp.tiles_per_seq = (kp.q_count * kp.head_group + Cfg::kBlockM - 1) / Cfg::kBlockM;
    const int64_t rows = static_cast<int64_t>(p.batch) * p.num_heads * kp.q_count;
    kp.ws_acc = reinterpret_cast<float*>(base);
    kp.ws_ml = reinterpret_cast<float*>(base + DecodeWorkspace::acc_bytes(rows, kp.max_splits, D));
    if (sb_status s = launch_attention_decode<Cfg>(kp, variant, mma, stream); s != SB_OK) return s;
  }
  return SB_OK;
}

// The library-owned workspace of each device (attention_decode_sm90(p)).
// Buffers are never freed: a captured CUDA graph may still point at one.
struct OwnedWorkspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};
std::mutex g_ws_mutex;
OwnedWorkspace g_ws[64];

}  // namespace

bool decode_sm90_applies(const sb_attention_params& p) {
  return p.block_table != nullptr ||
         (p.seqused_k != nullptr && p.cu_seqlens_q == nullptr && p.cu_seqlens_k == nullptr);
}

size_t attention_decode_sm90_workspace_size(const sb_attention_params& p) {
  if (block_n(p) == 0 || p.batch <= 0 || p.seqlen_q <= 0) return 0;
  return DecodeWorkspace::bytes(p.batch, p.num_heads, p.seqlen_q, max_splits(p), p.head_dim);
}

size_t attention_decode_sm90_min_workspace_size(const sb_attention_params& p) {
  if (block_n(p) == 0 || p.batch <= 0 || p.seqlen_q <= 0) return 0;
  return DecodeWorkspace::bytes(p.batch, p.num_heads, 1, max_splits(p), p.head_dim);
}

sb_status attention_decode_sm90(const sb_attention_params& p, void* workspace, size_t bytes) {
  if (sb_status s = check(p); s != SB_OK) return s;
  if (p.batch == 0 || p.seqlen_q == 0) return SB_OK;

  AttentionDecodeParams kp{};
  kp.q = p.q.data;
  kp.k = p.k.data;
  kp.v = p.v.data;
  kp.out = p.out.data;
  kp.lse = static_cast<float*>(p.lse.data);
  kp.q_batch_stride = p.q.batch_stride;
  kp.q_row_stride = p.q.row_stride;
  kp.q_head_stride = p.q.head_stride;
  kp.k_page_stride = p.k.batch_stride;
  kp.k_row_stride = p.k.row_stride;
  kp.k_head_stride = p.k.head_stride;
  kp.v_page_stride = p.v.batch_stride;
  kp.v_row_stride = p.v.row_stride;
  kp.v_head_stride = p.v.head_stride;
  kp.o_batch_stride = p.out.batch_stride;
  kp.o_row_stride = p.out.row_stride;
  kp.o_head_stride = p.out.head_stride;
  kp.lse_batch_stride = p.lse.batch_stride;
  kp.lse_row_stride = p.lse.row_stride;
  kp.lse_head_stride = p.lse.head_stride;
  kp.seqused_k = p.seqused_k;
  kp.block_table = p.block_table;
  kp.block_table_batch_stride = p.block_table_batch_stride;
  kp.page_size = p.block_table ? p.page_size : p.seqlen_k;
  kp.batch = p.batch;
  kp.num_heads = p.num_heads;
  kp.num_heads_k = p.num_heads_k;
  kp.head_group = p.num_heads / p.num_heads_k;
  kp.seqlen_q = p.seqlen_q;
  kp.seqlen_k = p.seqlen_k;
  // Logit constants: the same f32 expressions as attention_fwd_sm90().
  constexpr float kLog2e = 1.4426950408889634f;
  kp.scale_log2 = p.softmax_scale * kLog2e;
  kp.has_softcap = p.softcap > 0.f;
  kp.softcap_in = kp.has_softcap ? p.softmax_scale / p.softcap : 0.f;
  kp.softcap_out = kp.has_softcap ? p.softcap * kLog2e : 0.f;
  kp.window_left = p.window_left;
  kp.window_right = p.window_right;
  kp.max_splits = max_splits(p);

  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  const bool bf16 = p.dtype == SB_BF16;
  switch (p.head_dim) {
    case 64:
      return bf16 ? launch_waves<64, true>(p, kp, workspace, bytes, stream)
                  : launch_waves<64, false>(p, kp, workspace, bytes, stream);
    case 128:
      return bf16 ? launch_waves<128, true>(p, kp, workspace, bytes, stream)
                  : launch_waves<128, false>(p, kp, workspace, bytes, stream);
    default:
      return bf16 ? launch_waves<256, true>(p, kp, workspace, bytes, stream)
                  : launch_waves<256, false>(p, kp, workspace, bytes, stream);
  }
}

sb_status attention_decode_sm90(const sb_attention_params& p) {
  if (sb_status s = check(p); s != SB_OK) return s;
  if (p.batch == 0 || p.seqlen_q == 0) return SB_OK;
  // Enough for one wave of every query row, capped at 256 MiB (more rows
  // then run in more waves), never below the one-row minimum.
  constexpr size_t kCap = size_t(256) << 20;
  const size_t want = std::max(attention_decode_sm90_min_workspace_size(p),
                               std::min(attention_decode_sm90_workspace_size(p), kCap));
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
    return fail(SB_CUDA_ERROR, "sm90 attention with KV cache: no current CUDA device");
  void* ptr = nullptr;
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_ws_mutex);
    OwnedWorkspace& ws = g_ws[dev];
    if (ws.bytes < want) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(static_cast<cudaStream_t>(p.stream), &capture) != cudaSuccess ||
          capture != cudaStreamCaptureStatusNone)
        return fail(SB_INVALID_ARGUMENT,
                    "sm90 attention with KV cache: the decode workspace must grow to " +
                        std::to_string(want) +
                        " bytes inside a CUDA-graph capture; run the same shape once before capturing");
      size_t grown = size_t(1) << 20;
      while (grown < want) grown *= 2;
      void* fresh = nullptr;
      if (cudaMalloc(&fresh, grown) != cudaSuccess) {
        cudaGetLastError();
        return fail(SB_CUDA_ERROR, "sm90 attention with KV cache: cannot allocate a " +
                                       std::to_string(grown) + "-byte workspace");
      }
      ws.ptr = fresh;  // the old buffer stays allocated: a captured graph may use it
      ws.bytes = grown;
    }
    ptr = ws.ptr;
    bytes = ws.bytes;
  }
  return attention_decode_sm90(p, ptr, bytes);
}

}  // namespace samebits::cuda::sm90
