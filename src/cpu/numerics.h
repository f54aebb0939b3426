// CPU backend numerics: the arithmetic building blocks of docs/numerics.md.
//
// Every helper here is a fixed sequence of IEEE f32 (or, where stated, f64)
// operations. The library is compiled with -ffp-contract=off and without
// fast-math, so the compiler may neither fuse nor reassociate them, and the
// 8-lane vector type below maps one lane to one partial sum of the contract.
// The forward, the backward and the tests all use these helpers, so the
// contract is written in exactly one place.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "samebits/samebits.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace samebits::cpu {

// docs/numerics.md, "Notation and precision".
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Eight f32 lanes. Arithmetic on it is lane-wise IEEE f32: each lane is one
// independent accumulator, never reassociated.
typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));

// Helpers that take or return f32x8 by value are always inlined: the callers
// are compiled for several targets (target_clones), and an out-of-line call
// between an AVX2 clone and a default-target helper would disagree on how
// the vector is passed.
#define SB_VEC_INLINE inline __attribute__((always_inline))

SB_VEC_INLINE f32x8 splat8(float x) { return f32x8{x, x, x, x, x, x, x, x}; }
SB_VEC_INLINE f32x8 load8(const float* p) {
  f32x8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
SB_VEC_INLINE void store8(float* p, f32x8 v) { std::memcpy(p, &v, sizeof(v)); }

inline uint32_t f32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// ---------------------------------------------------------------------------
// Dtype conversions. Widening is exact; narrowing rounds to nearest even,
// keeps NaN quiet, overflows to inf and produces subnormals.

inline float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);  // ties to even; carries into the exponent
  return uint16_t(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in f32
    const float v = float(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7F800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float x) {
  const uint32_t u = f32_bits(x);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // quiet NaN
  if (a >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // >= 65520 (a tie above 65504): inf
  if (a >= 0x38800000u)  // a normal f16 (|x| >= 2^-14): rebias, round the 13 dropped bits
    return uint16_t(sign | ((a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13));
  // An f16 subnormal (or zero): |x| * 2^24 is exact; the add/sub of 2^23
  // rounds it to an integer, ties to even. 1024 is the smallest normal,
  // whose encoding is that same integer.
  const float y = bits_f32(a) * 0x1p24f;
  const float r = (y + 0x1p23f) - 0x1p23f;
  return uint16_t(sign | uint16_t(r));
}

// round(x) of docs/numerics.md: f32 -> input dtype -> f32.
inline float round_to(sb_dtype dt, float x) {
  switch (dt) {
    case SB_BF16: return bf16_to_f32(f32_to_bf16(x));
    case SB_F16: return f16_to_f32(f32_to_f16(x));
    default: return x;
  }
}

// The bf16 rounding of eight lanes at once, bit-identical to round_to(SB_BF16).
SB_VEC_INLINE f32x8 round_bf16_x8(f32x8 x) {
  const u32x8 u = (u32x8)x;
  const u32x8 r = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  const u32x8 nan = ((u >> 16) | 0x0040u) << 16;
  return (f32x8)((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : r);
}

// Rounds n values in place to the dtype (the P and G operands).
inline void round_in_place(sb_dtype dt, float* x, int n) {
  if (dt == SB_F32) return;
  int i = 0;
  if (dt == SB_BF16)
    for (; i + 8 <= n; i += 8) store8(x + i, round_bf16_x8(load8(x + i)));
  for (; i < n; ++i) x[i] = round_to(dt, x[i]);
}

// ---------------------------------------------------------------------------
// exp2: x = n + f with n = nearest integer (ties even) and |f| <= 1/2 exact;
// 2^f by its Taylor series in f*ln2 to degree 7 (truncation < 1e-8
// relative), Horner in f32; then two exact power-of-two scalings so that
// results in the subnormal range are rounded once. exp2(-inf) = 0,
// exp2(0) = 1 and exp2(integer) are exact; NaN propagates.
SB_VEC_INLINE f32x8 exp2_x8(f32x8 x) {
  const f32x8 magic = splat8(0x1.8p23f);
  x = x < splat8(-151.0f) ? splat8(-151.0f) : x;  // below: rounds to 0
  x = x > splat8(128.0f) ? splat8(128.0f) : x;    // above: inf
  const f32x8 big = x + magic;
  const f32x8 f = x - (big - magic);
  const i32x8 n = (i32x8)big - (i32x8)magic;
  const i32x8 n1 = n >> 1;
  const i32x8 n2 = n - n1;
  const f32x8 s1 = (f32x8)((u32x8)(n1 + 127) << 23);
  const f32x8 s2 = (f32x8)((u32x8)(n2 + 127) << 23);
  f32x8 p = splat8(1.525273380405984e-05f);
  p = p * f + splat8(1.5403530393381606e-04f);
  p = p * f + splat8(1.3333558146428443e-03f);
  p = p * f + splat8(9.618129107628477e-03f);
  p = p * f + splat8(5.550410866482158e-02f);
  p = p * f + splat8(2.402265069591007e-01f);
  p = p * f + splat8(6.931471805599453e-01f);
  p = p * f + splat8(1.0f);
  return (p * s1) * s2;
}
// The same operations on one value (lane 0 of the vector path).
inline float exp2_f32(float x) { return exp2_x8(splat8(x))[0]; }

// log2 for the LSE (once per row): exponent plus an atanh series in f64,
// rounded once to f32. Pure f64 arithmetic: no libm, same bits everywhere.
inline float log2_f32(float x) {
  if (!(x > 0.0f)) return x == 0.0f ? -kInf : std::numeric_limits<float>::quiet_NaN();
  if (x == kInf) return kInf;
  int e = 0;
  double m = std::frexp(double(x), &e);  // exact: x = m * 2^e, m in [1/2, 1)
  if (m < 0.70710678118654752) {
    m *= 2.0;
    e -= 1;
  }
  const double z = (m - 1.0) / (m + 1.0);  // |z| < 0.172
  const double z2 = z * z;
  double term = z, sum = 0.0;
  for (int k = 0; k < 14; ++k) {
    sum += term / double(2 * k + 1);
    term *= z2;
  }
  return float(double(e) + 2.0 * sum * 1.4426950408889634074);
}

// tanh for the softcap, in f64 rounded once to f32: expm1(-2|y|) by a Taylor
// series after exact halvings, undone by expm1(2u) = e*(e+2); then
// tanh = -e / (e + 2). No libm, same bits everywhere.
inline float tanh_f32(float y) {
  if (y != y) return y;
  const double a = std::fabs(double(y));
  if (a >= 10.0) return y < 0 ? -1.0f : 1.0f;  // |tanh| rounds to 1 above ~9.01
  double x = -2.0 * a;
  int halvings = 0;
  while (x < -0.5) {
    x *= 0.5;
    ++halvings;
  }
  double term = x, e = x;
  for (int n = 2; n <= 18; ++n) {
    term *= x / double(n);
    e += term;
  }
  for (int k = 0; k < halvings; ++k) e = e * (e + 2.0);
  const float t = float(-e / (e + 2.0));
  return y < 0 ? -t : t;
}

// ---------------------------------------------------------------------------
// dot(a, b) over d (a multiple of 8): lane l = c % 8 sums a[c]*b[c] for
// c = l, l+8, ... ascending, starting from +0; the lanes are then combined as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). docs/numerics.md, "Notation".
SB_VEC_INLINE float combine_lanes(f32x8 l) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

inline float dot(const float* a, const float* b, int d) {
  f32x8 acc = splat8(0.0f);
  for (int c = 0; c < d; c += 8) acc += load8(a + c) * load8(b + c);
  return combine_lanes(acc);
}

// Eight dots of `a` with rows b, b+stride, ..., b+7*stride; each one is
// bit-identical to dot() (independent accumulators, interleaved for speed).
inline void dot_rows8(const float* a, const float* b, int64_t stride, int d, float* out) {
  f32x8 s0 = splat8(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  for (int c = 0; c < d; c += 8) {
    const f32x8 x = load8(a + c);
    s0 += x * load8(b + c);
    s1 += x * load8(b + stride + c);
    s2 += x * load8(b + 2 * stride + c);
    s3 += x * load8(b + 3 * stride + c);
    s4 += x * load8(b + 4 * stride + c);
    s5 += x * load8(b + 5 * stride + c);
    s6 += x * load8(b + 6 * stride + c);
    s7 += x * load8(b + 7 * stride + c);
  }
  out[0] = combine_lanes(s0);
  out[1] = combine_lanes(s1);
  out[2] = combine_lanes(s2);
  out[3] = combine_lanes(s3);
  out[4] = combine_lanes(s4);
  out[5] = combine_lanes(s5);
  out[6] = combine_lanes(s6);
  out[7] = combine_lanes(s7);
}

// dots of `a` with n consecutive rows of stride `stride`.
inline void dot_rows(const float* a, const float* b, int64_t stride, int n, int d, float* out) {
  int j = 0;
  for (; j + 8 <= n; j += 8) dot_rows8(a, b + j * stride, stride, d, out + j);
  for (; j < n; ++j) out[j] = dot(a, b + j * stride, d);
}

// ---------------------------------------------------------------------------
// Logits, docs/numerics.md "Logits": t = s * (scale * log2e), or with a
// softcap t = tanh(s * (scale / cap)) * (cap * log2e). Base-2 logits.
struct LogitParams {
  bool softcap = false;
  float c = 0.0f;     // scale * log2e
  float pre = 0.0f;   // scale / cap
  float post = 0.0f;  // cap * log2e
};

inline LogitParams make_logit_params(float softmax_scale, float softcap) {
  LogitParams lp;
  lp.softcap = softcap > 0.0f;
  lp.c = softmax_scale * kLog2e;
  if (lp.softcap) {
    lp.pre = softmax_scale / softcap;
    lp.post = softcap * kLog2e;
  }
  return lp;
}

inline float logit(const LogitParams& lp, float s) {
  return lp.softcap ? tanh_f32(s * lp.pre) * lp.post : s * lp.c;
}

// In place: scores s[0..n) -> logits t.
inline void logits_in_place(const LogitParams& lp, float* s, int n) {
  if (lp.softcap) {
    for (int j = 0; j < n; ++j) s[j] = tanh_f32(s[j] * lp.pre) * lp.post;
  } else {
    for (int j = 0; j < n; ++j) s[j] = s[j] * lp.c;
  }
}

// ---------------------------------------------------------------------------
// Online softmax, docs/numerics.md "Online softmax inside one split": the
// (m, l) part of one KV-block step for one row. On entry tp[0..n) holds the
// logits of the block's visible keys in key order; on exit the unrounded
// p_j = exp2(t_j - ms). `tp` must have room for n rounded up to 8. Returns
// alpha, by which the caller rescales acc.
inline float softmax_block_step(float& m, float& l, float* tp, int n) {
  float mb = -kInf;  // max is exact in any order: the zero sign never reaches a result
  for (int j = 0; j < n; ++j) mb = tp[j] > mb ? tp[j] : mb;
  const float m_new = m > mb ? m : mb;
  const float ms = m_new == -kInf ? 0.0f : m_new;
  const float alpha = exp2_f32(m - ms);
  const int n8 = (n + 7) & ~7;
  for (int j = n; j < n8; ++j) tp[j] = -kInf;
  const f32x8 msv = splat8(ms);
  for (int j = 0; j < n8; j += 8) store8(tp + j, exp2_x8(load8(tp + j) - msv));
  float rowsum = 0.0f;  // keys ascending, one rounding per addition
  for (int j = 0; j < n; ++j) rowsum += tp[j];
  l = l * alpha + rowsum;
  m = m_new;
  return alpha;
}

// acc[d] = acc[d] * alpha + sum_j rp[j] * v_j[d], the sum over the n keys in
// ascending order starting from +0 (v_j = v + j * stride).
inline void pv_block_step(float* acc, float alpha, const float* rp, const float* v, int64_t stride,
                          int n, int d) {
  const f32x8 av = splat8(alpha);
  int c = 0;
  for (; c + 32 <= d; c += 32) {
    f32x8 s0 = splat8(0.0f), s1 = s0, s2 = s0, s3 = s0;
    const float* vr = v + c;
    for (int j = 0; j < n; ++j, vr += stride) {
      const f32x8 pj = splat8(rp[j]);
      s0 += pj * load8(vr);
      s1 += pj * load8(vr + 8);
      s2 += pj * load8(vr + 16);
      s3 += pj * load8(vr + 24);
    }
    store8(acc + c, load8(acc + c) * av + s0);
    store8(acc + c + 8, load8(acc + c + 8) * av + s1);
    store8(acc + c + 16, load8(acc + c + 16) * av + s2);
    store8(acc + c + 24, load8(acc + c + 24) * av + s3);
  }
  for (; c < d; c += 8) {
    f32x8 s0 = splat8(0.0f);
    const float* vr = v + c;
    for (int j = 0; j < n; ++j, vr += stride) s0 += splat8(rp[j]) * load8(vr);
    store8(acc + c, load8(acc + c) * av + s0);
  }
}

// One f32 accumulator per output element, docs/numerics.md "Backward":
// acc[c] = (((acc[c] + w_0 * r_0[c]) + w_1 * r_1[c]) + ...) over the n rows
// r_j = rows + j * row_stride in ascending j, weights w_j = w[j * w_stride].
inline void accumulate_rows(float* acc, const float* w, int64_t w_stride, const float* rows,
                            int64_t row_stride, int n, int d) {
  int c = 0;
  for (; c + 32 <= d; c += 32) {
    f32x8 s0 = load8(acc + c), s1 = load8(acc + c + 8), s2 = load8(acc + c + 16),
          s3 = load8(acc + c + 24);
    const float* r = rows + c;
    for (int j = 0; j < n; ++j, r += row_stride) {
      const f32x8 wj = splat8(w[j * w_stride]);
      s0 += wj * load8(r);
      s1 += wj * load8(r + 8);
      s2 += wj * load8(r + 16);
      s3 += wj * load8(r + 24);
    }
    store8(acc + c, s0);
    store8(acc + c + 8, s1);
    store8(acc + c + 16, s2);
    store8(acc + c + 24, s3);
  }
  for (; c < d; c += 8) {
    f32x8 s0 = load8(acc + c);
    const float* r = rows + c;
    for (int j = 0; j < n; ++j, r += row_stride) s0 += splat8(w[j * w_stride]) * load8(r);
    store8(acc + c, s0);
  }
}

// docs/numerics.md "Split merge": fold one split (m_s, l_s, acc_s) into the
// row state (M, L, ACC).
inline void merge_split(float& M, float& L, float* ACC, float m_s, float l_s, const float* acc_s,
                        int d) {
  const float M_new = M > m_s ? M : m_s;
  const float Ms = M_new == -kInf ? 0.0f : M_new;
  const float a = exp2_f32(M - Ms);
  const float b = exp2_f32(m_s - Ms);
  L = L * a + l_s * b;
  const f32x8 av = splat8(a), bv = splat8(b);
  for (int c = 0; c < d; c += 8) store8(ACC + c, load8(ACC + c) * av + load8(acc_s + c) * bv);
  M = M_new;
}

// docs/numerics.md "Output": out[c] = ACC[c] * (1/L) (unrounded here) and the
// natural-log LSE. A row with no visible key (L = 0): out 0, lse +inf.
inline float finalize_row(float M, float L, const float* ACC, float* out, int d) {
  if (L == 0.0f) {
    for (int c = 0; c < d; ++c) out[c] = 0.0f;
    return kInf;
  }
  const float inv = 1.0f / L;
  for (int c = 0; c < d; ++c) out[c] = ACC[c] * inv;
  return (M + log2_f32(L)) * kLn2;
}

}  // namespace samebits::cpu

#pragma GCC diagnostic pop
