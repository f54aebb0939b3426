// Times the CPU forward and backward: batch 1, 2 heads, head dim 128, bf16,
// causal, L keys (default 4096). Method: one warm-up call, then the best of
// `reps` timed calls (wall clock, steady_clock), all threads of the pool.
// Usage: bench_cpu_attention [L] [threads] [reps]
#include "test_util.h"

using namespace sbtest;

int main(int argc, char** argv) {
  const int L = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 2;
  sb_cpu_set_num_threads(threads);
  Config c;
  c.dt = SB_BF16;
  c.H = c.Hk = 2;
  c.d = 128;
  c.scale = 1.0f / std::sqrt(128.0f);
  c.wr = 0;
  Rng rng(7);
  Seq s = make_seq(c, L, L, rng);
  const size_t n = size_t(L) * c.H * c.d;
  Buf q(c.dt, n), k(c.dt, n), v(c.dt, n), out(c.dt, n), dout(c.dt, n), dq(c.dt, n), dk(c.dt, n), dv(c.dt, n);
  for (size_t i = 0; i < n; ++i) {
    q.set(i, s.q[i]);
    k.set(i, s.k[i]);
    v.set(i, s.v[i]);
    dout.set(i, s.dout[i]);
  }
  std::vector<float> lse(size_t(c.H) * L);
  sb_attention_params p = base_params(c);
  p.batch = 1;
  p.seqlen_q = p.seqlen_k = L;
  p.q = view(q.data(), L, c.H, c.d);
  p.k = view(k.data(), L, c.Hk, c.d);
  p.v = view(v.data(), L, c.Hk, c.d);
  p.out = view(out.data(), L, c.H, c.d);
  p.dout = view(dout.data(), L, c.H, c.d);
  p.dq = view(dq.data(), L, c.H, c.d);
  p.dk = view(dk.data(), L, c.Hk, c.d);
  p.dv = view(dv.data(), L, c.Hk, c.d);
  p.lse = sb_view{lse.data(), int64_t(c.H) * L, 1, L};
  double fwd = 1e30, bwd = 1e30;
  for (int r = 0; r <= reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    CHECK_OK(sb_attention_forward(&p));
    const double tf = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    CHECK_OK(sb_attention_backward(&p));
    const double tb = seconds_since(t0);
    if (r > 0) {
      fwd = std::min(fwd, tf);
      bwd = std::min(bwd, tb);
    }
  }
  std::printf("cpu attention bf16 causal B=1 H=2 d=128 L=%d threads=%d: forward %.3f s, backward %.3f s\n",
              L, threads, fwd, bwd);
  return 0;
}
