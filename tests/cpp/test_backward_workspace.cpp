// sb_attention_backward_workspace_size / sb_attention_backward_ws on the CPU
// backend: the size is 0, the ws entry gives sb_attention_backward's bits
// (dense and varlen, with and without a workspace), and every invalid
// argument is refused with SB_INVALID_ARGUMENT, a message naming it, and the
// outputs untouched.
#include <string>

#include "test_util.h"

using namespace sbtest;

namespace {

// One backward problem: inputs filled from seqs, outputs dq/dk/dv poisoned
// with `poison`; params ready for the backward (the forward already ran).
struct Problem {
  Config c;
  std::vector<int32_t> cu_q, cu_k;
  Buf q, k, v, out, dout, dq, dk, dv;
  std::vector<float> lse;
  sb_attention_params p;
  int64_t total_q = 0;

  Problem(const Config& cfg, const std::vector<Seq>& seqs, bool dense)
      : c(cfg),
        q(cfg.dt, rows(seqs, true) * cfg.H * cfg.d),
        k(cfg.dt, rows(seqs, false) * cfg.Hk * cfg.d),
        v(cfg.dt, rows(seqs, false) * cfg.Hk * cfg.d),
        out(cfg.dt, rows(seqs, true) * cfg.H * cfg.d),
        dout(cfg.dt, rows(seqs, true) * cfg.H * cfg.d),
        dq(cfg.dt, rows(seqs, true) * cfg.H * cfg.d),
        dk(cfg.dt, rows(seqs, false) * cfg.Hk * cfg.d),
        dv(cfg.dt, rows(seqs, false) * cfg.Hk * cfg.d),
        lse(rows(seqs, true) * cfg.H + 1, -7.0f) {
    const int B = int(seqs.size()), H = c.H, Hk = c.Hk, d = c.d;
    cu_q.assign(B + 1, 0);
    cu_k.assign(B + 1, 0);
    for (int b = 0; b < B; ++b) {
      cu_q[b + 1] = cu_q[b] + seqs[b].Lq;
      cu_k[b + 1] = cu_k[b] + seqs[b].Lk;
      const Seq& s = seqs[b];
      for (size_t i = 0; i < s.q.size(); ++i) q.set(size_t(cu_q[b]) * H * d + i, s.q[i]);
      for (size_t i = 0; i < s.dout.size(); ++i) dout.set(size_t(cu_q[b]) * H * d + i, s.dout[i]);
      for (size_t i = 0; i < s.k.size(); ++i) k.set(size_t(cu_k[b]) * Hk * d + i, s.k[i]);
      for (size_t i = 0; i < s.v.size(); ++i) v.set(size_t(cu_k[b]) * Hk * d + i, s.v[i]);
    }
    total_q = cu_q[B];
    p = base_params(c);
    p.batch = B;
    const int64_t Lq = dense ? seqs[0].Lq : 0, Lk = dense ? seqs[0].Lk : 0;
    if (dense) {
      p.seqlen_q = int(Lq);
      p.seqlen_k = int(Lk);
      p.lse = sb_view{lse.data(), int64_t(H) * Lq, 1, Lq};
    } else {
      p.cu_seqlens_q = cu_q.data();
      p.cu_seqlens_k = cu_k.data();
      p.lse = sb_view{lse.data(), 0, H, 1};
    }
    p.q = view(q.data(), Lq, H, d);
    p.out = view(out.data(), Lq, H, d);
    p.dout = view(dout.data(), Lq, H, d);
    p.dq = view(dq.data(), Lq, H, d);
    p.k = view(k.data(), Lk, Hk, d);
    p.v = view(v.data(), Lk, Hk, d);
    p.dk = view(dk.data(), Lk, Hk, d);
    p.dv = view(dv.data(), Lk, Hk, d);
    CHECK_OK(sb_attention_forward(&p));
  }

  static size_t rows(const std::vector<Seq>& seqs, bool query) {
    size_t n = 0;
    for (const Seq& s : seqs) n += query ? s.Lq : s.Lk;
    return n;
  }

  void poison(uint8_t byte) {
    for (Buf* b : {&dq, &dk, &dv}) std::memset(b->bytes.data(), byte, b->bytes.size());
  }
  // dq, dk, dv as raw bytes (bitwise comparable; Buf's spare last byte left out).
  std::vector<uint8_t> grads() const {
    std::vector<uint8_t> g;
    for (const Buf* b : {&dq, &dk, &dv}) g.insert(g.end(), b->bytes.begin(), b->bytes.end() - 1);
    return g;
  }
};

void expect_error(sb_status got, const char* needle) {
  CHECK(got == SB_INVALID_ARGUMENT);
  const std::string msg = sb_last_error();
  if (msg.find(needle) == std::string::npos) {
    std::fprintf(stderr, "message '%s' does not mention '%s'\n", msg.c_str(), needle);
    std::exit(1);
  }
}

// A 16-byte aligned host buffer standing in for a workspace.
struct alignas(16) Scratch {
  uint8_t bytes[272];
};

void check_same_bits_as_backward(Problem& pr, const char* what) {
  Scratch scratch;
  std::memset(scratch.bytes, 0x3C, sizeof(scratch.bytes));

  pr.poison(0xA5);
  CHECK_OK(sb_attention_backward(&pr.p));
  const std::vector<uint8_t> ref = pr.grads();

  size_t bytes = 12345;
  CHECK_OK(sb_attention_backward_workspace_size(&pr.p, pr.total_q, &bytes));
  CHECK(bytes == 0);  // the CPU backend needs no workspace

  // Poisoned with another byte, so a call that writes nothing cannot match.
  pr.poison(0x5A);
  CHECK_OK(sb_attention_backward_ws(&pr.p, pr.total_q, nullptr, 0));
  CHECK(pr.grads() == ref);

  pr.poison(0x5A);
  CHECK_OK(sb_attention_backward_ws(&pr.p, pr.total_q, scratch.bytes, sizeof(scratch.bytes)));
  CHECK(pr.grads() == ref);
  std::printf("  %s: same bits as sb_attention_backward\n", what);
}

}  // namespace

int main() {
  CHECK(sb_abi_version() == 2 && SB_ABI_VERSION == 2);

  Config c;
  c.H = 4;
  c.Hk = 2;
  c.d = 64;
  c.wr = 0;  // causal
  Rng rng(7);

  // dense: two sequences of 37 queries over 53 keys
  {
    std::vector<Seq> seqs = {make_seq(c, 37, 53, rng), make_seq(c, 37, 53, rng)};
    Problem pr(c, seqs, true);
    check_same_bits_as_backward(pr, "dense");
    // total_q is ignored for dense batches: a negative one is accepted
    size_t bytes = 1;
    CHECK_OK(sb_attention_backward_workspace_size(&pr.p, -1, &bytes));
    CHECK(bytes == 0);
    const std::vector<uint8_t> ref = pr.grads();
    pr.poison(0x5A);
    CHECK_OK(sb_attention_backward_ws(&pr.p, -1, nullptr, 0));
    CHECK(pr.grads() == ref);
  }

  // varlen: three sequences of different lengths
  std::vector<Seq> seqs = {make_seq(c, 19, 40, rng), make_seq(c, 1, 9, rng), make_seq(c, 70, 70, rng)};
  Problem pr(c, seqs, false);
  check_same_bits_as_backward(pr, "varlen");
  // total_q above cu_seqlens_q[batch] is accepted (q may have rows past the
  // last sequence)
  {
    const std::vector<uint8_t> ref = pr.grads();
    pr.poison(0x5A);
    CHECK_OK(sb_attention_backward_ws(&pr.p, pr.total_q + 5, nullptr, 0));
    CHECK(pr.grads() == ref);
  }

  // Invalid arguments: SB_INVALID_ARGUMENT, a message naming the argument,
  // the outputs left as they were.
  Scratch scratch;
  pr.poison(0x77);
  const std::vector<uint8_t> untouched = pr.grads();
  size_t bytes = 99;
  expect_error(sb_attention_backward_workspace_size(&pr.p, pr.total_q, nullptr), "bytes");
  expect_error(sb_attention_backward_workspace_size(nullptr, pr.total_q, &bytes), "params");
  CHECK(bytes == 0);  // cleared before validation
  bytes = 99;
  expect_error(sb_attention_backward_workspace_size(&pr.p, -1, &bytes), "total_q");
  CHECK(bytes == 0);
  expect_error(sb_attention_backward_ws(&pr.p, -1, nullptr, 0), "total_q");
  expect_error(sb_attention_backward_ws(&pr.p, pr.total_q - 1, nullptr, 0), "total_q");
  expect_error(sb_attention_backward_ws(&pr.p, pr.total_q, nullptr, 64), "workspace");
  expect_error(sb_attention_backward_ws(&pr.p, pr.total_q, scratch.bytes + 4, 64), "workspace");
  expect_error(sb_attention_backward_ws(nullptr, pr.total_q, nullptr, 0), "params");
  {
    sb_attention_params bad = pr.p;
    bad.dq.data = nullptr;  // the checks of sb_attention_backward apply
    expect_error(sb_attention_backward_ws(&bad, pr.total_q, nullptr, 0), "dq");
    bad = pr.p;
    bad.head_dim = 12;
    expect_error(sb_attention_backward_workspace_size(&bad, pr.total_q, &bytes), "head_dim");
    expect_error(sb_attention_backward_ws(&bad, pr.total_q, nullptr, 0), "head_dim");
    bad = pr.p;
    const int32_t used[3] = {1, 1, 1}, table[3] = {0, 0, 0};
    bad.seqused_k = used;
    bad.block_table = table;
    bad.block_table_batch_stride = 1;
    bad.page_size = 16;
    expect_error(sb_attention_backward_workspace_size(&bad, pr.total_q, &bytes), "paged");
  }
  CHECK(pr.grads() == untouched);
  // A workspace too small for the size is refused on CUDA only: the CPU
  // backend needs none, so any size is enough here.
  CHECK_OK(sb_attention_backward_ws(&pr.p, pr.total_q, scratch.bytes, 16));
  CHECK(pr.grads() != untouched);

  std::printf("test_backward_workspace: ok\n");
  return 0;
}
