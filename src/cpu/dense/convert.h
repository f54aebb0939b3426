// Scalar dtype conversions and the canonical fp32 row reductions of the CPU
// dense backend. Everything here is plain IEEE fp32 arithmetic with no FMA
// contraction (the target is built with -ffp-contract=off), so a result is a
// pure function of its inputs.
#pragma once

#include <cstdint>
#include <cstring>

#include "samebits/samebits.h"

namespace samebits::cpu::dense {

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

// Round to nearest even; NaN stays NaN (quiet).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in fp32
    float v = float(man) * bits_to_f32(0x33800000u);  // 2^-24
    return sign ? -v : v;
  }
  return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

// Round to nearest even, with overflow to inf and gradual underflow.
inline uint16_t f32_to_f16(float f) {
  uint32_t u = f32_to_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (a < 0x38800000u) {                                  // below 2^-14: subnormal or zero
    // value / 2^-24, rounded to nearest even, is the subnormal mantissa
    float v = bits_to_f32(a) * bits_to_f32(0x4b800000u);  // * 2^24 (exact)
    // v < 1024; round to nearest even through the fp32 magic-number trick
    float r = (v + 8388608.0f) - 8388608.0f;
    return uint16_t(sign | uint16_t(r));
  }
  uint32_t exp = (a >> 23) - 112u;
  uint32_t man = a & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1;  // may carry into exp: fine
  return uint16_t(sign | h);
}

inline float load(const void* p, int64_t i, sb_dtype t) {
  switch (t) {
    case SB_F32: return static_cast<const float*>(p)[i];
    case SB_F16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

inline void store(void* p, int64_t i, sb_dtype t, float v) {
  switch (t) {
    case SB_F32: static_cast<float*>(p)[i] = v; break;
    case SB_F16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); break;
    default: static_cast<uint16_t*>(p)[i] = f32_to_bf16(v); break;
  }
}

inline size_t dtype_size(sb_dtype t) { return t == SB_F32 ? 4 : 2; }

// Converts n elements starting at p into fp32.
inline void load_row(const void* p, int64_t n, sb_dtype t, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = load(p, i, t);
}

// The canonical CPU row reduction (docs/numerics_dense.md, "lane-16 sum"):
// lane j (0..15) adds v[j], v[j+16], v[j+32], ... left to right starting from
// +0; then the lanes are combined by a fixed halving tree:
// l[j] += l[j+8] (j<8), l[j] += l[j+4] (j<4), l[j] += l[j+2], l[0] += l[1].
constexpr int kLanes = 16;

inline float tree16(float* l) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) l[j] = l[j] + l[j + w];
  return l[0];
}

template <class F>
inline float lane16_sum(int64_t n, F&& term) {
  float l[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) l[j] = l[j] + term(i + j);
  for (int j = 0; i + j < n; ++j) l[j] = l[j] + term(i + j);
  return tree16(l);
}

inline float sum16(const float* v, int64_t n) {
  return lane16_sum(n, [v](int64_t i) { return v[i]; });
}
inline float dot16(const float* a, const float* b, int64_t n) {
  return lane16_sum(n, [a, b](int64_t i) { return a[i] * b[i]; });
}

}  // namespace samebits::cpu::dense
