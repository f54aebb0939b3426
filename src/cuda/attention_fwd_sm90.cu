// sm90 attention forward, host side: checks, tensor maps, and the explicit
// list of configurations (no dispatch macros).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "core/backend.h"
#include "cuda/driver_entry_points.h"
#include "cuda/attention_fwd_sm90_launch.h"
#include "cuda/device_info.h"
#include "samebits/config.h"

namespace samebits::cuda::sm90 {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
bool stride_ok(int64_t s) { return s % 8 == 0 && s > 0 && s * 2 < (int64_t(1) << 40); }

// A 4D map (dim, row, head, batch) of 16-bit elements with boxes of
// 64 columns x box_rows rows, 128-byte swizzle (the wgmma layout).
sb_status make_map(CUtensorMap* map, const sb_view& v, bool bf16, int head_dim, int64_t rows,
                   int heads, int batch, int box_rows, bool packed) {
  auto encode = samebits::cuda::tensor_map_encode_fn();
  if (encode == nullptr) return fail(SB_CUDA_ERROR, "cuTensorMapEncodeTiled is not available");
  const int64_t batch_stride = packed ? v.row_stride : v.batch_stride;
  cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(rows),
                        static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(packed ? 1 : batch)};
  cuuint64_t strides[3] = {static_cast<cuuint64_t>(v.row_stride * 2),
                           static_cast<cuuint64_t>(v.head_stride * 2),
                           static_cast<cuuint64_t>(batch_stride * 2)};
  cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUresult r = encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                      4, v.data, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail(SB_CUDA_ERROR, "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(r));
  return SB_OK;
}

// FREE test knob: SAMEBITS_SM90_MAX_CTAS caps the persistent grid, so tests
// can prove the grid moves no bit.
int max_ctas_from_env() {
  const char* s = std::getenv("SAMEBITS_SM90_MAX_CTAS");
  return s ? std::atoi(s) : 0;
}

template <int D, bool kBf16>
sb_status launch(const sb_attention_params& p, AttentionFwdParams& kp, LaunchShape& shape) {
  using Cfg = FwdConfig<D, kBf16>;
  const bool q_packed = p.cu_seqlens_q != nullptr, k_packed = p.cu_seqlens_k != nullptr;
  // Packed tensors: the host does not know the token count (cu_seqlens is on
  // the device); the map's row extent is a bound, and tiles that cross a
  // sequence end are loaded by hand, so TMA never reads past a sequence.
  const int64_t kPackedRows = 0x7fffffff;
  const int64_t q_rows = q_packed ? kPackedRows : p.seqlen_q;
  const int64_t k_rows = k_packed ? kPackedRows : p.seqlen_k;
  if (sb_status s = make_map(&kp.tma_q, p.q, kBf16, D, q_rows, p.num_heads, p.batch, Cfg::kBlockM,
                             q_packed);
      s != SB_OK)
    return s;
  if (sb_status s = make_map(&kp.tma_k, p.k, kBf16, D, k_rows, p.num_heads_k, p.batch,
                             Cfg::kBlockN, k_packed);
      s != SB_OK)
    return s;
  if (sb_status s = make_map(&kp.tma_v, p.v, kBf16, D, k_rows, p.num_heads_k, p.batch,
                             Cfg::kBlockN, k_packed);
      s != SB_OK)
    return s;
  if (!q_packed) {
    // Scheduler units (attention_fwd_sm90_scheduler.h): one query tile, or
    // with a window a pair of tiles of one head.
    const long tiles = (static_cast<long>(p.seqlen_q) + Cfg::kBlockM - 1) / Cfg::kBlockM;
    const bool paired = kp.window_left >= 0 || kp.window_right >= 0;
    shape.work_items = static_cast<long>(p.batch) * p.num_heads * (paired ? (tiles + 1) / 2 : tiles);
  }
  return launch_attention_fwd<Cfg>(kp, shape);
}

}  // namespace

sb_status attention_fwd_sm90(const sb_attention_params& p) {
  if (p.dtype != SB_BF16 && p.dtype != SB_F16)
    return fail(SB_UNSUPPORTED, "sm90 attention forward: only bf16 and fp16 are built");
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return fail(SB_UNSUPPORTED, "sm90 attention forward: head_dim must be 64, 128 or 256, got " +
                                    std::to_string(p.head_dim));
  if (p.block_table != nullptr)
    return fail(SB_UNSUPPORTED, "sm90 attention forward: paged KV caches are not built yet");
  const sb_view* views[] = {&p.q, &p.k, &p.v};
  for (const sb_view* v : views) {
    if (!aligned16(v->data) || !stride_ok(v->row_stride) || !stride_ok(v->head_stride))
      return fail(SB_UNSUPPORTED,
                  "sm90 attention forward: q, k, v need 16-byte aligned data and row/head "
                  "strides that are multiples of 8 elements");
  }
  if (p.cu_seqlens_q == nullptr && !stride_ok(p.q.batch_stride) && p.batch > 1)
    return fail(SB_UNSUPPORTED, "sm90 attention forward: q batch stride must be a multiple of 8");
  if (p.cu_seqlens_k == nullptr && p.batch > 1 &&
      (!stride_ok(p.k.batch_stride) || !stride_ok(p.v.batch_stride)))
    return fail(SB_UNSUPPORTED, "sm90 attention forward: k/v batch strides must be multiples of 8");
  if (reinterpret_cast<uintptr_t>(p.out.data) % 4 != 0 || p.out.row_stride % 2 != 0 ||
      p.out.head_stride % 2 != 0 || p.out.batch_stride % 2 != 0)
    return fail(SB_UNSUPPORTED, "sm90 attention forward: out needs 4-byte aligned pairs");
  if (p.batch == 0) return SB_OK;

  AttentionFwdParams kp{};
  kp.q = p.q.data;
  kp.k = p.k.data;
  kp.v = p.v.data;
  kp.out = p.out.data;
  kp.lse = static_cast<float*>(p.lse.data);
  kp.q_batch_stride = p.cu_seqlens_q ? 0 : p.q.batch_stride;
  kp.q_row_stride = p.q.row_stride;
  kp.q_head_stride = p.q.head_stride;
  kp.k_batch_stride = p.cu_seqlens_k ? 0 : p.k.batch_stride;
  kp.k_row_stride = p.k.row_stride;
  kp.k_head_stride = p.k.head_stride;
  kp.v_batch_stride = p.cu_seqlens_k ? 0 : p.v.batch_stride;
  kp.v_row_stride = p.v.row_stride;
  kp.v_head_stride = p.v.head_stride;
  kp.o_batch_stride = p.cu_seqlens_q ? 0 : p.out.batch_stride;
  kp.o_row_stride = p.out.row_stride;
  kp.o_head_stride = p.out.head_stride;
  kp.lse_batch_stride = p.cu_seqlens_q ? 0 : p.lse.batch_stride;
  kp.lse_row_stride = p.lse.row_stride;
  kp.lse_head_stride = p.lse.head_stride;
  kp.cu_seqlens_q = p.cu_seqlens_q;
  kp.cu_seqlens_k = p.cu_seqlens_k;
  kp.seqused_k = p.seqused_k;
  kp.batch = p.batch;
  kp.num_heads = p.num_heads;
  kp.head_group = p.num_heads / p.num_heads_k;
  kp.seqlen_q = p.seqlen_q;
  kp.seqlen_k = p.seqlen_k;
  // Logit constants of numerics.md, each one f32 product or quotient.
  constexpr float kLog2e = 1.4426950408889634f;
  kp.scale_log2 = p.softmax_scale * kLog2e;
  kp.has_softcap = p.softcap > 0.f;
  kp.softcap_in = kp.has_softcap ? p.softmax_scale / p.softcap : 0.f;
  kp.softcap_out = kp.has_softcap ? p.softcap * kLog2e : 0.f;
  kp.window_left = p.window_left;
  kp.window_right = p.window_right;
  {
    const char* e = std::getenv("SAMEBITS_FWD_TAIL_TMA");  // FREE, measurements
    kp.tail_tma = e != nullptr && e[0] == '0' ? 0 : 1;
  }

  LaunchShape shape{-1, device_sm_count(), max_ctas_from_env(), static_cast<cudaStream_t>(p.stream)};
  if (shape.num_sms <= 0) return fail(SB_CUDA_ERROR, "sm90 attention forward: no CUDA device");

  const bool bf16 = p.dtype == SB_BF16;
  switch (p.head_dim) {
    case 64: return bf16 ? launch<64, true>(p, kp, shape) : launch<64, false>(p, kp, shape);
    case 128: return bf16 ? launch<128, true>(p, kp, shape) : launch<128, false>(p, kp, shape);
    default: return bf16 ? launch<256, true>(p, kp, shape) : launch<256, false>(p, kp, shape);
  }
}

}  // namespace samebits::cuda::sm90
