// Scalar dtype conversions and the canonical fp32 row reductions of the CPU
// dense backend. Everything here is plain IEEE fp32 arithmetic with no FMA
// contraction (the target is built with -ffp-contract=off), so a result is a
// pure function of its inputs.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu/numerics.h"
#include "samebits/samebits.h"

namespace samebits::cpu::dense {

// The dtype conversions are the attention backend's (cpu/numerics.h): one
// implementation of round-to-nearest-even for the whole CPU backend.
using samebits::cpu::bf16_to_f32;
using samebits::cpu::f16_to_f32;
using samebits::cpu::f32_to_bf16;
using samebits::cpu::f32_to_f16;

// exp and log through the backend's own exp2/log2 (cpu/numerics.h), not the
// platform's maths library, so that results do not move with libm.
inline float exp_f32(float x) { return samebits::cpu::exp2_f32(x * samebits::cpu::kLog2e); }
inline float log_f32(float x) { return samebits::cpu::log2_f32(x) * samebits::cpu::kLn2; }

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
