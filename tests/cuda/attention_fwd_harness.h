// Test harness for the CUDA attention forward through the C ABI: host-side
// problems, dtype conversion, an fp64 reference, device runs, hashing.
// No torch: the tests link libsamebits and the CUDA runtime only.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "samebits/samebits.h"

namespace sbtest {

#define CUDA_OK(x)                                                                  \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d CUDA error %s\n", __FILE__, __LINE__,            \
                   cudaGetErrorString(e_));                                         \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_f16(float f) {
  __half h = __float2half_rn(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float f16_to_f32(uint16_t u) {
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}
inline uint16_t to16(float f, sb_dtype dt) { return dt == SB_BF16 ? f32_to_bf16(f) : f32_to_f16(f); }
// Non-finite values of this dtype, in turn: NaN, +Inf, -Inf (the neighbours
// of the NaN-neighbour tests).
inline uint16_t poison(sb_dtype dt, size_t i) {
  static const uint16_t bf16[3] = {0x7fc0, 0x7f80, 0xff80}, fp16[3] = {0x7e00, 0x7c00, 0xfc00};
  return (dt == SB_BF16 ? bf16 : fp16)[i % 3];
}
inline float from16(uint16_t u, sb_dtype dt) { return dt == SB_BF16 ? bf16_to_f32(u) : f16_to_f32(u); }

inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// A packed (varlen) problem: q (total_q, H, D), k/v (total_k, Hk, D), out
// like q, lse (H, total_q). Sequence b owns q rows [cq[b], cq[b+1]).
struct Problem {
  int H = 4, Hk = 4, D = 128;
  sb_dtype dt = SB_BF16;
  std::vector<int> lq, lk;  // per sequence
  float scale = 0.f, softcap = 0.f;
  int wl = -1, wr = -1;
  bool dense = false;  // all lq equal and all lk equal: use the dense layout

  int batch() const { return static_cast<int>(lq.size()); }
  std::vector<int> cu(const std::vector<int>& l) const {
    std::vector<int> c(l.size() + 1, 0);
    for (size_t i = 0; i < l.size(); ++i) c[i + 1] = c[i] + l[i];
    return c;
  }
  int total_q() const { return cu(lq).back(); }
  int total_k() const { return cu(lk).back(); }
};

struct Tensors {
  std::vector<uint16_t> q, k, v;  // packed layouts above
};

struct Result {
  std::vector<uint16_t> out;  // (total_q, H, D)
  std::vector<float> lse;     // (H, total_q)
  sb_status status = SB_OK;
  std::string error;
};

inline Tensors random_tensors(const Problem& p, uint64_t seed, float q_scale = 1.f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  Tensors t;
  t.q.resize(static_cast<size_t>(p.total_q()) * p.H * p.D);
  t.k.resize(static_cast<size_t>(p.total_k()) * p.Hk * p.D);
  t.v.resize(t.k.size());
  for (auto& x : t.q) x = to16(nd(rng) * q_scale, p.dt);
  for (auto& x : t.k) x = to16(nd(rng), p.dt);
  for (auto& x : t.v) x = to16(nd(rng), p.dt);
  return t;
}

// Device run through sb_attention_forward. Output is poisoned with NaN
// first so an unwritten element cannot pass. seqused: per-sequence visible
// keys (seqused_k), or null.
inline Result run_gpu(const Problem& p, const Tensors& t, const std::vector<int>* seqused = nullptr) {
  Result r;
  const int tq = p.total_q(), tk = p.total_k(), B = p.batch();
  const size_t qn = t.q.size(), kn = t.k.size();
  void *dq, *dk, *dv, *dout;
  float* dlse;
  int *dcq = nullptr, *dck = nullptr, *dused = nullptr;
  if (seqused) {
    CUDA_OK(cudaMalloc(&dused, std::max<size_t>(seqused->size(), 1) * 4));
    CUDA_OK(cudaMemcpy(dused, seqused->data(), seqused->size() * 4, cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaMalloc(&dq, std::max<size_t>(qn, 1) * 2));
  CUDA_OK(cudaMalloc(&dk, std::max<size_t>(kn, 1) * 2));
  CUDA_OK(cudaMalloc(&dv, std::max<size_t>(kn, 1) * 2));
  CUDA_OK(cudaMalloc(&dout, std::max<size_t>(qn, 1) * 2));
  CUDA_OK(cudaMalloc(&dlse, std::max<size_t>(static_cast<size_t>(tq) * p.H, 1) * 4));
  CUDA_OK(cudaMemcpy(dq, t.q.data(), qn * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dk, t.k.data(), kn * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dv, t.v.data(), kn * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dout, 0xff, qn * 2));
  CUDA_OK(cudaMemset(dlse, 0xff, static_cast<size_t>(tq) * p.H * 4));

  sb_attention_params a{};
  a.dtype = p.dt;
  a.device = SB_CUDA;
  a.stream = nullptr;
  a.batch = B;
  a.num_heads = p.H;
  a.num_heads_k = p.Hk;
  a.head_dim = p.D;
  a.softmax_scale = p.scale > 0 ? p.scale : 1.f / std::sqrt(static_cast<float>(p.D));
  a.softcap = p.softcap;
  a.window_left = p.wl;
  a.window_right = p.wr;
  a.seqused_k = dused;
  if (p.dense) {
    const int Lq = p.lq[0], Lk = p.lk[0];
    a.seqlen_q = Lq;
    a.seqlen_k = Lk;
    a.q = {dq, (int64_t)Lq * p.H * p.D, (int64_t)p.H * p.D, p.D};
    a.k = {dk, (int64_t)Lk * p.Hk * p.D, (int64_t)p.Hk * p.D, p.D};
    a.v = {dv, (int64_t)Lk * p.Hk * p.D, (int64_t)p.Hk * p.D, p.D};
    a.out = {dout, (int64_t)Lq * p.H * p.D, (int64_t)p.H * p.D, p.D};
    a.lse = {dlse, (int64_t)p.H * Lq, 1, Lq};  // (B, H, Lq)
  } else {
    auto cq = p.cu(p.lq), ck = p.cu(p.lk);
    CUDA_OK(cudaMalloc(&dcq, cq.size() * 4));
    CUDA_OK(cudaMalloc(&dck, ck.size() * 4));
    CUDA_OK(cudaMemcpy(dcq, cq.data(), cq.size() * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dck, ck.data(), ck.size() * 4, cudaMemcpyHostToDevice));
    a.cu_seqlens_q = dcq;
    a.cu_seqlens_k = dck;
    a.q = {dq, 0, (int64_t)p.H * p.D, p.D};
    a.k = {dk, 0, (int64_t)p.Hk * p.D, p.D};
    a.v = {dv, 0, (int64_t)p.Hk * p.D, p.D};
    a.out = {dout, 0, (int64_t)p.H * p.D, p.D};
    a.lse = {dlse, 0, 1, tq};  // (H, total_q)
  }
  r.status = sb_attention_forward(&a);
  if (r.status != SB_OK) r.error = sb_last_error();
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  r.out.resize(qn);
  r.lse.resize(static_cast<size_t>(tq) * p.H);
  CUDA_OK(cudaMemcpy(r.out.data(), dout, qn * 2, cudaMemcpyDeviceToHost));
  if (p.dense) {
    // (B, H, Lq) -> (H, total_q)
    std::vector<float> tmp(r.lse.size());
    CUDA_OK(cudaMemcpy(tmp.data(), dlse, tmp.size() * 4, cudaMemcpyDeviceToHost));
    const int Lq = p.lq[0];
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < p.H; ++h)
        for (int i = 0; i < Lq; ++i) r.lse[(size_t)h * tq + b * Lq + i] = tmp[((size_t)b * p.H + h) * Lq + i];
  } else {
    CUDA_OK(cudaMemcpy(r.lse.data(), dlse, r.lse.size() * 4, cudaMemcpyDeviceToHost));
  }
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);
  cudaFree(dlse);
  if (dcq) cudaFree(dcq);
  if (dck) cudaFree(dck);
  if (dused) cudaFree(dused);
  return r;
}

// fp64 reference on the widened inputs: softmax(scale * q k^T) v per row,
// with softcap and the bottom-right aligned window. Rows with no visible key
// give out = 0, lse = +inf.
struct Reference {
  std::vector<double> out;  // (total_q, H, D)
  std::vector<double> lse;  // (H, total_q)
};

inline Reference reference(const Problem& p, const Tensors& t) {
  Reference ref;
  const int tq = p.total_q();
  ref.out.assign(static_cast<size_t>(tq) * p.H * p.D, 0.0);
  ref.lse.assign(static_cast<size_t>(tq) * p.H, 0.0);
  auto cq = p.cu(p.lq), ck = p.cu(p.lk);
  const double scale = p.scale > 0 ? p.scale : 1.0 / std::sqrt(static_cast<double>(p.D));
  std::vector<float> qf(t.q.size()), kf(t.k.size()), vf(t.v.size());
  for (size_t i = 0; i < qf.size(); ++i) qf[i] = from16(t.q[i], p.dt);
  for (size_t i = 0; i < kf.size(); ++i) kf[i] = from16(t.k[i], p.dt);
  for (size_t i = 0; i < vf.size(); ++i) vf[i] = from16(t.v[i], p.dt);
  // Work items: (b, h, row); threads over rows.
  struct Item { int b, h, i; };
  std::vector<Item> items;
  for (int b = 0; b < p.batch(); ++b)
    for (int h = 0; h < p.H; ++h)
      for (int i = 0; i < p.lq[b]; ++i) items.push_back({b, h, i});
  const int nthreads = std::max(1u, std::thread::hardware_concurrency());
  auto work = [&](int tid) {
    std::vector<double> s;
    for (size_t it = tid; it < items.size(); it += nthreads) {
      const auto [b, h, i] = items[it];
      const int Lq = p.lq[b], Lk = p.lk[b], hk = h / (p.H / p.Hk);
      const int pos = i + Lk - Lq;
      const float* qrow = &qf[((size_t)(cq[b] + i) * p.H + h) * p.D];
      s.assign(Lk, -INFINITY);
      double mx = -INFINITY;
      for (int j = 0; j < Lk; ++j) {
        if (p.wl >= 0 && j < pos - p.wl) continue;
        if (p.wr >= 0 && j > pos + p.wr) continue;
        const float* krow = &kf[((size_t)(ck[b] + j) * p.Hk + hk) * p.D];
        double d = 0;
        for (int c = 0; c < p.D; ++c) d += (double)qrow[c] * krow[c];
        double x = d * scale;
        if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
        s[j] = x;
        mx = std::max(mx, x);
      }
      double* o = &ref.out[((size_t)(cq[b] + i) * p.H + h) * p.D];
      if (mx == -INFINITY) {
        ref.lse[(size_t)h * tq + cq[b] + i] = INFINITY;
        continue;
      }
      double l = 0;
      for (int j = 0; j < Lk; ++j) {
        if (s[j] == -INFINITY) continue;
        const double e = std::exp(s[j] - mx);
        l += e;
        const float* vrow = &vf[((size_t)(ck[b] + j) * p.Hk + hk) * p.D];
        for (int c = 0; c < p.D; ++c) o[c] += e * vrow[c];
      }
      for (int c = 0; c < p.D; ++c) o[c] /= l;
      ref.lse[(size_t)h * tq + cq[b] + i] = mx + std::log(l);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < nthreads; ++i) pool.emplace_back(work, i);
  for (auto& th : pool) th.join();
  return ref;
}

struct ErrorStats {
  double max_abs = 0, rel_fro = 0, lse_max_abs = 0;
  long nan_count = 0;
};

inline ErrorStats compare(const Problem& p, const Result& r, const Reference& ref) {
  ErrorStats e;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.out.size(); ++i) {
    const double x = from16(r.out[i], p.dt);
    if (std::isnan(x)) {
      ++e.nan_count;
      continue;
    }
    const double d = std::fabs(x - ref.out[i]);
    e.max_abs = std::max(e.max_abs, d);
    num += d * d;
    den += ref.out[i] * ref.out[i];
  }
  e.rel_fro = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    const double x = r.lse[i];
    if (std::isnan(x)) {
      ++e.nan_count;
      continue;
    }
    if (std::isinf(ref.lse[i])) {
      if (!(std::isinf(x) && x > 0)) e.lse_max_abs = INFINITY;
      continue;
    }
    e.lse_max_abs = std::max(e.lse_max_abs, std::fabs(x - ref.lse[i]));
  }
  return e;
}

}  // namespace sbtest
