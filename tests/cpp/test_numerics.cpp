// The arithmetic helpers of src/cpu/numerics.h: conversions (exhaustive over
// every 16-bit pattern), round-to-nearest-even against an f64 computation,
// exp2/log2/tanh accuracy against libm in f64 (bounds in ulps, stated per
// function), scalar == vector exp2 bits, and the documented dot order.
#include "test_util.h"

#pragma GCC diagnostic ignored "-Wpsabi"  // f32x8 stays inside this file

using namespace samebits::cpu;

static double ulp_err(float got, double want) {
  if (std::isinf(want) || want == 0) return got == float(want) ? 0 : 1e9;
  const double u = std::ldexp(1.0, std::ilogb(want) - 23);
  return std::fabs(double(got) - want) / std::max(u, 0x1p-149);
}

// Reference narrowing: the nearest representable value by exhaustive search
// over the neighbours, ties to the even encoding.
static uint16_t ref_narrow(float x, bool bf16) {
  auto widen = [&](uint16_t h) { return bf16 ? bf16_to_f32(h) : f16_to_f32(h); };
  uint16_t best = 0;
  double bd = INFINITY;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float w = widen(uint16_t(h));
    if (std::isnan(w) || std::signbit(w) != std::signbit(x)) continue;
    const double dd = std::fabs(double(w) - double(x));
    if (dd < bd || (dd == bd && (h & 1) == 0)) {
      bd = dd;
      best = uint16_t(h);
    }
  }
  return best;
}

int main() {
  // widen -> narrow is the identity on every non-NaN pattern; NaN stays NaN
  for (uint32_t h = 0; h < 65536; ++h) {
    const float b = bf16_to_f32(uint16_t(h)), f = f16_to_f32(uint16_t(h));
    if (std::isnan(b)) CHECK(std::isnan(bf16_to_f32(f32_to_bf16(b))));
    else CHECK(f32_to_bf16(b) == h);
    if (std::isnan(f)) CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
    else CHECK(f32_to_f16(f) == h);
  }
  CHECK(f16_to_f32(0x0001) == 0x1p-24f && f16_to_f32(0x7BFF) == 65504.0f && f16_to_f32(0x3C00) == 1.0f);
  // narrowing: random values (incl. f16 subnormal and overflow ranges) vs search
  sbtest::Rng rng(5);
  for (int t = 0; t < 300; ++t) {
    const float x = float(rng.normal() * std::ldexp(1.0, rng.range(-26, 17)));
    if (std::fabs(x) < 65520.0f) CHECK(f32_to_f16(x) == ref_narrow(x, false));
    CHECK(f32_to_bf16(x) == ref_narrow(x, true));
  }
  CHECK(f32_to_f16(65520.0f) == 0x7C00 && f32_to_f16(65519.0f) == 0x7BFF);
  CHECK(f32_to_bf16(INFINITY) == 0x7F80 && f32_to_bf16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(0x1p-25f) == 0 && f32_to_f16(0x1.8p-25f) == 1);  // tie to even, then above

  // exp2: <= 2 ulp (degree-7 series + Horner), exact at integers, 0 at -inf
  double worst = 0;
  for (int t = 0; t < 200000; ++t) {
    const float x = float(-150.0 + 278.0 * rng.uniform());
    const double want = std::exp2(double(x));
    if (want >= 0x1p128) continue;
    if (want >= 0x1p-126) worst = std::max(worst, ulp_err(exp2_f32(x), want));
    else CHECK(std::fabs(exp2_f32(x) - want) <= 0x1p-149);
  }
  CHECK(worst <= 2.0);
  CHECK(exp2_f32(-INFINITY) == 0.0f && exp2_f32(0.0f) == 1.0f && exp2_f32(-1.0f) == 0.5f);
  CHECK(exp2_f32(200.0f) == INFINITY && std::isnan(exp2_f32(NAN)));
  for (int e = -149; e < 128; ++e) CHECK(exp2_f32(float(e)) == std::ldexp(1.0f, e));
  // scalar and vector paths agree bitwise
  for (int t = 0; t < 1000; ++t) {
    float x[8];
    for (float& e : x) e = float(-40.0 * rng.uniform());
    const f32x8 v = exp2_x8(load8(x));
    for (int l = 0; l < 8; ++l) CHECK(f32_bits(v[l]) == f32_bits(exp2_f32(x[l])));
  }

  // log2 and tanh: f64 evaluation rounded once: <= 0.5 ulp + tiny
  for (int t = 0; t < 100000; ++t) {
    const float x = float(std::ldexp(1.0 + rng.uniform(), rng.range(-30, 60)));
    CHECK(ulp_err(log2_f32(x), std::log2(double(x))) <= 0.501 || std::fabs(std::log2(double(x))) < 1e-3);
    const float y = float(rng.normal() * 4.0);
    CHECK(ulp_err(tanh_f32(y), std::tanh(double(y))) <= 0.501);
  }
  CHECK(log2_f32(1.0f) == 0.0f && log2_f32(1024.0f) == 10.0f);
  CHECK(tanh_f32(0.0f) == 0.0f && std::signbit(tanh_f32(-0.0f)) && tanh_f32(20.0f) == 1.0f);

  // dot order: lanes by c % 8, combined ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7))
  for (int t = 0; t < 1000; ++t) {
    const int d = 8 * rng.range(1, 32);
    std::vector<float> a(d), b(d);
    for (int e = 0; e < d; ++e) {
      a[e] = rng.normal();
      b[e] = rng.normal();
    }
    float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int e = 0; e < d; ++e) l[e % 8] += a[e] * b[e];
    const float want = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    const float got = dot(a.data(), b.data(), d);
    CHECK(f32_bits(got) == f32_bits(want));
    float rows[8];
    std::vector<float> m(size_t(d) * 8);
    for (int r = 0; r < 8; ++r)
      for (int e = 0; e < d; ++e) m[size_t(r) * d + e] = r == 3 ? b[e] : a[e];
    dot_rows(a.data(), m.data(), d, 8, d, rows);
    CHECK(f32_bits(rows[3]) == f32_bits(want));
  }
  std::printf("test_numerics: ok (exp2 worst %.2f ulp)\n", worst);
  return 0;
}
