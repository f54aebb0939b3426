// sm90 attention over a KV cache, pass 2: the combine kernel. One warp per
// output row (sequence b, query head h, query row i) folds the splits the
// row sees, in ascending order, from the f32 partials of pass 1, and writes
// out and lse. Lane j holds the columns [j * d / 32, (j + 1) * d / 32).
//
// Arithmetic: the forward's fold (attention_fwd_sm90_epilogue.h,
// FoldState::fold / combine / finish) and output (write_output), operation
// for operation: the first split the row sees is copied (the forward's
// `started == false` branch), every later one folded with
//   M' = max(M, m); Ms = (M' == -inf) ? 0 : M'; a = ex2(M - Ms); b = ex2(m - Ms)
//   L = L*a + l*b;  ACC = ACC*a + acc*b          (each product and sum rounded)
// then out = round(ACC * rcp_rn(L)), lse = (M + lg2(L)) * ln2. The forward
// keeps these as members of FoldState and write_output, whose register
// layout (the wgmma accumulator's) the combine does not share, so the
// operations are restated here with the same intrinsics; fold_weights and
// finish_row below are the two helpers that docs/decode_design.md proposes
// to move into the forward's epilogue header so both call one definition.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <type_traits>

#include "cuda/attention_decode_sm90_kernel.h"
#include "cuda/sm90_primitives.h"

namespace samebits::cuda::sm90 {

// FoldState::combine for one row: updates (M, L), returns the weights a
// (old state) and b (split).
__device__ __forceinline__ void fold_weights(float& M, float& L, float m, float l, float& a,
                                             float& b) {
  const float m_new = fmaxf(M, m);
  const float ms = m_new == -CUDART_INF_F ? 0.f : m_new;
  a = exp2_approx(__fsub_rn(M, ms));
  b = exp2_approx(__fsub_rn(m, ms));
  L = __fadd_rn(__fmul_rn(L, a), __fmul_rn(l, b));
  M = m_new;
}

template <class Cfg>
struct DecodeCombine {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
  static constexpr int kPer = Cfg::kHeadDim / 32;  // columns per lane
  static_assert(kPer % 2 == 0, "lanes hold column pairs");
  // FREE. Splits whose partials are loaded before they are folded (the
  // fold itself stays strictly ascending); hides the load latency.
  static constexpr int kBatch = 8;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;

  __device__ static uint32_t pack(float lo, float hi) {
    if constexpr (Cfg::kBf16) {
      __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
      return *reinterpret_cast<uint32_t*>(&v);
    } else {
      __half2 v = __floats2half2_rn(lo, hi);
      return *reinterpret_cast<uint32_t*>(&v);
    }
  }

  __device__ static void run(const AttentionDecodeParams& p) {
    const int lane = threadIdx.x % 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    const int64_t rows = static_cast<int64_t>(p.batch) * p.num_heads * p.q_count;
    if (row >= rows) return;
    const int i = p.q_begin + static_cast<int>(row % p.q_count);
    const int h = static_cast<int>((row / p.q_count) % p.num_heads);
    const int b = static_cast<int>(row / (static_cast<int64_t>(p.q_count) * p.num_heads));
    const int lk = decode_keys(p, b);
    int lo, hi;
    decode_visibility(p, lk).row_bounds(i, lo, hi);

    float M = -CUDART_INF_F, L = 0.f;
    float acc[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) acc[j] = 0.f;
    if (lk > 0 && hi >= lo) {
      const int s_lo = lo / Cfg::kSplit, s_hi = hi / Cfg::kSplit;
      const float* ws_acc = p.ws_acc + row * p.max_splits * Cfg::kHeadDim + lane * kPer;
      const float* ws_ml = p.ws_ml + row * p.max_splits * 2;
      bool started = false;
      for (int s0 = s_lo; s0 <= s_hi; s0 += kBatch) {
        float part[kBatch][kPer], m[kBatch], l[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if (s0 + u > s_hi) break;
          const float2 ml = *reinterpret_cast<const float2*>(ws_ml + (s0 + u) * 2);
          m[u] = ml.x;
          l[u] = ml.y;
#pragma unroll
          for (int j = 0; j < kPer; j += 2) {
            const float2 x =
                *reinterpret_cast<const float2*>(ws_acc + (s0 + u) * Cfg::kHeadDim + j);
            part[u][j] = x.x;
            part[u][j + 1] = x.y;
          }
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if (s0 + u > s_hi) break;
          if (!started) {  // the first split the row sees: copied
            M = m[u];
            L = l[u];
#pragma unroll
            for (int j = 0; j < kPer; ++j) acc[j] = part[u][j];
            started = true;
            continue;
          }
          float a, w;
          fold_weights(M, L, m[u], l[u], a, w);
#pragma unroll
          for (int j = 0; j < kPer; ++j)
            acc[j] = __fadd_rn(__fmul_rn(acc[j], a), __fmul_rn(part[u][j], w));
        }
      }
    }

    // write_output: out = round(ACC * (1 / L)), 1 / L rounded once; lse =
    // (M + log2 L) * ln2; L = 0: out = 0, lse = +inf (decode_finish_row,
    // which pass 1 applies itself to one-split rows when direct_out).
    float inv, lse;
    decode_finish_row(M, L, inv, lse);
    Elem* o = static_cast<Elem*>(p.out) + b * p.o_batch_stride + static_cast<int64_t>(i) * p.o_row_stride +
              h * p.o_head_stride + lane * kPer;
#pragma unroll
    for (int j = 0; j < kPer; j += 2)
      *reinterpret_cast<uint32_t*>(o + j) = pack(__fmul_rn(acc[j], inv), __fmul_rn(acc[j + 1], inv));
    if (lane == 0) {
      p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + static_cast<int64_t>(i) * p.lse_row_stride] = lse;
    }
  }
};

template <class Cfg>
__global__ void __launch_bounds__(DecodeCombine<Cfg>::kThreads)
    attention_decode_combine_sm90_kernel(const __grid_constant__ AttentionDecodeParams p) {
  DecodeCombine<Cfg>::run(p);
}

}  // namespace samebits::cuda::sm90
