// sm90 attention forward: accuracy against an fp64 reference and bitwise
// invariance (runs, batch neighbours, varlen packings, grid, chunked
// prefill, GQA packing, dense vs packed layout, seqused_k), plus a negative
// control that shows the bitwise check can fail. Exit status 0 only if all
// pass.
//
// usage: test_attention_fwd_sm90 [--quick] [--small] [--seqused]
#include <map>
#include <set>

#include "attention_fwd_harness.h"

using namespace sbtest;

namespace {

int g_failures = 0;
bool g_quick = false;

void check(bool ok, const std::string& what) {
  std::printf("[%s] %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++g_failures;
}

const char* dt_name(sb_dtype d) { return d == SB_BF16 ? "bf16" : "fp16"; }

std::string describe(const Problem& p) {
  std::string s = std::string(dt_name(p.dt)) + " d" + std::to_string(p.D) + " H" +
                  std::to_string(p.H) + "/" + std::to_string(p.Hk) + (p.dense ? " dense" : " varlen") +
                  " lq[";
  for (size_t i = 0; i < p.lq.size() && i < 6; ++i) s += (i ? "," : "") + std::to_string(p.lq[i]);
  if (p.lq.size() > 6) s += ",...";
  s += "] lk[";
  for (size_t i = 0; i < p.lk.size() && i < 6; ++i) s += (i ? "," : "") + std::to_string(p.lk[i]);
  if (p.lk.size() > 6) s += ",...";
  s += "]";
  if (p.wl >= 0 || p.wr >= 0) s += " window(" + std::to_string(p.wl) + "," + std::to_string(p.wr) + ")";
  if (p.softcap > 0) s += " softcap" + std::to_string(static_cast<int>(p.softcap));
  return s;
}

// ---------------------------------------------------------------- accuracy
// Bounds: bf16 keeps 8 mantissa bits, so rounding P and the output alone
// moves an O(1) element by up to ~1e-2; fp16 keeps 11 bits (8x tighter).
// These bounds are ~2x the worst element error of bf16/fp16 flash attention
// against fp64 at these sizes (rel. Frobenius error ~3e-3 bf16, 4e-4 fp16).
// LSE is computed from unrounded f32 probabilities: 2e-3 absolute.
void accuracy_case(Problem p, uint64_t seed) {
  Tensors t = random_tensors(p, seed);
  Result r = run_gpu(p, t);
  if (r.status != SB_OK) {
    check(false, "accuracy " + describe(p) + ": status " + std::to_string(r.status) + " " + r.error);
    return;
  }
  Reference ref = reference(p, t);
  ErrorStats e = compare(p, r, ref);
  const double max_tol = p.dt == SB_BF16 ? 3e-2 : 5e-3;
  const double fro_tol = p.dt == SB_BF16 ? 1e-2 : 2e-3;
  char buf[256];
  std::snprintf(buf, sizeof buf, " max_abs=%.3e rel_fro=%.3e lse_max_abs=%.3e nan=%ld",
                e.max_abs, e.rel_fro, e.lse_max_abs, e.nan_count);
  check(e.nan_count == 0 && e.max_abs <= max_tol && e.rel_fro <= fro_tol && e.lse_max_abs <= 2e-3,
        "accuracy " + describe(p) + buf);
}

void accuracy_suite(int D, sb_dtype dt) {
  uint64_t seed = 1000 + D * 7 + dt;
  Problem p;
  p.D = D;
  p.dt = dt;
  // dense, non-multiple lengths, non-causal
  p.dense = true;
  p.H = p.Hk = 2;
  p.lq = {300, 300};
  p.lk = {300, 300};
  accuracy_case(p, seed++);
  // dense causal, two splits' worth of keys
  p.lq = {1100};
  p.lk = {1100};
  p.wr = 0;
  accuracy_case(p, seed++);
  // varlen, GQA 4:1, causal, with a sequence over 2 splits
  p = Problem();
  p.D = D;
  p.dt = dt;
  p.H = 4;
  p.Hk = 1;
  p.lq = {1, 7, 128, 500, g_quick ? 1100 : 2100};
  p.lk = p.lq;
  p.wr = 0;
  accuracy_case(p, seed++);
  // sliding window (left 200, right 30), GQA 2:1
  p.H = 4;
  p.Hk = 2;
  p.lq = {1500, 333};
  p.lk = p.lq;
  p.wl = 200;
  p.wr = 30;
  accuracy_case(p, seed++);
  // softcap, chunk (lq < lk, bottom-right causal), rows without keys (lq > lk)
  p.wl = -1;
  p.wr = 0;
  p.softcap = 30.f;
  p.lq = {200, 300, 64};
  p.lk = {2300, 100, 0};
  accuracy_case(p, seed++);
}

// ---------------------------------------------------------------- invariance
struct Rows {
  std::vector<uint16_t> out;
  std::vector<float> lse;
  bool operator==(const Rows& o) const { return out == o.out && lse == o.lse; }
};

// Rows [i0, i1) of sequence b, all heads.
Rows extract(const Problem& p, const Result& r, int b, int i0, int i1) {
  auto cq = p.cu(p.lq);
  const int tq = p.total_q();
  Rows x;
  for (int i = i0; i < i1; ++i) {
    const size_t base = (size_t)(cq[b] + i) * p.H * p.D;
    x.out.insert(x.out.end(), r.out.begin() + base, r.out.begin() + base + (size_t)p.H * p.D);
    for (int h = 0; h < p.H; ++h) x.lse.push_back(r.lse[(size_t)h * tq + cq[b] + i]);
  }
  return x;
}

// The packed problem of `seqs` (each a (lq, lk) pair and its own tensors).
struct Seq {
  int lq, lk;
  Tensors t;
};

Problem pack(const Problem& shape, const std::vector<const Seq*>& seqs, Tensors& t) {
  Problem p = shape;
  p.dense = false;
  p.lq.clear();
  p.lk.clear();
  t = Tensors();
  for (const Seq* s : seqs) {
    p.lq.push_back(s->lq);
    p.lk.push_back(s->lk);
    t.q.insert(t.q.end(), s->t.q.begin(), s->t.q.end());
    t.k.insert(t.k.end(), s->t.k.begin(), s->t.k.end());
    t.v.insert(t.v.end(), s->t.v.begin(), s->t.v.end());
  }
  return p;
}

Seq make_seq(const Problem& shape, int lq, int lk, uint64_t seed) {
  Problem one = shape;
  one.dense = false;
  one.lq = {lq};
  one.lk = {lk};
  return Seq{lq, lk, random_tensors(one, seed, 2.f)};
}

Rows run_alone(const Problem& shape, const Seq& s) {
  Tensors t;
  Problem p = pack(shape, {&s}, t);
  Result r = run_gpu(p, t);
  return extract(p, r, 0, 0, s.lq);
}

// A sequence alone == the same sequence inside batches of random neighbours
// (lengths 1..8192), at a random place in the batch.
void batch_invariance(const Problem& shape, const std::vector<int>& lengths, int trials,
                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> len(1, 8192);
  for (int L : lengths) {
    Seq target = make_seq(shape, L, L, rng());
    Rows alone = run_alone(shape, target);
    bool ok = true;
    std::string detail;
    for (int tr = 0; tr < trials && ok; ++tr) {
      const int n = 1 + rng() % (g_quick ? 4 : 12);
      std::vector<Seq> others;
      for (int i = 0; i < n; ++i) {
        const int l = len(rng);
        others.push_back(make_seq(shape, l, l, rng()));
      }
      std::vector<const Seq*> order;
      for (auto& o : others) order.push_back(&o);
      const int at = rng() % (order.size() + 1);
      order.insert(order.begin() + at, &target);
      Tensors t;
      Problem p = pack(shape, order, t);
      Result r = run_gpu(p, t);
      ok = r.status == SB_OK && extract(p, r, at, 0, L) == alone;
      if (!ok) detail = " (trial " + std::to_string(tr) + ", batch " + std::to_string(order.size()) + ")";
    }
    check(ok, "batch invariance " + describe(shape) + " L=" + std::to_string(L) + detail);
  }
}

// 50 runs of one batch -> one hash; and grid caps (SAMEBITS_SM90_MAX_CTAS).
void run_and_grid_invariance(const Problem& shape, uint64_t seed) {
  Problem p = shape;
  p.dense = false;
  p.lq = {4097, 1, 500, 2048, 7};
  p.lk = p.lq;
  Tensors t = random_tensors(p, seed, 2.f);
  std::set<uint64_t> hashes;
  const int runs = g_quick ? 10 : 50;
  for (int i = 0; i < runs; ++i) {
    Result r = run_gpu(p, t);
    hashes.insert(fnv1a(r.lse.data(), r.lse.size() * 4, fnv1a(r.out.data(), r.out.size() * 2)));
  }
  check(hashes.size() == 1, "run invariance " + describe(p) + ": " + std::to_string(runs) +
                                " runs -> " + std::to_string(hashes.size()) + " hash(es)");
  std::set<uint64_t> grid_hashes;
  for (const char* cap : {"1", "3", "17", "0"}) {
    setenv("SAMEBITS_SM90_MAX_CTAS", cap, 1);
    Result r = run_gpu(p, t);
    grid_hashes.insert(fnv1a(r.lse.data(), r.lse.size() * 4, fnv1a(r.out.data(), r.out.size() * 2)));
  }
  unsetenv("SAMEBITS_SM90_MAX_CTAS");
  check(grid_hashes.size() == 1 && *grid_hashes.begin() == *hashes.begin(),
        "grid invariance (max CTAs 1, 3, 17, all) " + describe(p));
}

// Random packings of one set of sequences: each sequence == itself alone.
void varlen_invariance(const Problem& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Seq> seqs;
  for (int L : {1, 7, 128, 500, 1000, 2048, 4097, 333}) seqs.push_back(make_seq(shape, L, L, rng()));
  std::vector<Rows> alone;
  for (auto& s : seqs) alone.push_back(run_alone(shape, s));
  bool ok = true;
  for (int tr = 0; tr < 3 && ok; ++tr) {
    std::vector<int> idx(seqs.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    std::vector<const Seq*> order;
    for (int i : idx) order.push_back(&seqs[i]);
    Tensors t;
    Problem p = pack(shape, order, t);
    Result r = run_gpu(p, t);
    for (size_t j = 0; j < idx.size(); ++j)
      ok = ok && extract(p, r, j, 0, seqs[idx[j]].lq) == alone[idx[j]];
  }
  check(ok, "varlen packing invariance (3 random orders) " + describe(shape));
}

// A packed batch's tiles that cross a sequence end read the next
// sequence's rows by TMA where they are rows in use, and the producer makes
// them harmless (attention_fwd_sm90_mainloop.h): neighbours whose q, k, v
// are all NaN or Inf leave every other sequence's rows equal to the
// sequence's alone, with the TMA tails and with the hand loads
// (SAMEBITS_FWD_TAIL_TMA=0). Negative control: the same values in one of
// the sequence's own key rows change its rows.
void nan_neighbour_case(const Problem& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Seq> good;
  for (int L : {333, 1000, 130, 777}) good.push_back(make_seq(shape, L, L, rng()));
  Seq bad = make_seq(shape, 300, 300, rng());
  for (auto* v : {&bad.t.q, &bad.t.k, &bad.t.v})
    for (size_t i = 0; i < v->size(); ++i) (*v)[i] = poison(shape.dt, i);
  std::vector<Rows> alone;
  for (const Seq& g : good) alone.push_back(run_alone(shape, g));
  std::vector<const Seq*> order;
  for (const Seq& g : good) {
    order.push_back(&g);
    order.push_back(&bad);
  }
  order.pop_back();
  Tensors t;
  Problem p = pack(shape, order, t);
  for (const char* tail : {"1", "0"}) {
    setenv("SAMEBITS_FWD_TAIL_TMA", tail, 1);
    Result r = run_gpu(p, t);
    bool same = r.status == SB_OK;
    for (size_t j = 0; j < good.size(); ++j) same = same && extract(p, r, 2 * j, 0, good[j].lq) == alone[j];
    check(same, std::string("NaN / Inf neighbours (tail tma ") + tail + "): every other sequence == alone " +
                    describe(shape));
  }
  unsetenv("SAMEBITS_FWD_TAIL_TMA");
  Seq own = good[0];
  for (int c = 0; c < shape.D; ++c) own.t.v[(size_t)(own.lk - 1) * shape.Hk * shape.D + c] = poison(shape.dt, c);
  check(!(run_alone(shape, own) == alone[0]),
        "negative control: NaN / Inf in the sequence's own last value row change its rows (DIFFERS, expected) " +
            describe(shape));
}

// seqused_k: a dense batch whose keys past seqused_k[b] are NaN / Inf gives
// each sequence the rows of that sequence with its keys cut at seqused_k[b]
// (a packed batch of the cut sequences), with the TMA tails and with the
// hand loads. Cuts: the stored length, one past a 128-key block, one past
// two blocks, half a block. Negative control: the same call without
// seqused_k sees the poisoned keys.
void seqused_case(const Problem& shape, uint64_t seed) {
  const int Lq = 200, Lk = 390;
  const std::vector<int> used = {Lk, 257, 129, 64};
  std::mt19937_64 rng(seed);
  std::vector<Seq> cut;
  for (int u : used) cut.push_back(make_seq(shape, Lq, u, rng()));
  std::vector<const Seq*> order;
  for (const Seq& c : cut) order.push_back(&c);
  Tensors tc;
  const Problem pc = pack(shape, order, tc);
  Problem pf = shape;
  pf.dense = true;
  pf.lq.assign(used.size(), Lq);
  pf.lk.assign(used.size(), Lk);
  Tensors tf;
  tf.q = tc.q;
  const size_t kr = (size_t)shape.Hk * shape.D;
  tf.k.resize(used.size() * Lk * kr);
  tf.v.resize(tf.k.size());
  for (size_t b = 0; b < used.size(); ++b)
    for (size_t i = 0; i < Lk * kr; ++i) {
      const bool kept = i < (size_t)used[b] * kr;
      tf.k[b * Lk * kr + i] = kept ? cut[b].t.k[i] : poison(shape.dt, i);
      tf.v[b * Lk * kr + i] = kept ? cut[b].t.v[i] : poison(shape.dt, i + 1);
    }
  for (const char* tail : {"1", "0"}) {
    setenv("SAMEBITS_FWD_TAIL_TMA", tail, 1);
    const Result rc = run_gpu(pc, tc), rf = run_gpu(pf, tf, &used);
    bool same = rc.status == SB_OK && rf.status == SB_OK;
    for (size_t b = 0; b < used.size(); ++b) {
      const bool eq = extract(pf, rf, (int)b, 0, Lq) == extract(pc, rc, (int)b, 0, Lq);
      if (!eq) std::printf("  sequence %zu (seqused_k %d) differs\n", b, used[b]);
      same = same && eq;
    }
    check(same, std::string("seqused_k (tail tma ") + tail + "): each sequence == its keys cut at seqused_k " +
                    describe(shape));
  }
  unsetenv("SAMEBITS_FWD_TAIL_TMA");
  const Result rc = run_gpu(pc, tc), rn = run_gpu(pf, tf);
  bool differs = rn.status != SB_OK;
  for (size_t b = 1; b < used.size() && !differs; ++b)
    differs = !(extract(pf, rn, (int)b, 0, Lq) == extract(pc, rc, (int)b, 0, Lq));
  check(differs, "negative control: without seqused_k the poisoned keys reach the rows (DIFFERS, expected) " +
                     describe(shape));
}

// Dense layout == packed layout for the same sequences.
void dense_vs_varlen(const Problem& shape, uint64_t seed) {
  Problem p = shape;
  p.dense = true;
  p.lq = {777, 777, 777};
  p.lk = p.lq;
  Tensors t = random_tensors(p, seed, 2.f);
  Result rd = run_gpu(p, t);
  Problem pv = p;
  pv.dense = false;
  Result rv = run_gpu(pv, t);
  check(rd.status == SB_OK && rd.out == rv.out && rd.lse == rv.lse,
        "dense == packed layout " + describe(p));
  // The dense batch's last tiles by hand (SAMEBITS_FWD_TAIL_TMA=0) instead
  // of by TMA's zero fill (the default): the same bits.
  setenv("SAMEBITS_FWD_TAIL_TMA", "0", 1);
  Result rh = run_gpu(p, t);
  unsetenv("SAMEBITS_FWD_TAIL_TMA");
  check(rh.status == SB_OK && rd.out == rh.out && rd.lse == rh.lse,
        "dense tail tiles by TMA == by hand " + describe(p));
}

// Chunked prefill: rows [s, e) computed with Lq = e - s over keys [0, e)
// (bottom-right aligned) == rows [s, e) of the one-shot forward.
void chunk_invariance(const Problem& shape, uint64_t seed) {
  const int L = 2500;
  Seq full = make_seq(shape, L, L, seed);
  Rows all = run_alone(shape, full);
  const size_t row_elems = (size_t)shape.H * shape.D;
  for (int chunk : {1, 17, 128, 1000}) {
    bool ok = true;
    int s = 0, n_chunks = 0;
    for (; s < L && ok; s += chunk) {
      const int e = std::min(L, s + chunk);
      if (chunk == 1 && n_chunks > 40 && e < L - 40) {  // sample rows of the 1-row chunks
        s += 97 - chunk;
        continue;
      }
      ++n_chunks;
      Seq c;
      c.lq = e - s;
      c.lk = e;
      c.t.q.assign(full.t.q.begin() + s * row_elems, full.t.q.begin() + e * row_elems);
      const size_t krow = (size_t)shape.Hk * shape.D;
      c.t.k.assign(full.t.k.begin(), full.t.k.begin() + e * krow);
      c.t.v.assign(full.t.v.begin(), full.t.v.begin() + e * krow);
      Rows got = run_alone(shape, c);
      Rows want;
      want.out.assign(all.out.begin() + s * row_elems, all.out.begin() + e * row_elems);
      want.lse.assign(all.lse.begin() + (size_t)s * shape.H, all.lse.begin() + (size_t)e * shape.H);
      ok = got == want;
    }
    check(ok, "chunked prefill == one-shot " + describe(shape) + " chunk=" + std::to_string(chunk));
  }
}

// GQA packing: query head h of an (H, Hk) problem == the same head computed
// alone (H = Hk = 1) against its KV head.
void gqa_invariance(const Problem& shape, uint64_t seed) {
  Problem p = shape;
  p.dense = false;
  p.H = 8;
  p.Hk = 2;
  p.lq = {1500};
  p.lk = p.lq;
  Tensors t = random_tensors(p, seed, 2.f);
  Result r = run_gpu(p, t);
  bool ok = true;
  for (int h : {0, 5, 7}) {
    const int hk = h / 4;
    Problem one = p;
    one.H = one.Hk = 1;
    Tensors t1;
    for (int i = 0; i < p.lq[0]; ++i) {
      auto qb = t.q.begin() + ((size_t)i * p.H + h) * p.D;
      t1.q.insert(t1.q.end(), qb, qb + p.D);
      auto kb = t.k.begin() + ((size_t)i * p.Hk + hk) * p.D;
      t1.k.insert(t1.k.end(), kb, kb + p.D);
      auto vb = t.v.begin() + ((size_t)i * p.Hk + hk) * p.D;
      t1.v.insert(t1.v.end(), vb, vb + p.D);
    }
    Result r1 = run_gpu(one, t1);
    for (int i = 0; i < p.lq[0] && ok; ++i) {
      ok = std::memcmp(&r1.out[(size_t)i * p.D], &r.out[((size_t)i * p.H + h) * p.D], p.D * 2) == 0 &&
           std::memcmp(&r1.lse[i], &r.lse[(size_t)h * p.lq[0] + i], 4) == 0;
    }
  }
  check(ok, "GQA/MQA head packing == head alone " + describe(p));
}

// Negative control: the same bitwise comparison, with one bit of one key
// visible to the target flipped inside the batch, must report a mismatch.
void negative_control(const Problem& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Seq target = make_seq(shape, 1000, 1000, rng());
  Rows alone = run_alone(shape, target);
  Seq other = make_seq(shape, 3000, 3000, rng());
  Seq changed = target;
  changed.t.k[123 * shape.Hk * shape.D + 5] ^= 1;  // lowest mantissa bit of key 123
  Tensors t;
  Problem p = pack(shape, {&other, &changed}, t);
  Result r = run_gpu(p, t);
  const bool detected = !(extract(p, r, 1, 0, 1000) == alone);
  check(detected, "negative control: a one-bit change in a visible key is detected " + describe(shape));
}

}  // namespace

int main(int argc, char** argv) {
  bool small = false, seqused_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") g_quick = true;
    if (std::string(argv[i]) == "--small") small = true;  // a few tiny cases (sanitizers)
    if (std::string(argv[i]) == "--seqused") seqused_only = true;  // the seqused_k cases alone
  }
  if (!sb_cuda_supported(0)) {
    std::printf("no sm90 device: skipped\n");
    return 0;
  }
  if (seqused_only) {
    for (int D : {64, 128, 256})
      for (sb_dtype dt : {SB_BF16, SB_F16})
        for (int causal = 0; causal < 2; ++causal) {
          Problem shape;
          shape.D = D;
          shape.dt = dt;
          shape.H = 2;
          shape.Hk = 1;
          shape.wr = causal ? 0 : -1;
          seqused_case(shape, 23 + D);
        }
    std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
    return g_failures ? 1 : 0;
  }
  std::printf("samebits %s, sm90 attention forward tests%s\n", sb_version(), g_quick ? " (quick)" : "");

  if (small) {
    // Every compiled configuration (head dim x dtype), each through the
    // causal+GQA varlen path and the non-causal window+softcap dense path.
    for (int D : {64, 128, 256})
      for (sb_dtype dt : {SB_BF16, SB_F16}) {
        Problem p;
        p.D = D;
        p.dt = dt;
        p.H = 2;
        p.Hk = 1;
        p.lq = {5, 200, 130};
        p.lk = {5, 300, 1100};
        p.wr = 0;
        accuracy_case(p, 3 + D + dt);
        Problem w;
        w.D = D;
        w.dt = dt;
        w.H = 2;
        w.Hk = 2;
        w.lq = {150, 150};
        w.lk = {150, 150};
        w.dense = true;
        w.wl = 40;
        w.wr = 17;
        w.softcap = 30.f;
        accuracy_case(w, 7 + D + dt);
      }
    std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
    return g_failures ? 1 : 0;
  }
  for (int D : {64, 128, 256})
    for (sb_dtype dt : {SB_BF16, SB_F16}) accuracy_suite(D, dt);

  for (int D : {64, 128, 256})
    for (sb_dtype dt : {SB_BF16, SB_F16}) {
      Problem shape;
      shape.D = D;
      shape.dt = dt;
      shape.H = 2;
      shape.Hk = 1;
      const bool main_cfg = D == 128 && dt == SB_BF16;
      for (int causal = 0; causal < 2; ++causal) {
        shape.wr = causal ? 0 : -1;
        std::vector<int> lengths = main_cfg ? std::vector<int>{1, 7, 128, 500, 1000, 2048, 4097}
                                            : std::vector<int>{7, 1000, 4097};
        batch_invariance(shape, lengths, main_cfg ? 3 : 1, 77 + D + causal);
      }
      shape.wr = 0;
      run_and_grid_invariance(shape, 5 + D);
      if (main_cfg || D == 256) {
        varlen_invariance(shape, 9 + D);
        chunk_invariance(shape, 11 + D);
      }
      dense_vs_varlen(shape, 13 + D);
      nan_neighbour_case(shape, 19 + D);
      seqused_case(shape, 23 + D);
      gqa_invariance(shape, 17 + D);
      if (main_cfg) {
        Problem sw = shape;
        sw.wl = 300;
        sw.wr = 0;
        sw.softcap = 50.f;
        batch_invariance(sw, {1000, 4097}, 2, 99);
        negative_control(shape, 123);
      }
    }

  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
  return g_failures ? 1 : 0;
}
