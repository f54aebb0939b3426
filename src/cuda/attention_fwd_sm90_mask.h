// Variants of the sm90 attention forward as two small functors, so the
// mainloop stays one piece of code: ScoreMod turns a raw dot product into the
// base-2 logit, Visibility says which keys a query row sees
// (docs/numerics.md "Logits" and "Visibility").
#pragma once

#include <math_constants.h>

#include "cuda/attention_fwd_sm90_params.h"
#include "cuda/sm90_primitives.h"

namespace samebits::cuda::sm90 {

// The base-2 logit t of numerics.md ("Logits", and the sm90 exponent form
// of "Online softmax inside one split"). Each product is rounded on its own.
//  - no softcap, c = softmax_scale * log2e > 0 (`raw`): the mainloop keeps
//    the raw dot products s, takes the block maximum on them and computes
//    p = exp2(fma(s, c, -m)) with one rounding (one FFMA a score instead of
//    FMUL + FADD); the running max is m = round(max(s) * c), which equals
//    max(round(s * c)) because rounding is monotone and c > 0.
//  - softcap, or c <= 0: t = tanh(s * (scale / cap)) * (cap * log2e)
//    (resp. t = s * c) is formed first and the exponent form runs with
//    multiplier 1: fma(t, 1, -m) = round(t - m).
struct ScoreMod {
  float scale_log2, softcap_in, softcap_out;
  float exp_scale;  // multiplier of the exponent FMA: c when raw, else 1
  bool softcap, raw;
  __device__ __forceinline__ explicit ScoreMod(const AttentionFwdParams& p)
      : scale_log2(p.scale_log2),
        softcap_in(p.softcap_in),
        softcap_out(p.softcap_out),
        softcap(p.has_softcap != 0),
        raw(p.has_softcap == 0 && p.scale_log2 > 0.f) {
    exp_scale = raw ? scale_log2 : 1.f;
  }
  __device__ __forceinline__ float scaled(float s) const { return __fmul_rn(s, scale_log2); }
  __device__ __forceinline__ float capped(float s) const {
    return __fmul_rn(tanh_approx(__fmul_rn(s, softcap_in)), softcap_out);
  }
};

// Bottom-right aligned window over one sequence: query row i sits at key
// position i + (lk - lq) and sees key j iff 0 <= j < lk and
// pos - left <= j <= pos + right (a negative bound is unbounded).
struct Visibility {
  int lq, lk, left, right;

  __device__ __forceinline__ int position(int row) const { return row + lk - lq; }
  // Keys [lo, hi] row `row` sees (hi < lo when none), without overflow for
  // any window bound.
  __device__ __forceinline__ void row_bounds(int row, int& lo, int& hi) const {
    const int pos = position(row);
    lo = (left < 0 || left >= pos) ? 0 : pos - left;
    hi = (right < 0 || right >= lk - 1 - pos) ? lk - 1 : pos + right;
  }
  // Keys [lo, hi] that any of rows [row0, row1] sees; hi < lo when none.
  __device__ __forceinline__ void key_range(int row0, int row1, int& lo, int& hi) const {
    lo = left < 0 ? 0 : max(0, position(row0) - left);
    hi = right < 0 ? lk - 1 : min(lk - 1, position(row1) + right);
  }
  // Whether every row of [row0, row1] sees every key of [k0, k0 + n): such a
  // block needs no per-element mask.
  __device__ __forceinline__ bool block_fully_visible(int row0, int row1, int k0, int n) const {
    return k0 + n <= lk && (left < 0 || k0 >= position(row1) - left) &&
           (right < 0 || k0 + n - 1 <= position(row0) + right);
  }
};

}  // namespace samebits::cuda::sm90
