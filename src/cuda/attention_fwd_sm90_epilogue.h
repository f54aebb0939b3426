// sm90 attention forward: the split fold and the output (numerics.md "Split
// merge" and "Output").
//
// The running fold state (M, L per row; ACC, kBlockM x d f32) of a consumer
// warpgroup lives in its own slice of shared memory, laid out so that each
// thread reads and writes only its own elements: ACC register i of thread t
// is float (i * 128 + t) of the slice. No barrier is needed, and the 32
// threads of a warp touch 32 consecutive words (conflict-free).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include "cuda/attention_fwd_sm90_mainloop.h"

namespace samebits::cuda::sm90 {

template <class Cfg>
struct FoldState {
  static constexpr int kAccRegs = Cfg::kHeadDim / 2;
  float M[2], L[2];
  bool started;  // false: the fold is still the empty state

  __device__ __forceinline__ void reset() { started = false; }

  // Folds the finished split `st` into the state. The first non-empty split
  // of the item is copied: folding it into the empty state is exactly that
  // (a = 0, b = 1), and a row that saw no key of it carries the empty state.
  __device__ __forceinline__ void fold(const float (&m)[2], const float (&l)[2],
                                       const float (&acc)[kAccRegs], float* acc_smem, int tid) {
    if (!started) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        M[h] = m[h];
        L[h] = l[h];
      }
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc_smem[i * 128 + tid] = acc[i];
      started = true;
      return;
    }
    float a[2], b[2];
    combine(m, l, a, b);
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) {
      const int h = (i / 2) % 2;  // acc register 4c + 2h + j holds row h
      acc_smem[i * 128 + tid] =
          __fadd_rn(__fmul_rn(acc_smem[i * 128 + tid], a[h]), __fmul_rn(acc[i], b[h]));
    }
  }

  // M, L update of the fold; returns the weights a (old state), b (split).
  __device__ __forceinline__ void combine(const float (&m)[2], const float (&l)[2], float (&a)[2],
                                          float (&b)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float m_new = fmaxf(M[h], m[h]);
      const float ms = m_new == -CUDART_INF_F ? 0.f : m_new;
      a[h] = exp2_approx(__fsub_rn(M[h], ms));
      b[h] = exp2_approx(__fsub_rn(m[h], ms));
      L[h] = __fadd_rn(__fmul_rn(L[h], a[h]), __fmul_rn(l[h], b[h]));
      M[h] = m_new;
    }
  }

  // Folds the last split and leaves the row's final (M, L, ACC) in
  // (st.m, st.l, st.acc), ready for the output.
  __device__ __forceinline__ void finish(SplitState<Cfg>& st, const float* acc_smem, int tid) {
    if (!started) return;  // one split: its state is the result
    float a[2], b[2];
    combine(st.m, st.l, a, b);
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) {
      const int h = (i / 2) % 2;
      st.acc[i] = __fadd_rn(__fmul_rn(acc_smem[i * 128 + tid], a[h]), __fmul_rn(st.acc[i], b[h]));
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      st.m[h] = M[h];
      st.l[h] = L[h];
    }
  }
};

// out[d] = round(ACC[d] * (1 / L)) with 1 / L rounded once; lse = (M +
// log2 L) * ln2. A row with no visible key (L = 0) gets out = 0, lse = +inf.
// Rows past the sequence end are not written.
template <class Cfg>
__device__ __forceinline__ void write_output(const AttentionFwdParams& p, const WorkItem& w,
                                             const SplitState<Cfg>& st, int row_base, int q4) {
  using Elem = std::conditional_t<Cfg::kBf16, __nv_bfloat16, __half>;
  constexpr float kLn2 = 0.6931471805599453f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row_base + 8 * h;
    if (row >= w.lq) continue;
    const float L = st.l[h];
    const float inv = L == 0.f ? 0.f : __frcp_rn(L);
    const int64_t grow = w.q_row0 + row;
    Elem* o = static_cast<Elem*>(p.out) + w.q_batch * p.o_batch_stride + grow * p.o_row_stride +
              w.h * p.o_head_stride;
#pragma unroll
    for (int c = 0; c < Cfg::kHeadDim / 8; ++c) {
      const float x0 = __fmul_rn(st.acc[4 * c + 2 * h], inv);
      const float x1 = __fmul_rn(st.acc[4 * c + 2 * h + 1], inv);
      *reinterpret_cast<uint32_t*>(o + 8 * c + 2 * q4) = pack2<Cfg::kBf16>(x0, x1);
    }
    if (q4 == 0) {
      const float lse = L == 0.f ? CUDART_INF_F
                                 : __fmul_rn(__fadd_rn(st.m[h], log2_approx(L)), kLn2);
      p.lse[w.q_batch * p.lse_batch_stride + w.h * p.lse_head_stride + grow * p.lse_row_stride] = lse;
    }
  }
}

}  // namespace samebits::cuda::sm90
