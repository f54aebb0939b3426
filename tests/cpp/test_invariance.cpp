// Bitwise invariance of the CPU backend (docs/numerics.md "What may vary"):
// batch composition, varlen packing and order, paged vs contiguous KV with
// scattered pages, decode == prefill, chunked prefill through the KV-cache
// append, and the thread count. Every comparison is bitwise (memcmp).
#include "test_util.h"

using namespace sbtest;

static int g_checks = 0;
#define CHECK_SAME(a, b, what)                                     \
  do {                                                             \
    if (!same_bits(a, b)) {                                        \
      std::fprintf(stderr, "%s:%d: bits differ: %s\n", __FILE__, __LINE__, what); \
      std::exit(1);                                                \
    }                                                              \
    ++g_checks;                                                    \
  } while (0)

// Queries rows [q0, q1) and keys [0, kend) of s.
static Seq slice(const Config& c, const Seq& s, int q0, int q1, int kend) {
  Seq r;
  r.Lq = q1 - q0;
  r.Lk = kend;
  const size_t qr = size_t(c.H) * c.d, kr = size_t(c.Hk) * c.d;
  r.q.assign(s.q.begin() + q0 * qr, s.q.begin() + q1 * qr);
  r.dout.assign(s.dout.begin() + q0 * qr, s.dout.begin() + q1 * qr);
  r.k.assign(s.k.begin(), s.k.begin() + kend * kr);
  r.v.assign(s.v.begin(), s.v.begin() + kend * kr);
  return r;
}

// Out rows [q0, q1) and lse of those rows, from a full-sequence result.
static Result rows_of(const Config& c, const Result& r, int Lq, int q0, int q1) {
  Result o;
  o.out.assign(r.out.begin() + size_t(q0) * c.H * c.d, r.out.begin() + size_t(q1) * c.H * c.d);
  for (int h = 0; h < c.H; ++h)
    for (int i = q0; i < q1; ++i) o.lse.push_back(r.lse[size_t(h) * Lq + i]);
  return o;
}

// The paged layout: a pool of pages (garbage outside the sequences' keys),
// each sequence's pages scattered over it in random order. q is packed.
struct PagedCache {
  int page_size, num_pages, max_pages;
  std::vector<int32_t> block_table, seqused;
  Buf k, v;
  PagedCache(const Config& c, const std::vector<int>& capacity, int ps, Rng& rng)
      : page_size(ps), num_pages(0), max_pages(0), k(c.dt, 0), v(c.dt, 0) {
    for (int cap : capacity) {
      max_pages = std::max(max_pages, (cap + ps - 1) / ps);
      num_pages += (cap + ps - 1) / ps;
    }
    num_pages += 3;  // spare pages nobody owns
    std::vector<int> perm = iota(num_pages);
    for (int i = num_pages - 1; i > 0; --i) std::swap(perm[i], perm[rng.range(0, i)]);
    block_table.assign(capacity.size() * std::max(max_pages, 1), -1);
    int next = 0;
    for (size_t b = 0; b < capacity.size(); ++b)
      for (int i = 0; i < (capacity[b] + ps - 1) / ps; ++i) block_table[b * max_pages + i] = perm[next++];
    const size_t n = size_t(num_pages) * ps * c.Hk * c.d;
    k = Buf(c.dt, n);
    v = Buf(c.dt, n);
    seqused.assign(capacity.size(), 0);
  }
  size_t elem(const Config& c, int b, int j) const {
    const int page = block_table[size_t(b) * max_pages + j / page_size];
    return (size_t(page) * page_size + j % page_size) * c.Hk * c.d;
  }
  sb_view view_of(const Config& c, Buf& x) { return sb_view{x.data(), int64_t(page_size) * c.Hk * c.d, int64_t(c.Hk) * c.d, c.d}; }
};

// Forward of `seqs` with q packed and K/V in a paged cache of page size ps.
static std::vector<Result> run_paged(const Config& c, const std::vector<Seq>& seqs, int ps, Rng& rng) {
  const int B = int(seqs.size());
  std::vector<int> cap;
  for (const Seq& s : seqs) cap.push_back(s.Lk);
  PagedCache pc(c, cap, ps, rng);
  std::vector<int32_t> cu_q(B + 1, 0);
  for (int b = 0; b < B; ++b) {
    cu_q[b + 1] = cu_q[b] + seqs[b].Lq;
    pc.seqused[b] = seqs[b].Lk;
    for (int j = 0; j < seqs[b].Lk; ++j)
      for (int e = 0; e < c.Hk * c.d; ++e) {
        pc.k.set(pc.elem(c, b, j) + e, seqs[b].k[size_t(j) * c.Hk * c.d + e]);
        pc.v.set(pc.elem(c, b, j) + e, seqs[b].v[size_t(j) * c.Hk * c.d + e]);
      }
  }
  const size_t TQ = cu_q[B];
  Buf q(c.dt, TQ * c.H * c.d), out(c.dt, TQ * c.H * c.d);
  std::vector<float> lse(TQ * c.H + 1);
  for (int b = 0; b < B; ++b)
    for (size_t i = 0; i < seqs[b].q.size(); ++i) q.set(size_t(cu_q[b]) * c.H * c.d + i, seqs[b].q[i]);
  sb_attention_params p = base_params(c);
  p.batch = B;
  p.cu_seqlens_q = cu_q.data();
  p.seqused_k = pc.seqused.data();
  p.block_table = pc.block_table.data();
  p.block_table_batch_stride = pc.max_pages;
  p.page_size = ps;
  p.q = view(q.data(), 0, c.H, c.d);
  p.out = view(out.data(), 0, c.H, c.d);
  p.k = pc.view_of(c, pc.k);
  p.v = pc.view_of(c, pc.v);
  p.lse = sb_view{lse.data(), 0, c.H, 1};
  CHECK_OK(sb_attention_forward(&p));
  std::vector<Result> res(B);
  for (int b = 0; b < B; ++b) {
    for (size_t i = 0; i < seqs[b].q.size(); ++i) res[b].out.push_back(out.get(size_t(cu_q[b]) * c.H * c.d + i));
    for (int h = 0; h < c.H; ++h)
      for (int i = 0; i < seqs[b].Lq; ++i) res[b].lse.push_back(lse[(size_t(cu_q[b]) + i) * c.H + h]);
  }
  return res;
}

// Chunked prefill: append each chunk's K/V to a paged cache with
// sb_kvcache_append, then attend with that chunk's queries (causal).
static Result chunked_prefill(const Config& c, const Seq& s, int chunk, int ps, Rng& rng) {
  PagedCache pc(c, {s.Lk}, ps, rng);
  Result r;
  std::vector<float> lse_rows(size_t(s.Lq) * c.H);
  for (int q0 = 0; q0 < s.Lq; q0 += chunk) {
    const int q1 = std::min(s.Lq, q0 + chunk), n = q1 - q0;
    Buf kn(c.dt, size_t(n) * c.Hk * c.d), vn(c.dt, size_t(n) * c.Hk * c.d);
    for (size_t e = 0; e < size_t(n) * c.Hk * c.d; ++e) {
      kn.set(e, s.k[size_t(q0) * c.Hk * c.d + e]);
      vn.set(e, s.v[size_t(q0) * c.Hk * c.d + e]);
    }
    const int32_t cache_len = q0;
    sb_kvcache_append_params ap;
    std::memset(&ap, 0, sizeof(ap));
    ap.dtype = c.dt;
    ap.device = SB_CPU;
    ap.batch = 1;
    ap.seqlen_new = n;
    ap.num_heads_k = c.Hk;
    ap.head_dim = c.d;
    ap.cache_seqlens = &cache_len;
    ap.block_table = pc.block_table.data();
    ap.block_table_batch_stride = pc.max_pages;
    ap.page_size = ps;
    ap.k_new = view(kn.data(), n, c.Hk, c.d);
    ap.v_new = view(vn.data(), n, c.Hk, c.d);
    ap.k_cache = pc.view_of(c, pc.k);
    ap.v_cache = pc.view_of(c, pc.v);
    CHECK_OK(sb_kvcache_append(&ap));
    Buf q(c.dt, size_t(n) * c.H * c.d), out(c.dt, size_t(n) * c.H * c.d);
    for (size_t e = 0; e < size_t(n) * c.H * c.d; ++e) q.set(e, s.q[size_t(q0) * c.H * c.d + e]);
    std::vector<float> lse(size_t(n) * c.H);
    pc.seqused[0] = q1;
    sb_attention_params p = base_params(c);
    p.batch = 1;
    p.seqlen_q = n;
    p.seqused_k = pc.seqused.data();
    p.block_table = pc.block_table.data();
    p.block_table_batch_stride = pc.max_pages;
    p.page_size = ps;
    p.q = view(q.data(), n, c.H, c.d);
    p.out = view(out.data(), n, c.H, c.d);
    p.k = pc.view_of(c, pc.k);
    p.v = pc.view_of(c, pc.v);
    p.lse = sb_view{lse.data(), int64_t(c.H) * n, 1, n};
    CHECK_OK(sb_attention_forward(&p));
    for (size_t e = 0; e < size_t(n) * c.H * c.d; ++e) r.out.push_back(out.get(e));
    for (int h = 0; h < c.H; ++h)
      for (int i = 0; i < n; ++i) lse_rows[size_t(h) * s.Lq + q0 + i] = lse[size_t(h) * n + i];
  }
  r.lse = lse_rows;
  return r;
}

int main() {
  Rng rng(2024);
  Config c;
  c.dt = SB_BF16;
  c.H = 4;
  c.Hk = 2;
  c.d = 64;
  c.wr = 0;

  // batch: each length alone == inside random varlen batches, fwd + bwd.
  for (int L : {1, 7, 128, 500, 1100}) {
    std::vector<Seq> seqs{make_seq(c, L, L, rng)};
    const Result alone = run(c, seqs, {0}, true, /*dense=*/true)[0];
    for (int trial = 0; trial < 2; ++trial) {
      const int n = rng.range(2, 6);
      for (int i = 1; i < n; ++i) {
        const int lk = rng.range(1, 700);
        seqs.push_back(make_seq(c, rng.range(1, lk), lk, rng));
      }
      std::vector<int> order = iota(int(seqs.size()));
      for (int i = int(order.size()) - 1; i > 0; --i) std::swap(order[i], order[rng.range(0, i)]);
      CHECK_SAME(run(c, seqs, order, true)[0], alone, "sequence alone vs inside a varlen batch");
      seqs.resize(1);
    }
    // a dense batch of same-length neighbours, the sequence in the middle
    std::vector<Seq> dense{make_seq(c, L, L, rng), seqs[0], make_seq(c, L, L, rng)};
    CHECK_SAME(run(c, dense, iota(3), true, true)[1], alone, "sequence alone vs inside a dense batch");
  }

  // varlen packing order and paged vs contiguous K/V (page sizes 16/64/256).
  {
    Config w = c;
    w.wl = 100;  // sliding window as well
    std::vector<Seq> seqs;
    for (int L : {3, 129, 1030, 64, 300}) seqs.push_back(make_seq(w, L > 100 ? L - 50 : L, L, rng));
    const auto base = run(w, seqs, iota(int(seqs.size())), false);
    const auto rev = run(w, seqs, {4, 3, 2, 1, 0}, false);
    for (size_t s = 0; s < seqs.size(); ++s) CHECK_SAME(rev[s], base[s], "varlen order");
    for (int ps : {16, 64, 256}) {
      const auto paged = run_paged(w, seqs, ps, rng);
      for (size_t s = 0; s < seqs.size(); ++s) CHECK_SAME(paged[s], base[s], "paged vs contiguous");
    }
  }

  // decode row t == prefill row t (single and in a batch of decodes).
  {
    const int L = 1100;
    const Seq s = make_seq(c, L, L, rng);
    const Result full = run(c, {s}, {0}, false)[0];
    std::vector<Seq> decodes;
    std::vector<int> ts{0, 5, 127, 128, 1023, 1024, 1099};
    for (int t : ts) {
      decodes.push_back(slice(c, s, t, t + 1, t + 1));
      CHECK_SAME(run_paged(c, {decodes.back()}, 16, rng)[0], rows_of(c, full, L, t, t + 1), "decode == prefill row");
    }
    const auto batch = run_paged(c, decodes, 64, rng);
    for (size_t i = 0; i < ts.size(); ++i)
      CHECK_SAME(batch[i], rows_of(c, full, L, ts[i], ts[i] + 1), "decode batch == prefill rows");
  }

  // chunked prefill (append + attend per chunk) == one-shot prefill.
  for (int chunk : {1, 17, 128}) {
    const int L = chunk == 1 ? 300 : 1100;
    const Seq s = make_seq(c, L, L, rng);
    const Result full = run(c, {s}, {0}, false, true)[0];
    CHECK_SAME(chunked_prefill(c, s, chunk, 64, rng), full, "chunked prefill == one shot");
  }

  // thread count 1 vs 2 (forward and backward, GQA, varlen).
  {
    std::vector<Seq> seqs{make_seq(c, 700, 700, rng), make_seq(c, 33, 200, rng)};
    sb_cpu_set_num_threads(1);
    const auto one = run(c, seqs, {0, 1}, true);
    sb_cpu_set_num_threads(2);
    const auto two = run(c, seqs, {0, 1}, true);
    sb_cpu_set_num_threads(0);
    for (size_t i = 0; i < seqs.size(); ++i) CHECK_SAME(one[i], two[i], "1 thread vs 2 threads");
  }

  // every run the same (forward + backward, f16, softcap).
  {
    Config f = c;
    f.dt = SB_F16;
    f.softcap = 10.0f;
    std::vector<Seq> seqs{make_seq(f, 300, 300, rng)};
    const auto first = run(f, seqs, {0}, true)[0];
    for (int r = 0; r < 3; ++r) CHECK_SAME(run(f, seqs, {0}, true)[0], first, "run to run");
  }
  std::printf("test_invariance: %d bitwise checks passed\n", g_checks);
  return 0;
}
