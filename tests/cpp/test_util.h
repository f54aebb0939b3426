// Shared harness of the C++ tests: a CHECK macro, a seeded RNG, sequences of
// dtype-representable inputs, runners that lay sequences out as dense,
// packed (varlen) or paged tensors and call the C ABI, and an f64 reference.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "cpu/numerics.h"
#include "samebits/samebits.h"

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

#define CHECK_OK(call)                                                                      \
  do {                                                                                      \
    sb_status s_ = (call);                                                                  \
    if (s_ != SB_OK) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s -> status %d: %s\n", __FILE__, __LINE__, #call, int(s_), \
                   sb_last_error());                                                        \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

namespace sbtest {

using samebits::cpu::round_to;

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double uniform() { return double(next() >> 11) * 0x1p-53; }
  int range(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }  // [lo, hi]
  float normal() {
    const double u = std::max(uniform(), 1e-300), v = uniform();
    return float(std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v));
  }
};

struct Config {
  sb_dtype dt = SB_BF16;
  int H = 2, Hk = 2, d = 64;
  float scale = 0.125f, softcap = 0.0f;
  int wl = -1, wr = -1;
};

// One sequence's inputs, (rows, heads, d) row-major, values representable in
// the dtype; and its results, widened to f32 (bitwise comparable).
struct Seq {
  int Lq = 0, Lk = 0;
  std::vector<float> q, k, v, dout;
};
struct Result {
  std::vector<float> out, lse, dq, dk, dv;  // lse: (H, Lq)
};

inline Seq make_seq(const Config& c, int Lq, int Lk, Rng& rng, float amp = 1.0f) {
  Seq s;
  s.Lq = Lq;
  s.Lk = Lk;
  auto fill = [&](std::vector<float>& x, size_t n) {
    x.resize(n);
    for (auto& e : x) e = round_to(c.dt, amp * rng.normal());
  };
  fill(s.q, size_t(Lq) * c.H * c.d);
  fill(s.k, size_t(Lk) * c.Hk * c.d);
  fill(s.v, size_t(Lk) * c.Hk * c.d);
  fill(s.dout, size_t(Lq) * c.H * c.d);
  return s;
}

inline size_t esize(sb_dtype dt) { return dt == SB_F32 ? 4 : 2; }

// A host buffer of dtype elements.
struct Buf {
  sb_dtype dt;
  std::vector<uint8_t> bytes;
  Buf(sb_dtype t, size_t n) : dt(t), bytes(n * esize(t) + 1, 0xA5) {}  // garbage-filled
  void* data() { return bytes.data(); }
  void set(size_t i, float x) {
    if (dt == SB_F32) {
      std::memcpy(&bytes[i * 4], &x, 4);
    } else {
      const uint16_t h = dt == SB_BF16 ? samebits::cpu::f32_to_bf16(x) : samebits::cpu::f32_to_f16(x);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  float get(size_t i) const {
    if (dt == SB_F32) {
      float x;
      std::memcpy(&x, &bytes[i * 4], 4);
      return x;
    }
    uint16_t h;
    std::memcpy(&h, &bytes[i * 2], 2);
    return dt == SB_BF16 ? samebits::cpu::bf16_to_f32(h) : samebits::cpu::f16_to_f32(h);
  }
};

inline sb_view view(void* data, int64_t rows, int heads, int d) {
  return sb_view{data, rows * heads * d, int64_t(heads) * d, d};
}

inline sb_attention_params base_params(const Config& c) {
  sb_attention_params p;
  std::memset(&p, 0, sizeof(p));
  p.dtype = c.dt;
  p.device = SB_CPU;
  p.num_heads = c.H;
  p.num_heads_k = c.Hk;
  p.head_dim = c.d;
  p.softmax_scale = c.scale;
  p.softcap = c.softcap;
  p.window_left = c.wl;
  p.window_right = c.wr;
  return p;
}

// Packs `seqs` in the given order into varlen tensors, runs the forward (and
// the backward when asked) and returns each sequence's results (indexed like
// seqs). With dense = true all sequences must share Lq and Lk and the call
// uses the dense batch layout instead.
inline std::vector<Result> run(const Config& c, const std::vector<Seq>& seqs,
                               const std::vector<int>& order, bool backward, bool dense = false) {
  const int B = int(order.size()), H = c.H, Hk = c.Hk, d = c.d;
  std::vector<int32_t> cu_q(B + 1, 0), cu_k(B + 1, 0);
  for (int b = 0; b < B; ++b) {
    cu_q[b + 1] = cu_q[b] + seqs[order[b]].Lq;
    cu_k[b + 1] = cu_k[b] + seqs[order[b]].Lk;
  }
  const size_t TQ = cu_q[B], TK = cu_k[B];
  Buf q(c.dt, TQ * H * d), k(c.dt, TK * Hk * d), v(c.dt, TK * Hk * d), out(c.dt, TQ * H * d),
      dout(c.dt, TQ * H * d), dq(c.dt, TQ * H * d), dk(c.dt, TK * Hk * d), dv(c.dt, TK * Hk * d);
  std::vector<float> lse(TQ * H + 1, -7.0f);
  for (int b = 0; b < B; ++b) {
    const Seq& s = seqs[order[b]];
    for (size_t i = 0; i < s.q.size(); ++i) q.set(size_t(cu_q[b]) * H * d + i, s.q[i]);
    for (size_t i = 0; i < s.dout.size(); ++i) dout.set(size_t(cu_q[b]) * H * d + i, s.dout[i]);
    for (size_t i = 0; i < s.k.size(); ++i) k.set(size_t(cu_k[b]) * Hk * d + i, s.k[i]);
    for (size_t i = 0; i < s.v.size(); ++i) v.set(size_t(cu_k[b]) * Hk * d + i, s.v[i]);
  }
  sb_attention_params p = base_params(c);
  p.batch = B;
  if (dense) {
    const int Lq = seqs[order[0]].Lq, Lk = seqs[order[0]].Lk;
    p.seqlen_q = Lq;
    p.seqlen_k = Lk;
    p.q = view(q.data(), Lq, H, d);
    p.out = view(out.data(), Lq, H, d);
    p.dout = view(dout.data(), Lq, H, d);
    p.dq = view(dq.data(), Lq, H, d);
    p.k = view(k.data(), Lk, Hk, d);
    p.v = view(v.data(), Lk, Hk, d);
    p.dk = view(dk.data(), Lk, Hk, d);
    p.dv = view(dv.data(), Lk, Hk, d);
    p.lse = sb_view{lse.data(), int64_t(H) * Lq, 1, Lq};  // (batch, heads, rows)
  } else {
    p.cu_seqlens_q = cu_q.data();
    p.cu_seqlens_k = cu_k.data();
    p.q = view(q.data(), 0, H, d);
    p.out = view(out.data(), 0, H, d);
    p.dout = view(dout.data(), 0, H, d);
    p.dq = view(dq.data(), 0, H, d);
    p.k = view(k.data(), 0, Hk, d);
    p.v = view(v.data(), 0, Hk, d);
    p.dk = view(dk.data(), 0, Hk, d);
    p.dv = view(dv.data(), 0, Hk, d);
    p.lse = sb_view{lse.data(), 0, H, 1};  // packed (tokens, heads)
  }
  CHECK_OK(sb_attention_forward(&p));
  if (backward) CHECK_OK(sb_attention_backward(&p));
  std::vector<Result> res(seqs.size());
  for (int b = 0; b < B; ++b) {
    const Seq& s = seqs[order[b]];
    Result& r = res[order[b]];
    const size_t q0 = size_t(cu_q[b]) * H * d, k0 = size_t(cu_k[b]) * Hk * d;
    for (size_t i = 0; i < s.q.size(); ++i) r.out.push_back(out.get(q0 + i));
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < s.Lq; ++i)
        r.lse.push_back(dense ? lse[size_t(b) * H * s.Lq + size_t(h) * s.Lq + i]
                              : lse[(size_t(cu_q[b]) + i) * H + h]);
    if (backward) {
      for (size_t i = 0; i < s.q.size(); ++i) r.dq.push_back(dq.get(q0 + i));
      for (size_t i = 0; i < s.k.size(); ++i) {
        r.dk.push_back(dk.get(k0 + i));
        r.dv.push_back(dv.get(k0 + i));
      }
    }
  }
  return res;
}

inline std::vector<int> iota(int n) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}
inline bool same_bits(const Result& a, const Result& b) {
  return same_bits(a.out, b.out) && same_bits(a.lse, b.lse) && same_bits(a.dq, b.dq) &&
         same_bits(a.dk, b.dk) && same_bits(a.dv, b.dv);
}

inline bool visible(int i, int j, int Lq, int Lk, int wl, int wr) {
  const long pos = long(i) + Lk - Lq;
  return j >= 0 && j < Lk && (wl < 0 || j >= pos - wl) && (wr < 0 || j <= pos + wr);
}

// f64 reference: softmax attention and its gradient, straight from the
// definitions (no blocks, no rounding of P).
struct Ref {
  std::vector<double> out, lse, dq, dk, dv;
};
inline Ref reference(const Config& c, const Seq& s, bool backward) {
  const int H = c.H, Hk = c.Hk, d = c.d, G = H / Hk, Lq = s.Lq, Lk = s.Lk;
  Ref r;
  r.out.assign(size_t(Lq) * H * d, 0.0);
  r.lse.assign(size_t(H) * Lq, 0.0);
  r.dq.assign(size_t(Lq) * H * d, 0.0);
  r.dk.assign(size_t(Lk) * Hk * d, 0.0);
  r.dv.assign(size_t(Lk) * Hk * d, 0.0);
  std::vector<double> sc(Lk), P(Lk), dP(Lk), hh(Lk);
  for (int h = 0; h < H; ++h) {
    const int g = h / G;
    for (int i = 0; i < Lq; ++i) {
      const float* q = &s.q[(size_t(i) * H + h) * d];
      double mx = -INFINITY;
      for (int j = 0; j < Lk; ++j) {
        if (!visible(i, j, Lq, Lk, c.wl, c.wr)) { sc[j] = -INFINITY; continue; }
        const float* k = &s.k[(size_t(j) * Hk + g) * d];
        double dotv = 0;
        for (int e = 0; e < d; ++e) dotv += double(q[e]) * k[e];
        if (c.softcap > 0) {
          hh[j] = std::tanh(dotv * c.scale / c.softcap);
          sc[j] = c.softcap * hh[j];
        } else {
          sc[j] = dotv * c.scale;
        }
        mx = std::max(mx, sc[j]);
      }
      if (mx == -INFINITY) {
        r.lse[size_t(h) * Lq + i] = INFINITY;
        continue;
      }
      double sum = 0;
      for (int j = 0; j < Lk; ++j) sum += (P[j] = sc[j] == -INFINITY ? 0 : std::exp(sc[j] - mx));
      for (int j = 0; j < Lk; ++j) P[j] /= sum;
      r.lse[size_t(h) * Lq + i] = mx + std::log(sum);
      double* o = &r.out[(size_t(i) * H + h) * d];
      for (int j = 0; j < Lk; ++j)
        if (P[j] != 0)
          for (int e = 0; e < d; ++e) o[e] += P[j] * s.v[(size_t(j) * Hk + g) * d + e];
      if (!backward) continue;
      const float* dout = &s.dout[(size_t(i) * H + h) * d];
      double D = 0;
      for (int e = 0; e < d; ++e) D += double(dout[e]) * o[e];
      for (int j = 0; j < Lk; ++j) {
        if (sc[j] == -INFINITY) continue;
        double dp = 0;
        for (int e = 0; e < d; ++e) dp += double(dout[e]) * s.v[(size_t(j) * Hk + g) * d + e];
        double ds = P[j] * (dp - D);
        if (c.softcap > 0) ds *= 1 - hh[j] * hh[j];
        for (int e = 0; e < d; ++e) {
          r.dq[(size_t(i) * H + h) * d + e] += c.scale * ds * s.k[(size_t(j) * Hk + g) * d + e];
          r.dk[(size_t(j) * Hk + g) * d + e] += c.scale * ds * q[e];
          r.dv[(size_t(j) * Hk + g) * d + e] += P[j] * dout[e];
        }
      }
    }
  }
  return r;
}

// Largest |a - b| / (atol + rtol * |b|) over the elements; <= 1 passes.
inline double worst(const std::vector<float>& a, const std::vector<double>& b, double atol, double rtol) {
  CHECK(a.size() == b.size());
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    const double e = std::fabs(double(a[i]) - b[i]) / (atol + rtol * std::fabs(b[i]));
    if (!(e <= w)) w = e;
  }
  return w;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace sbtest
