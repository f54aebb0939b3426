// sm90 attention backward, host side: checks, params, the launch shape and
// the explicit list of configurations (no dispatch macros).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/backend.h"
#include "cuda/attention_bwd_sm90_launch.h"
#include "cuda/device_info.h"
#if SAMEBITS_BWD_TMA
#include "cuda/driver_entry_points.h"
#endif
#include "samebits/config.h"

namespace samebits::cuda::sm90 {
namespace {

bool aligned(const void* p, uintptr_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }
// 16-byte loads (cp.async) of 8 elements: strides multiple of 8.
bool stride16(int64_t s) { return s % 8 == 0; }

// FREE test knob shared with the forward: SAMEBITS_SM90_MAX_CTAS caps every
// grid, so tests can prove the grid moves no bit.
int max_ctas_from_env() {
  const char* s = std::getenv("SAMEBITS_SM90_MAX_CTAS");
  return s ? std::atoi(s) : 0;
}

long ceil_div(long a, long b) { return (a + b - 1) / b; }

#if SAMEBITS_BWD_TMA
// A 4D map (dim, row, head, batch) of 16-bit elements, boxes of 64 columns
// x box_rows rows, 128-byte swizzle (the wgmma layout), as the forward's.
// Extents of 1 take a harmless stride (the row stride): their stride is
// never applied, and the caller's may be one TMA does not take.
bool make_map(CUtensorMap* map, const void* data, bool bf16, int head_dim, int64_t rows,
              int heads, int batch, int64_t row_stride, int64_t head_stride, int64_t batch_stride,
              int box_rows) {
  auto encode = samebits::cuda::tensor_map_encode_fn();
  if (encode == nullptr) return false;
  if (heads <= 1) head_stride = row_stride;
  if (batch <= 1) batch_stride = row_stride;
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(rows),
                        static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  cuuint64_t strides[3] = {static_cast<cuuint64_t>(row_stride * 2),
                           static_cast<cuuint64_t>(head_stride * 2),
                           static_cast<cuuint64_t>(batch_stride * 2)};
  cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  return encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                const_cast<void*>(data), dims, strides, box, elem_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
#endif

// Query tiles of 64 rows the fused backward's workspace holds a slot for
// (attention_bwd_sm90_fused.h, dq_tile_index): per sequence for dense
// batches; total_q / 64 + batch + 1 for packed ones.
long fused_tiles(const sb_attention_params& p, int64_t total_q) {
  return p.cu_seqlens_q ? static_cast<long>(total_q / 64) + p.batch + 1
                        : long(p.batch) * ceil_div(p.seqlen_q, 64);
}
bool runs_fused(const sb_attention_params& p) {
  return p.head_dim == 128 && (p.dtype == SB_BF16 || p.dtype == SB_F16) &&
         BwdRunConfig<128, true>::kFused;
}
size_t fused_bytes(const sb_attention_params& p, int64_t total_q) {
  using Cfg = BwdFusedConfig<128, true>;
  return static_cast<size_t>(fused_tiles(p, total_q)) * p.num_heads *
         (Cfg::kDqTileBytes + sizeof(int32_t));
}

template <int D, bool kBf16>
sb_status launch(const sb_attention_params& p, AttentionBwdParams kp, BwdLaunchShape shape,
                 void* workspace, int64_t total_q) {
  using Cfg = BwdRunConfig<D, kBf16>;
  // Dense batches walk their units on a persistent grid (at most one CTA per
  // SM), so that an SM starts its next unit's loads while it finishes the
  // last one (H100, bf16 d 128, dK/dV + dQ kernel time against one CTA per
  // unit: 16 x 1k 13 % faster, 4 x 4k 3 %, 1 x 16k 0.5 %). Under a mask
  // (causal, window) the units' work falls along each (sequence, head)'s T
  // units, and the walk (zigzag_unit) pairs unit n of one round with unit
  // T - 1 - n of the next only when 2 x grid is a multiple of T: the grid is
  // the largest such count of SMs. That pays for short sequences (causal:
  // 16 x 1k 17 % faster, 4 x 4k 7 %, T = 8 and 32) and costs for long ones
  // (1 x 16k, T = 128: 2.5 % dK/dV, 5 % dQ), so masked batches with T > 32,
  // or with a grid that leaves more than 1/16 of the SMs idle, keep one CTA
  // per unit (the hardware's scheduler balances them). Varlen: lengths live
  // on the device, so the grid is persistent. FREE: every unit's sums are
  // complete inside its CTA.
  const bool uniform_units = p.window_left < 0 && p.window_right < 0;
  // Measurement knob (FREE): SAMEBITS_BWD_PERSISTENT=0 one CTA per unit.
  const char* env = std::getenv("SAMEBITS_BWD_PERSISTENT");
  const bool persistent = env == nullptr || env[0] != '0';
  auto grid_units = [&](long units, long per_seq_head) {
    const long sms = shape.num_sms;
    if (!persistent || units <= sms) return units;
    if (uniform_units) return sms;
    if (per_seq_head > 32) return units;
    const long step = per_seq_head % 2 == 0 ? per_seq_head / 2 : per_seq_head;
    const long grid = step > 0 ? sms / step * step : 0;
    return grid > 0 && grid >= sms - sms / 16 ? grid : units;
  };
  if (p.cu_seqlens_q == nullptr) {
    const long tiles = ceil_div(p.seqlen_q, Cfg::kDqBlockM);
    shape.dq_units = grid_units(long(p.batch) * p.num_heads * tiles, tiles);
    shape.pre_units = long(p.batch) * p.num_heads * ceil_div(p.seqlen_q, kBwdPreprocessRows);
  }
  if (p.cu_seqlens_k == nullptr) {
    const long blocks = ceil_div(p.seqlen_k, Cfg::kBlockN);
    shape.dkdv_units = grid_units(long(p.batch) * p.num_heads_k * blocks, blocks);
  }
  if constexpr (!Cfg::kFused) {
    (void)workspace;
    (void)total_q;
    return launch_attention_bwd<Cfg>(kp, shape);
  } else {
    // The workspace: f32 accumulators [slot][64 x d], then one counter a
    // slot; the launcher zeroes it. Without the caller's, a stream-ordered
    // allocation of our own, freed after the launches in stream order.
    if (p.cu_seqlens_q != nullptr && total_q < 0) {
      int32_t last = 0;
      if (cudaMemcpyAsync(&last, p.cu_seqlens_q + p.batch, sizeof last, cudaMemcpyDeviceToHost,
                          shape.stream) != cudaSuccess ||
          cudaStreamSynchronize(shape.stream) != cudaSuccess)
        return fail(SB_CUDA_ERROR, "sm90 attention backward: reading cu_seqlens_q[batch] failed");
      total_q = last;
    }
    // (A caller's workspace was checked against this size by the C ABI,
    // sb_attention_backward_ws.)
    const size_t need = fused_bytes(p, total_q);
    void* ws = workspace;
    if (ws == nullptr && cudaMallocAsync(&ws, need, shape.stream) != cudaSuccess)
      return fail(SB_CUDA_ERROR, "sm90 attention backward: cudaMallocAsync of " +
                                     std::to_string(need) + " workspace bytes failed");
    const long slots = fused_tiles(p, total_q) * p.num_heads;
    kp.dq_accum = static_cast<float*>(ws);
    kp.dq_sem = reinterpret_cast<int32_t*>(static_cast<float*>(ws) + slots * Cfg::kDqTileFloats);
    kp.dq_tiles_per_seq = static_cast<int32_t>(ceil_div(p.seqlen_q, 64));
    // FREE knobs (measurements; docs/backward_design.md "Fused dQ"), and a
    // DIAGNOSTIC one that breaks dq (never set outside a measurement).
    auto env_int = [](const char* name, int fallback) {
      const char* e = std::getenv(name);
      return e != nullptr && e[0] != '\0' ? std::atoi(e) : fallback;
    };
    // Defaults from the H200 sweep of 2026-11-26: one reduction in flight;
    // block-major walk for unmasked batches (equal units), head-major under
    // a mask (block-major ends on the longest units there).
    const bool masked = p.window_left >= 0 || p.window_right >= 0;
    kp.fused_inflight = env_int("SAMEBITS_BWD_FUSED_INFLIGHT", 1);
    kp.fused_block_major = env_int("SAMEBITS_BWD_FUSED_BLOCK_MAJOR", masked ? 0 : 1);
    kp.fused_diag = env_int("SAMEBITS_BWD_FUSED_DIAG", 0);
    shape.fused_workspace_bytes = need;
    const sb_status st = launch_attention_bwd<Cfg>(kp, shape);
    if (workspace == nullptr) cudaFreeAsync(ws, shape.stream);
    return st;
  }
}

}  // namespace

#if SAMEBITS_BWD_TMA
bool make_bwd_maps(const AttentionBwdParams& p, int head_dim, bool bf16, int q_box_rows,
                      int kv_box_rows, BwdMaps* maps) {
  // Packed tensors: the token count is on the device; the row extent is a
  // bound and only tiles inside one sequence go through TMA (the kernel
  // loads the tile that crosses a sequence end by hand), so TMA never
  // reads past a sequence.
  constexpr int64_t kPackedRows = 0x7fffffff;
  const bool q_packed = p.cu_seqlens_q != nullptr, k_packed = p.cu_seqlens_k != nullptr;
  // Extents must be non-zero; a zero-length dense tensor has no tile inside
  // its sequence, so TMA never reads it.
  const int64_t q_rows = q_packed ? kPackedRows : (p.seqlen_q > 0 ? p.seqlen_q : 1);
  const int64_t k_rows = k_packed ? kPackedRows : (p.seqlen_k > 0 ? p.seqlen_k : 1);
  const int qb = q_packed ? 1 : p.batch, kb = k_packed ? 1 : p.batch;
  return make_map(&maps->q, p.q, bf16, head_dim, q_rows, p.num_heads, qb, p.q_row_stride,
                  p.q_head_stride, p.q_batch_stride, q_box_rows) &&
         make_map(&maps->dout, p.dout, bf16, head_dim, q_rows, p.num_heads, qb, p.do_row_stride,
                  p.do_head_stride, p.do_batch_stride, q_box_rows) &&
         make_map(&maps->k, p.k, bf16, head_dim, k_rows, p.num_heads_k, kb, p.k_row_stride,
                  p.k_head_stride, p.k_batch_stride, kv_box_rows) &&
         make_map(&maps->v, p.v, bf16, head_dim, k_rows, p.num_heads_k, kb, p.v_row_stride,
                  p.v_head_stride, p.v_batch_stride, kv_box_rows);
}
#endif

size_t attention_bwd_sm90_workspace_size(const sb_attention_params& p, int64_t total_q) {
  if (!runs_fused(p) || p.batch <= 0) return 0;
  return fused_bytes(p, p.cu_seqlens_q ? (total_q > 0 ? total_q : 0) : 0);
}

sb_status attention_bwd_sm90(const sb_attention_params& p) {
  return attention_bwd_sm90(p, nullptr, 0, -1);
}

sb_status attention_bwd_sm90(const sb_attention_params& p, void* workspace, size_t workspace_bytes,
                             int64_t total_q) {
  (void)workspace_bytes;  // checked against the size by the C ABI
  const char* who = "sm90 attention backward: ";
  if (p.dtype != SB_BF16 && p.dtype != SB_F16)
    return fail(SB_UNSUPPORTED, std::string(who) + "only bf16 and fp16 are built");
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return fail(SB_UNSUPPORTED, std::string(who) + "head_dim must be 64, 128 or 256, got " +
                                    std::to_string(p.head_dim));
  if (p.block_table != nullptr)
    return fail(SB_UNSUPPORTED, std::string(who) + "paged KV caches have no backward");
  // Inputs read 16 bytes at a time (cp.async, and out/dout in the
  // preprocess); outputs written as 4-byte pairs, and D stored as an f32 in
  // dq's rows.
  const sb_view* in[] = {&p.q, &p.k, &p.v, &p.out, &p.dout};
  const bool q_packed = p.cu_seqlens_q != nullptr, k_packed = p.cu_seqlens_k != nullptr;
  for (const sb_view* v : in) {
    const bool packed = (v == &p.k || v == &p.v) ? k_packed : q_packed;
    if (!aligned(v->data, 16) || !stride16(v->row_stride) || !stride16(v->head_stride) ||
        (!packed && p.batch > 1 && !stride16(v->batch_stride)))
      return fail(SB_UNSUPPORTED, std::string(who) +
                                      "q, k, v, out, dout need 16-byte aligned data and strides "
                                      "that are multiples of 8 elements");
  }
  const sb_view* outs[] = {&p.dq, &p.dk, &p.dv};
  for (const sb_view* v : outs) {
    if (!aligned(v->data, 4) || v->row_stride % 2 != 0 || v->head_stride % 2 != 0 ||
        v->batch_stride % 2 != 0)
      return fail(SB_UNSUPPORTED, std::string(who) + "dq, dk, dv need 4-byte aligned pairs");
  }
  if (p.batch == 0) return SB_OK;

  AttentionBwdParams kp{};
  kp.q = p.q.data;
  kp.k = p.k.data;
  kp.v = p.v.data;
  kp.out = p.out.data;
  kp.dout = p.dout.data;
  kp.lse = static_cast<const float*>(p.lse.data);
  kp.dq = p.dq.data;
  kp.dk = p.dk.data;
  kp.dv = p.dv.data;
  // Packed tensors: rows index the token axis, the batch stride is unused.
  kp.q_batch_stride = q_packed ? 0 : p.q.batch_stride;
  kp.q_row_stride = p.q.row_stride;
  kp.q_head_stride = p.q.head_stride;
  kp.k_batch_stride = k_packed ? 0 : p.k.batch_stride;
  kp.k_row_stride = p.k.row_stride;
  kp.k_head_stride = p.k.head_stride;
  kp.v_batch_stride = k_packed ? 0 : p.v.batch_stride;
  kp.v_row_stride = p.v.row_stride;
  kp.v_head_stride = p.v.head_stride;
  kp.o_batch_stride = q_packed ? 0 : p.out.batch_stride;
  kp.o_row_stride = p.out.row_stride;
  kp.o_head_stride = p.out.head_stride;
  kp.do_batch_stride = q_packed ? 0 : p.dout.batch_stride;
  kp.do_row_stride = p.dout.row_stride;
  kp.do_head_stride = p.dout.head_stride;
  kp.lse_batch_stride = q_packed ? 0 : p.lse.batch_stride;
  kp.lse_row_stride = p.lse.row_stride;
  kp.lse_head_stride = p.lse.head_stride;
  kp.dq_batch_stride = q_packed ? 0 : p.dq.batch_stride;
  kp.dq_row_stride = p.dq.row_stride;
  kp.dq_head_stride = p.dq.head_stride;
  kp.dk_batch_stride = k_packed ? 0 : p.dk.batch_stride;
  kp.dk_row_stride = p.dk.row_stride;
  kp.dk_head_stride = p.dk.head_stride;
  kp.dv_batch_stride = k_packed ? 0 : p.dv.batch_stride;
  kp.dv_row_stride = p.dv.row_stride;
  kp.dv_head_stride = p.dv.head_stride;
  kp.cu_seqlens_q = p.cu_seqlens_q;
  kp.cu_seqlens_k = p.cu_seqlens_k;
  kp.seqused_k = p.seqused_k;
  kp.batch = p.batch;
  kp.num_heads = p.num_heads;
  kp.num_heads_k = p.num_heads_k;
  kp.head_group = p.num_heads / p.num_heads_k;
  kp.seqlen_q = p.seqlen_q;
  kp.seqlen_k = p.seqlen_k;
  // Logit constants of numerics.md, each one f32 product or quotient,
  // exactly as the forward forms them.
  constexpr float kLog2e = 1.4426950408889634f;
  kp.softmax_scale = p.softmax_scale;
  kp.scale_log2 = p.softmax_scale * kLog2e;
  kp.has_softcap = p.softcap > 0.f;
  kp.softcap_in = kp.has_softcap ? p.softmax_scale / p.softcap : 0.f;
  kp.softcap_out = kp.has_softcap ? p.softcap * kLog2e : 0.f;
  kp.window_left = p.window_left;
  kp.window_right = p.window_right;
  {
    const char* e = std::getenv("SAMEBITS_BWD_TAIL_TMA");  // FREE, measurements
    kp.tail_tma = e != nullptr && e[0] == '0' ? 0 : 1;
  }

  BwdLaunchShape shape{-1, -1, -1, device_sm_count(), max_ctas_from_env(),
                       static_cast<cudaStream_t>(p.stream), 0};
  if (shape.num_sms <= 0) return fail(SB_CUDA_ERROR, std::string(who) + "no CUDA device");

  const bool bf16 = p.dtype == SB_BF16;
  switch (p.head_dim) {
    case 64:
      return bf16 ? launch<64, true>(p, kp, shape, workspace, total_q)
                  : launch<64, false>(p, kp, shape, workspace, total_q);
    case 128:
      return bf16 ? launch<128, true>(p, kp, shape, workspace, total_q)
                  : launch<128, false>(p, kp, shape, workspace, total_q);
    default:
      return bf16 ? launch<256, true>(p, kp, shape, workspace, total_q)
                  : launch<256, false>(p, kp, shape, workspace, total_q);
  }
}

}  // namespace samebits::cuda::sm90
