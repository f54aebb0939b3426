// Negative control: shows that the bitwise checks of test_invariance can
// fail. The same bitwise comparison, applied to paths that break the
// contract, must find differing bits:
//  1. another split size (512 instead of the table's 1024) or KV block (64
//     instead of 128) changes the bits of long rows;
//  2. a split size chosen from batch statistics (half the longest sequence,
//     as a split *count* of 2 would) makes a sequence's output depend on its
//     neighbours: alone vs in a batch differs;
//  3. a dot product in plain ascending order differs from the documented
//     8-lane order.
// Linked against a static copy of the backend to reach its internals.
#include "cpu/attention_cpu.h"
#include "samebits/config.h"
#include "test_util.h"

using namespace sbtest;

struct Case {
  Config c;
  std::vector<Seq> seqs;
  std::vector<int32_t> cu_q, cu_k;
  Buf q, k, v, out;
  std::vector<float> lse;
  sb_attention_params p;
  Case(const Config& cfg, std::vector<Seq> s)
      : c(cfg), seqs(std::move(s)), q(cfg.dt, 0), k(cfg.dt, 0), v(cfg.dt, 0), out(cfg.dt, 0) {
    cu_q = {0};
    cu_k = {0};
    for (const Seq& x : seqs) {
      cu_q.push_back(cu_q.back() + x.Lq);
      cu_k.push_back(cu_k.back() + x.Lk);
    }
    q = Buf(c.dt, size_t(cu_q.back()) * c.H * c.d);
    out = Buf(c.dt, size_t(cu_q.back()) * c.H * c.d);
    k = Buf(c.dt, size_t(cu_k.back()) * c.Hk * c.d);
    v = Buf(c.dt, size_t(cu_k.back()) * c.Hk * c.d);
    lse.assign(size_t(cu_q.back()) * c.H, 0.0f);
    for (size_t b = 0; b < seqs.size(); ++b) {
      for (size_t i = 0; i < seqs[b].q.size(); ++i) q.set(size_t(cu_q[b]) * c.H * c.d + i, seqs[b].q[i]);
      for (size_t i = 0; i < seqs[b].k.size(); ++i) {
        k.set(size_t(cu_k[b]) * c.Hk * c.d + i, seqs[b].k[i]);
        v.set(size_t(cu_k[b]) * c.Hk * c.d + i, seqs[b].v[i]);
      }
    }
    p = base_params(c);
    p.batch = int(seqs.size());
    p.cu_seqlens_q = cu_q.data();
    p.cu_seqlens_k = cu_k.data();
    p.q = view(q.data(), 0, c.H, c.d);
    p.k = view(k.data(), 0, c.Hk, c.d);
    p.v = view(v.data(), 0, c.Hk, c.d);
    p.out = view(out.data(), 0, c.H, c.d);
    p.lse = sb_view{lse.data(), 0, c.H, 1};
  }
  // Output rows and LSE of sequence 0 (widened, bitwise comparable).
  std::vector<float> first_seq() const {
    std::vector<float> r;
    for (size_t i = 0; i < seqs[0].q.size(); ++i) r.push_back(out.get(i));
    r.insert(r.end(), lse.begin(), lse.begin() + size_t(seqs[0].Lq) * c.H);
    return r;
  }
};

static std::vector<float> forward(Case& x, int block, int split) {
  CHECK_OK(samebits::cpu::attention_forward_with_structure(x.p, block, split));
  return x.first_seq();
}

int main() {
  Rng rng(99);
  Config c;
  c.H = c.Hk = 2;
  c.d = 64;
  c.wr = 0;
  const int Bn = samebits::kv_block_size(samebits::kArchCpu, c.d, c.dt);
  const int S = samebits::split_size(samebits::kArchCpu, c.d, c.dt);
  CHECK(Bn == 128 && S == 1024);

  // 1. The reduction structure shapes the bits.
  Case one(c, {make_seq(c, 2100, 2100, rng)});
  const std::vector<float> canonical = forward(one, Bn, S);
  CHECK_OK(sb_attention_forward(&one.p));  // the public entry point uses the table
  CHECK(same_bits(one.first_seq(), canonical));
  CHECK(!same_bits(forward(one, Bn, S / 2), canonical));
  CHECK(!same_bits(forward(one, Bn / 2, S), canonical));
  CHECK(same_bits(forward(one, Bn, S), canonical));  // and the check passes when it should

  // 2. A split size derived from the batch (longest sequence / 2) breaks
  //    batch invariance, and the bitwise check catches it.
  auto batch_split = [&](const Case& x) {
    int longest = 0;
    for (const Seq& s : x.seqs) longest = std::max(longest, s.Lk);
    return std::max(Bn, ((longest / 2 + Bn - 1) / Bn) * Bn);
  };
  Case alone(c, {make_seq(c, 1500, 1500, rng)});
  Case batch(c, {alone.seqs[0], make_seq(c, 40, 4000, rng)});
  const std::vector<float> a = forward(alone, Bn, batch_split(alone));
  const std::vector<float> b = forward(batch, Bn, batch_split(batch));
  CHECK(!same_bits(a, b));
  CHECK(same_bits(forward(alone, Bn, S), forward(batch, Bn, S)));  // the real contract holds

  // 3. Reduction order of the dot product.
  int differ = 0;
  for (int t = 0; t < 1000; ++t) {
    float x[128], y[128];
    for (int e = 0; e < 128; ++e) {
      x[e] = rng.normal();
      y[e] = rng.normal();
    }
    float seq = 0.0f;
    for (int e = 0; e < 128; ++e) seq += x[e] * y[e];
    const float lanes = samebits::cpu::dot(x, y, 128);
    differ += std::memcmp(&seq, &lanes, 4) != 0;
  }
  CHECK(differ > 100);
  std::printf("test_negative_control: the bitwise checks fail where they must (%d/1000 dots differ)\n", differ);
  return 0;
}
