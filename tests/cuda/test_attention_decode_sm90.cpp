// sm90 attention over a KV cache (decode, speculative verify, chunked
// prefill) through the C ABI: sb_kvcache_append, then sb_attention_forward
// with seqused_k (and block_table). Every invariance check is bitwise
// against the sm90 training forward over the same keys (dense layout, one
// shot): decode at random positions t up to 128k == row t, inside decode
// batches of 1..256 random neighbours, page sizes 16/64/256 with scattered
// pages and NaN in every slot a sequence does not own; speculative verify
// (4 queries); chunked prefill with chunks 1, 17, 128, 1000 == one shot;
// 50 runs -> one hash; CUDA-graph replay; accuracy against fp64; a negative
// control. Exit status 0 only if all pass.
//
// usage: test_attention_decode_sm90 [--quick | --small] [--variant V | --variants 0,1,..]
//        test_attention_decode_sm90 --bench [--variants 0,4,auto] [--graph] [--short N]
//                                   [--reps N] [--max-tokens N]
//   --variant V: run every check with SAMEBITS_DECODE_VARIANT=V (0, 4, auto;
//            a trailing c, e.g. autoc, also sets SAMEBITS_DECODE_FOLD=0, a
//            trailing f SAMEBITS_DECODE_FOLD=force).
//   --variants L: run every decode call of every check under each schedule
//            of L on the same inputs; a check passes only if all give the
//            forward's bits (one run of the suite covers all schedules).
//   --bench: kernel-only K/V bandwidth of decode (batch 1..256 x context
//            1k..128k, GQA 8:1, head dim 128, page 64) for each variant,
//            against the device's copy bandwidth (method above bench()).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <set>

#include "attention_fwd_harness.h"

using namespace sbtest;

namespace {

int g_failures = 0;
bool g_quick = false;
bool g_small = false;  // --small: a few short cases (for compute-sanitizer)
// How Step::launch provides the decode workspace: 0 the library's own
// (sb_attention_forward), 1 the caller's of the one-pass size, 2 the
// caller's of the minimum size at a misaligned address (both through
// sb_attention_forward_ws).
int g_ws_mode = 0;

// The schedule of the decode calls (SAMEBITS_DECODE_VARIANT, read by the
// library on every call): 0 or 4, kAuto for "auto", -1 unsets it, -2 leaves
// it as it is. kCombine added to a schedule ("0c", "autoc") also sets
// SAMEBITS_DECODE_FOLD=0 (the combine kernel even where pass 1 would fold
// the splits), kForce ("autof") SAMEBITS_DECODE_FOLD=force (the fold
// wherever its clusters fit, also at the suite's small grids); without
// either the fold setting is the one the run started with.
constexpr int kAuto = 100;
constexpr int kCombine = 1000;
constexpr int kForce = 2000;
const char* g_fold_env = nullptr;  // SAMEBITS_DECODE_FOLD at start (main)
void set_variant(int v) {
  if (v == -2) return;
  if (v == -1) {
    unsetenv("SAMEBITS_DECODE_VARIANT");
    return;
  }
  if (v >= kForce)
    setenv("SAMEBITS_DECODE_FOLD", "force", 1);
  else if (v >= kCombine)
    setenv("SAMEBITS_DECODE_FOLD", "0", 1);
  else if (g_fold_env)
    setenv("SAMEBITS_DECODE_FOLD", g_fold_env, 1);
  else
    unsetenv("SAMEBITS_DECODE_FOLD");
  v %= kCombine;
  if (v == kAuto) {
    setenv("SAMEBITS_DECODE_VARIANT", "auto", 1);
  } else {
    setenv("SAMEBITS_DECODE_VARIANT", std::to_string(v).c_str(), 1);
  }
}
std::string variant_name(int v) {
  if (v < 0) return "env";
  const std::string suffix = v >= kForce ? "f" : v >= kCombine ? "c" : "";
  v %= kCombine;
  return (v == kAuto ? std::string("auto") : "v" + std::to_string(v)) + suffix;
}
int parse_variant(std::string v) {
  int flag = 0;
  if (!v.empty() && (v.back() == 'c' || v.back() == 'f')) {
    flag = v.back() == 'c' ? kCombine : kForce;
    v.pop_back();
  }
  return (v == "auto" ? kAuto : std::atoi(v.c_str())) + flag;
}
std::vector<int> parse_variants(const std::string& list) {
  std::vector<int> out;
  for (size_t p0 = 0; p0 <= list.size();) {
    size_t p1 = list.find(',', p0);
    if (p1 == std::string::npos) p1 = list.size();
    const std::string item = list.substr(p0, p1 - p0);
    if (!item.empty()) out.push_back(parse_variant(item));
    p0 = p1 + 1;
  }
  return out;
}
// --variants in test mode: every decode call of a check runs under each of
// these schedules on the same inputs (outputs cleared in between), and the
// check passes only if all of them give the forward's bits. Empty: the
// schedule the environment selects.
std::vector<int> g_variants;
std::vector<int> variants_to_run() { return g_variants.empty() ? std::vector<int>{-2} : g_variants; }
std::string variants_label() {
  if (g_variants.empty()) return "";
  std::string s = " [";
  for (size_t i = 0; i < g_variants.size(); ++i) s += (i ? "," : "") + variant_name(g_variants[i]);
  return s + "]";
}

void check(bool ok, const std::string& what) {
  std::printf("[%s] %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++g_failures;
}

// Fast inputs: splitmix64 -> uniform in [-a, a), rounded to the dtype.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  std::vector<uint16_t> values(size_t n, sb_dtype dt, float a) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = to16((static_cast<float>(next() >> 40) / 16777216.f * 2.f - 1.f) * a, dt);
    return v;
  }
};

struct Shape {
  int H = 8, Hk = 2, D = 128;
  sb_dtype dt = SB_BF16;
  float softcap = 0.f;
  int wl = -1, wr = 0;  // causal
  std::string name() const {
    std::string s = std::string(dt == SB_BF16 ? "bf16" : "fp16") + " d" + std::to_string(D) + " H" +
                    std::to_string(H) + "/" + std::to_string(Hk);
    if (wl >= 0) s += " window" + std::to_string(wl);
    if (wr < 0) s += " noncausal";
    if (softcap > 0) s += " softcap" + std::to_string(static_cast<int>(softcap));
    return s;
  }
  float scale() const { return 1.f / std::sqrt(static_cast<float>(D)); }
};

// One target sequence of T tokens and its one-shot forward (dense, batch 1).
struct Target {
  int T;
  std::vector<uint16_t> q, k, v;  // (T, H, D), (T, Hk, D), (T, Hk, D)
  Result fwd;                     // out (T, H, D), lse (H, T)
};

Target make_target(const Shape& s, int T, uint64_t seed) {
  Rng rng{seed};
  Target t;
  t.T = T;
  t.q = rng.values(static_cast<size_t>(T) * s.H * s.D, s.dt, 2.f);
  t.k = rng.values(static_cast<size_t>(T) * s.Hk * s.D, s.dt, 2.f);
  t.v = rng.values(static_cast<size_t>(T) * s.Hk * s.D, s.dt, 2.f);
  Problem p;
  p.H = s.H;
  p.Hk = s.Hk;
  p.D = s.D;
  p.dt = s.dt;
  p.softcap = s.softcap;
  p.wl = s.wl;
  p.wr = s.wr;
  p.dense = true;
  p.lq = {T};
  p.lk = {T};
  t.fwd = run_gpu(p, Tensors{t.q, t.k, t.v});
  return t;
}

// A KV cache on the device: B sequences of up to `cap` keys, paged (page
// size ps, pages scattered over a pool with spare pages) or contiguous
// (ps = 0). Every slot starts as NaN; only the keys a sequence owns are
// ever written (preload, or sb_kvcache_append in step()).
struct DeviceKv {
  Shape s;
  int B, cap, ps;
  int pages_per_seq = 0, num_pages = 0;
  std::vector<int32_t> table;  // (B, pages_per_seq)
  size_t row_elems;            // Hk * D
  size_t pool_elems = 0;
  std::vector<uint16_t> hk, hv;  // host mirror of the pool (for preload)
  void *dk = nullptr, *dv = nullptr;
  int32_t* dtable = nullptr;

  // keys[b]: the most keys sequence b will hold; a paged sequence gets
  // just enough pages, the block table is as wide as the longest one
  // (entries past a sequence's pages are -1 and never read).
  DeviceKv(const Shape& shape, const std::vector<int>& keys, int page, Rng& rng, bool mirror = true)
      : s(shape), B(static_cast<int>(keys.size())), cap(0), ps(page), row_elems(size_t(shape.Hk) * shape.D) {
    for (int k : keys) cap = std::max(cap, std::max(k, 1));
    size_t slots;
    if (ps > 0) {
      pages_per_seq = (cap + ps - 1) / ps;
      cap = pages_per_seq * ps;
      int used = 0;
      for (int k : keys) used += (k + ps - 1) / ps;
      num_pages = used + B + 3;  // spare pages hold NaN forever
      std::vector<int32_t> ids(num_pages);
      std::iota(ids.begin(), ids.end(), 0);
      for (int i = num_pages - 1; i > 0; --i) std::swap(ids[i], ids[rng.below(i + 1)]);
      table.assign(size_t(B) * pages_per_seq, -1);
      int next = 0;
      for (int b = 0; b < B; ++b)
        for (int j = 0; j < (keys[b] + ps - 1) / ps; ++j) table[size_t(b) * pages_per_seq + j] = ids[next++];
      slots = size_t(num_pages) * ps;
      CUDA_OK(cudaMalloc(&dtable, table.size() * 4));
      CUDA_OK(cudaMemcpy(dtable, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
    } else {
      slots = size_t(B) * cap;
    }
    pool_elems = slots * row_elems;
    if (mirror) {
      hk.assign(pool_elems, 0xffff);  // NaN in bf16 and fp16
      hv = hk;
    }
    CUDA_OK(cudaMalloc(&dk, pool_elems * 2));
    CUDA_OK(cudaMalloc(&dv, pool_elems * 2));
  }
  ~DeviceKv() {
    cudaFree(dk);
    cudaFree(dv);
    if (dtable) cudaFree(dtable);
  }
  size_t slot_of(int b, int pos) const {
    return ps > 0 ? size_t(table[size_t(b) * pages_per_seq + pos / ps]) * ps + pos % ps
                  : size_t(b) * cap + pos;
  }
  // Keys [0, n) of sequence b from (n, Hk, D) rows, into the host mirror.
  void preload(int b, const uint16_t* k, const uint16_t* v, int n) {
    for (int j = 0; j < n; ++j) {
      std::memcpy(&hk[slot_of(b, j) * row_elems], k + size_t(j) * row_elems, row_elems * 2);
      std::memcpy(&hv[slot_of(b, j) * row_elems], v + size_t(j) * row_elems, row_elems * 2);
    }
  }
  void upload() {
    CUDA_OK(cudaMemcpy(dk, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dv, hv.data(), hv.size() * 2, cudaMemcpyHostToDevice));
  }
  sb_view cache_view(void* d) const {
    const int64_t rs = int64_t(row_elems);
    return ps > 0 ? sb_view{d, ps * rs, rs, s.D} : sb_view{d, cap * rs, rs, s.D};
  }
};

// Device buffers of one step: q, k_new, v_new (B, Lq, ...), cache_seqlens,
// seqused_k, out, lse (B, H, Lq). The params structs are kept so a step can
// be captured in a CUDA graph and replayed.
struct Step {
  int B, Lq;
  void *dq = nullptr, *dkn = nullptr, *dvn = nullptr, *dout = nullptr;
  float* dlse = nullptr;
  int32_t *dlens = nullptr, *dused = nullptr;
  sb_kvcache_append_params ap{};
  sb_attention_params at{};
  int ws_mode = g_ws_mode;
  void* ws_alloc = nullptr;  // caller workspace (ws_mode != 0)
  void* ws = nullptr;
  size_t ws_bytes = 0;

  Step(const DeviceKv& kv, int Lq_, const std::vector<uint16_t>& q, const std::vector<uint16_t>& kn,
       const std::vector<uint16_t>& vn, const std::vector<int32_t>& lens, cudaStream_t stream = nullptr)
      : B(kv.B), Lq(Lq_) {
    const Shape& s = kv.s;
    CUDA_OK(cudaMalloc(&dq, q.size() * 2));
    CUDA_OK(cudaMalloc(&dkn, std::max<size_t>(kn.size(), 1) * 2));
    CUDA_OK(cudaMalloc(&dvn, std::max<size_t>(vn.size(), 1) * 2));
    CUDA_OK(cudaMalloc(&dout, q.size() * 2));
    CUDA_OK(cudaMalloc(&dlse, size_t(B) * s.H * Lq * 4));
    CUDA_OK(cudaMalloc(&dlens, B * 4));
    CUDA_OK(cudaMalloc(&dused, B * 4));
    CUDA_OK(cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dkn, kn.data(), kn.size() * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dvn, vn.data(), vn.size() * 2, cudaMemcpyHostToDevice));
    std::vector<int32_t> used(lens);
    for (auto& u : used) u += Lq;
    CUDA_OK(cudaMemcpy(dlens, lens.data(), B * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dused, used.data(), B * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout, 0xff, q.size() * 2));
    CUDA_OK(cudaMemset(dlse, 0xff, size_t(B) * s.H * Lq * 4));
    const int64_t kr = int64_t(s.Hk) * s.D, qr = int64_t(s.H) * s.D;
    ap.dtype = s.dt;
    ap.device = SB_CUDA;
    ap.stream = stream;
    ap.batch = B;
    ap.seqlen_new = Lq;
    ap.num_heads_k = s.Hk;
    ap.head_dim = s.D;
    ap.cache_seqlens = dlens;
    ap.block_table = kv.dtable;
    ap.block_table_batch_stride = kv.pages_per_seq;
    ap.page_size = kv.ps;
    ap.k_new = {dkn, Lq * kr, kr, s.D};
    ap.v_new = {dvn, Lq * kr, kr, s.D};
    ap.k_cache = kv.cache_view(kv.dk);
    ap.v_cache = kv.cache_view(kv.dv);
    at.dtype = s.dt;
    at.device = SB_CUDA;
    at.stream = stream;
    at.batch = B;
    at.num_heads = s.H;
    at.num_heads_k = s.Hk;
    at.head_dim = s.D;
    at.seqlen_q = Lq;
    at.seqlen_k = kv.cap;
    at.seqused_k = dused;
    at.block_table = kv.dtable;
    at.block_table_batch_stride = kv.pages_per_seq;
    at.page_size = kv.ps;
    at.softmax_scale = s.scale();
    at.softcap = s.softcap;
    at.window_left = s.wl;
    at.window_right = s.wr;
    at.q = {dq, Lq * qr, qr, s.D};
    at.k = ap.k_cache;
    at.v = ap.v_cache;
    at.out = {dout, Lq * qr, qr, s.D};
    at.lse = {dlse, int64_t(s.H) * Lq, 1, Lq};
    if (ws_mode != 0) {
      size_t one_pass = 0, least = 0;
      if (sb_attention_workspace_size(&at, &one_pass, &least) != SB_OK) {
        std::printf("sb_attention_workspace_size: %s\n", sb_last_error());
        std::exit(2);
      }
      ws_bytes = ws_mode == 1 ? one_pass : least;
      if (ws_bytes > 0) {
        CUDA_OK(cudaMalloc(&ws_alloc, ws_bytes + 4));
        ws = static_cast<char*>(ws_alloc) + (ws_mode == 2 ? 4 : 0);
      }
    }
  }
  ~Step() {
    if (ws_alloc) cudaFree(ws_alloc);
    cudaFree(dq);
    cudaFree(dkn);
    cudaFree(dvn);
    cudaFree(dout);
    cudaFree(dlse);
    cudaFree(dlens);
    cudaFree(dused);
  }
  // out and lse back to NaN, so a schedule that wrote nothing cannot pass
  // on an earlier call's results.
  void clear_out() const {
    CUDA_OK(cudaMemset(dout, 0xff, size_t(B) * at.q.batch_stride * 2));
    CUDA_OK(cudaMemset(dlse, 0xff, size_t(B) * at.lse.batch_stride * 4));
  }
  sb_status launch(std::string* err = nullptr) {
    sb_status st = sb_kvcache_append(&ap);
    if (st == SB_OK) st = ws_mode == 0 ? sb_attention_forward(&at) : sb_attention_forward_ws(&at, ws, ws_bytes);
    if (st != SB_OK && err) *err = sb_last_error();
    return st;
  }
  // out of sequence b (Lq, H, D) and lse (H, Lq)
  void fetch(int b, std::vector<uint16_t>& out, std::vector<float>& lse, const Shape& s) const {
    CUDA_OK(cudaDeviceSynchronize());
    out.resize(size_t(Lq) * s.H * s.D);
    lse.resize(size_t(s.H) * Lq);
    CUDA_OK(cudaMemcpy(out.data(), static_cast<uint16_t*>(dout) + size_t(b) * out.size(), out.size() * 2,
                       cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(lse.data(), dlse + size_t(b) * lse.size(), lse.size() * 4, cudaMemcpyDeviceToHost));
  }
  uint64_t hash() const {
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> o(size_t(B) * at.q.batch_stride * 2), l(size_t(B) * at.lse.batch_stride * 4);
    CUDA_OK(cudaMemcpy(o.data(), dout, o.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(l.data(), dlse, l.size(), cudaMemcpyDeviceToHost));
    return fnv1a(l.data(), l.size(), fnv1a(o.data(), o.size()));
  }
};

// Rows [r0, r0 + n) of the target's forward == the step's rows of sequence b.
bool same_rows(const Shape& s, const Target& t, int r0, int n, const std::vector<uint16_t>& out,
               const std::vector<float>& lse) {
  const size_t re = size_t(s.H) * s.D;
  if (std::memcmp(out.data(), &t.fwd.out[size_t(r0) * re], n * re * 2) != 0) return false;
  for (int h = 0; h < s.H; ++h)
    if (std::memcmp(&lse[size_t(h) * n], &t.fwd.lse[size_t(h) * t.T + r0], n * 4) != 0) return false;
  return true;
}

// A decode batch: sequence `slot` is the target at position t (Lq query
// rows t - Lq + 1 .. t, their keys appended by the step); the others are
// random neighbours with 1..max_nb keys. Returns whether the target's rows
// equal the forward's; optionally hands back the step for more checks.
struct DecodeCase {
  int B, Lq, t, ps, slot;
};

bool run_decode_case(const Shape& s, const Target& tg, const DecodeCase& c, Rng& rng,
                     std::string& detail, int max_nb = 4096, int runs = 1, uint64_t* hash = nullptr,
                     bool flip_bit = false) {
  std::vector<int> keys(c.B);  // keys each sequence has after the step
  for (int b = 0; b < c.B; ++b) keys[b] = b == c.slot ? c.t + 1 : c.Lq + rng.below(max_nb);
  DeviceKv kv(s, keys, c.ps, rng);
  const size_t qe = size_t(s.H) * s.D, ke = size_t(s.Hk) * s.D;
  std::vector<uint16_t> q(c.B * c.Lq * qe), kn(c.B * c.Lq * ke), vn(c.B * c.Lq * ke);
  std::vector<int32_t> lens(c.B);
  for (int b = 0; b < c.B; ++b) {
    lens[b] = keys[b] - c.Lq;
    if (b == c.slot) {
      kv.preload(b, tg.k.data(), tg.v.data(), lens[b]);
      std::memcpy(&q[b * c.Lq * qe], &tg.q[size_t(lens[b]) * qe], c.Lq * qe * 2);
      std::memcpy(&kn[b * c.Lq * ke], &tg.k[size_t(lens[b]) * ke], c.Lq * ke * 2);
      std::memcpy(&vn[b * c.Lq * ke], &tg.v[size_t(lens[b]) * ke], c.Lq * ke * 2);
    } else {
      auto k = rng.values(size_t(keys[b]) * ke, s.dt, 2.f), v = rng.values(size_t(keys[b]) * ke, s.dt, 2.f);
      auto qq = rng.values(c.Lq * qe, s.dt, 2.f);
      kv.preload(b, k.data(), v.data(), lens[b]);
      std::memcpy(&q[b * c.Lq * qe], qq.data(), qq.size() * 2);
      std::memcpy(&kn[b * c.Lq * ke], &k[size_t(lens[b]) * ke], c.Lq * ke * 2);
      std::memcpy(&vn[b * c.Lq * ke], &v[size_t(lens[b]) * ke], c.Lq * ke * 2);
    }
  }
  if (flip_bit && lens[c.slot] > 0) kv.hk[kv.slot_of(c.slot, lens[c.slot] / 2) * ke + 3] ^= 1;
  kv.upload();
  Step st(kv, c.Lq, q, kn, vn, lens);
  std::set<uint64_t> hashes;
  detail = " B=" + std::to_string(c.B) + " Lq=" + std::to_string(c.Lq) + " t=" + std::to_string(c.t) +
           " page=" + std::to_string(c.ps) + " slot=" + std::to_string(c.slot) + variants_label();
  bool all_same = true;
  for (int v : variants_to_run()) {  // the append rewrites the same keys: idempotent
    set_variant(v);
    st.clear_out();
    for (int r = 0; r < runs; ++r) {
      std::string err;
      if (st.launch(&err) != SB_OK) {
        detail += " status error (" + variant_name(v) + "): " + err;
        return false;
      }
      if (hash) hashes.insert(st.hash());
    }
    std::vector<uint16_t> out;
    std::vector<float> lse;
    st.fetch(c.slot, out, lse, s);
    if (!same_rows(s, tg, c.t - c.Lq + 1, c.Lq, out, lse)) {
      all_same = false;
      detail += " differs under " + variant_name(v);
    }
  }
  if (hash) *hash = hashes.size() == 1 ? *hashes.begin() : 0;
  return all_same;
}

// Decode (and speculative verify) at random positions == forward rows.
// max_nb > 0: neighbours hold at most max_nb + Lq keys (a short cache: with
// T and max_nb + 4 <= 1024 every row sees one split, the case that variants
// other than 0 write from pass 1 without a combine).
void decode_vs_forward(const Shape& s, int T, int trials, uint64_t seed, int max_nb = 0) {
  Target tg = make_target(s, T, seed);
  if (tg.fwd.status != SB_OK) {
    check(false, "forward for " + s.name() + ": " + tg.fwd.error);
    return;
  }
  Rng rng{seed * 31 + 7};
  const int batches[] = {1, 7, 64, 256};
  const int pages[] = {16, 64, 256, 0};
  for (int tr = 0; tr < trials; ++tr) {
    DecodeCase c;
    c.ps = pages[tr % 4];
    c.B = c.ps == 0 ? 1 + rng.below(7) : batches[(tr / 4) % 4];
    if (g_quick) c.B = std::min(c.B, g_small ? 4 : 16);
    c.Lq = tr % 3 == 2 ? 4 : 1;  // every third case: speculative verify of 4 tokens
    c.t = c.Lq - 1 + rng.below(T - c.Lq + 1);
    if (tr == 0) c.t = T - 1;
    c.slot = rng.below(c.B);
    std::string detail;
    const bool ok = run_decode_case(s, tg, c, rng, detail, max_nb > 0 ? max_nb : c.B > 64 ? 1024 : 4096);
    check(ok, "decode == forward row " + s.name() + " T=" + std::to_string(T) + detail);
  }
}

// Chunked prefill: the target fed in chunks through append + attention ==
// the one-shot forward, for a contiguous and a paged cache.
void chunked_prefill(const Shape& s, int T, uint64_t seed) {
  Target tg = make_target(s, T, seed);
  Rng rng{seed + 5};
  const size_t qe = size_t(s.H) * s.D, ke = size_t(s.Hk) * s.D;
  for (int ps : {0, 64}) {
    for (int chunk : {1, 17, 128, 1000}) {
      DeviceKv kv(s, {T}, ps, rng);
      kv.upload();
      bool ok = true;
      std::string err;
      for (int s0 = 0; s0 < T && ok; s0 += chunk) {
        const int e = std::min(T, s0 + chunk), n = e - s0;
        std::vector<uint16_t> q(tg.q.begin() + s0 * qe, tg.q.begin() + e * qe);
        std::vector<uint16_t> kn(tg.k.begin() + s0 * ke, tg.k.begin() + e * ke);
        std::vector<uint16_t> vn(tg.v.begin() + s0 * ke, tg.v.begin() + e * ke);
        Step st(kv, n, q, kn, vn, {s0});
        for (int v : variants_to_run()) {  // the append rewrites the same keys: idempotent
          set_variant(v);
          st.clear_out();
          if (st.launch(&err) != SB_OK) {
            ok = false;
            break;
          }
          std::vector<uint16_t> out;
          std::vector<float> lse;
          st.fetch(0, out, lse, s);
          ok = same_rows(s, tg, s0, n, out, lse);
          if (!ok) {
            err = "first mismatch in chunk at " + std::to_string(s0) + " under " + variant_name(v);
            break;
          }
        }
      }
      check(ok, "chunked prefill == one-shot " + s.name() + " T=" + std::to_string(T) + " chunk=" +
                    std::to_string(chunk) + (ps ? " page=64" : " contiguous") + variants_label() +
                    (ok ? "" : " " + err));
    }
  }
}

// Accuracy of decode rows against fp64 (the forward tests' bounds).
void accuracy(const Shape& s, int T, uint64_t seed) {
  Target tg = make_target(s, T, seed);
  Rng rng{seed + 9};
  for (int t : {0, T / 3, T - 1}) {
    // decode of row t (B = 1, page 16) against fp64 over keys [0, t]
    Problem p;
    p.H = s.H;
    p.Hk = s.Hk;
    p.D = s.D;
    p.dt = s.dt;
    p.softcap = s.softcap;
    p.wl = s.wl;
    p.wr = s.wr;
    p.lq = {1};
    p.lk = {t + 1};
    const size_t qe = size_t(s.H) * s.D, ke = size_t(s.Hk) * s.D;
    Tensors x{std::vector<uint16_t>(tg.q.begin() + t * qe, tg.q.begin() + (t + 1) * qe),
              std::vector<uint16_t>(tg.k.begin(), tg.k.begin() + (t + 1) * ke),
              std::vector<uint16_t>(tg.v.begin(), tg.v.begin() + (t + 1) * ke)};
    Reference ref = reference(p, x);
    DeviceKv kv(s, {t + 1}, 16, rng);
    kv.preload(0, tg.k.data(), tg.v.data(), t);
    kv.upload();
    std::vector<uint16_t> kn(tg.k.begin() + t * ke, tg.k.begin() + (t + 1) * ke);
    std::vector<uint16_t> vn(tg.v.begin() + t * ke, tg.v.begin() + (t + 1) * ke);
    Step st(kv, 1, x.q, kn, vn, {t});
    for (int v : variants_to_run()) {
      set_variant(v);
      st.clear_out();
      std::string err;
      Result r;
      r.status = st.launch(&err);
      st.fetch(0, r.out, r.lse, s);
      ErrorStats e = compare(p, r, ref);
      const double max_tol = s.dt == SB_BF16 ? 3e-2 : 5e-3;
      const double fro_tol = s.dt == SB_BF16 ? 1e-2 : 2e-3;
      char buf[200];
      std::snprintf(buf, sizeof buf, " t=%d max_abs=%.3e rel_fro=%.3e lse_max_abs=%.3e nan=%ld", t,
                    e.max_abs, e.rel_fro, e.lse_max_abs, e.nan_count);
      check(r.status == SB_OK && e.nan_count == 0 && e.max_abs <= max_tol && e.rel_fro <= fro_tol &&
                e.lse_max_abs <= 2e-3,
            "decode accuracy vs fp64 " + s.name() + buf + (v == -2 ? "" : " " + variant_name(v)));
    }
  }
}

// 50 runs of one decode batch -> one hash.
void run_invariance(const Shape& s, uint64_t seed) {
  Target tg = make_target(s, 5000, seed);
  Rng rng{seed + 3};
  DecodeCase c{64, 1, 4321, 16, 17};
  std::string detail;
  uint64_t h = 0;
  const int runs = g_quick ? 10 : 50;
  const bool ok = run_decode_case(s, tg, c, rng, detail, 4096, runs, &h);
  check(ok && h != 0, "run invariance " + s.name() + ": " + std::to_string(runs) + " runs -> " +
                          (h != 0 ? "1 hash" : "several hashes") + detail);
}

// Negative control: one bit of one visible key flipped in the cache must
// move the target's output (the bitwise comparison can fail).
void negative_control(const Shape& s, uint64_t seed) {
  Target tg = make_target(s, 3000, seed);
  Rng rng{seed + 1};
  DecodeCase c{7, 1, 2500, 64, 2};
  std::string detail;
  const bool same = run_decode_case(s, tg, c, rng, detail, 4096, 1, nullptr, /*flip_bit=*/true);
  check(!same, "negative control: a one-bit change of a visible cached key is detected " + s.name() +
                   variants_label());
}

// The same decode step captured in a CUDA graph and replayed.
void graph_replay(const Shape& s, uint64_t seed) {
  Target tg = make_target(s, 3000, seed);
  Rng rng{seed + 2};
  const int t = 2999;
  const size_t qe = size_t(s.H) * s.D, ke = size_t(s.Hk) * s.D;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceKv kv(s, {t + 1}, 64, rng);
  kv.preload(0, tg.k.data(), tg.v.data(), t);
  kv.upload();
  std::vector<uint16_t> q(tg.q.begin() + t * qe, tg.q.begin() + (t + 1) * qe);
  std::vector<uint16_t> kn(tg.k.begin() + t * ke, tg.k.begin() + (t + 1) * ke);
  std::vector<uint16_t> vn(tg.v.begin() + t * ke, tg.v.begin() + (t + 1) * ke);
  Step st(kv, 1, q, kn, vn, {t}, stream);
  std::string err;
  bool ok = st.launch(&err) == SB_OK;  // warm up (sizes the library's workspace)
  CUDA_OK(cudaStreamSynchronize(stream));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const sb_status cs = st.launch(&err);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  ok = ok && cs == SB_OK;
  if (ok) {
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 3 && ok; ++r) {
      CUDA_OK(cudaMemset(st.dout, 0xff, qe * 2));
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      std::vector<uint16_t> out;
      std::vector<float> lse;
      st.fetch(0, out, lse, s);
      ok = same_rows(s, tg, t, 1, out, lse);
    }
    cudaGraphExecDestroy(exec);
  }
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  check(ok, "CUDA-graph replay (3x) == forward row " + s.name() + variants_label() + (ok ? "" : " " + err));
}

// The caller-provided workspace (sb_attention_workspace_size,
// sb_attention_forward_ws): sizes, decode == forward with the one-pass and
// the minimum workspace, a workspace too small is refused, a capture with
// no call before it, and two streams with a workspace each.
void caller_workspace(const Shape& s, uint64_t seed) {
  Target tg = make_target(s, 5000, seed);
  Rng rng{seed + 4};
  const size_t qe = size_t(s.H) * s.D, ke = size_t(s.Hk) * s.D;

  // sizes: more rows need more; one row needs the least; the CPU none
  {
    DeviceKv big(s, {5000}, 64, rng, false), small(s, {1000}, 64, rng, false);
    std::vector<uint16_t> q(4 * qe, 0), kn(4 * ke, 0);
    Step a(big, 4, q, kn, kn, {4996}), b(small, 4, q, kn, kn, {996}), c(big, 1, q, kn, kn, {4999});
    size_t a1 = 0, a0 = 0, b1 = 1, b0 = 1, c1 = 0, c0 = 0, cpu1 = 1, cpu0 = 1;
    const bool ok_a = sb_attention_workspace_size(&a.at, &a1, &a0) == SB_OK;
    const bool ok_b = sb_attention_workspace_size(&b.at, &b1, &b0) == SB_OK;
    const bool ok_c = sb_attention_workspace_size(&c.at, &c1, &c0) == SB_OK;
    sb_attention_params cpu = a.at;
    cpu.device = SB_CPU;
    const bool ok_cpu = sb_attention_workspace_size(&cpu, &cpu1, &cpu0) == SB_OK;
    check(ok_a && ok_b && ok_c && ok_cpu && a0 > 0 && a1 > a0 && c1 == c0 && c1 == a0 && b0 > 0 &&
              b1 > b0 && b0 < a0 && cpu1 == 0 && cpu0 == 0,
          "workspace size: one pass " + std::to_string(a1) + " > least " + std::to_string(a0) +
              " for 4 rows; 1 row: " + std::to_string(c1) + "; one split, 4 rows: " + std::to_string(b1) +
              "; cpu: " + std::to_string(cpu1));
    // too small, and NULL with a size: refused with a message naming it
    const sb_status small_st = sb_attention_forward_ws(&a.at, a.dq, a0 - 1);
    const std::string msg = sb_last_error();
    const sb_status null_st = sb_attention_forward_ws(&a.at, nullptr, 64);
    check(small_st == SB_INVALID_ARGUMENT && msg.find("workspace") != std::string::npos &&
              null_st == SB_INVALID_ARGUMENT,
          "workspace below the minimum is refused: " + msg);
  }

  // decode (and verify) == forward rows with the caller's workspace
  for (int mode : {1, 2}) {
    g_ws_mode = mode;
    int i = 0;
    for (int ps : {16, 64, 0})
      for (int Lq : {1, 4}) {
        DecodeCase c{ps == 0 ? 3 : 7, Lq, (i++ % 2) ? 4999 : 1500 + rng.below(3000), ps, 1};
        std::string detail;
        const bool ok = run_decode_case(s, tg, c, rng, detail);
        check(ok, std::string("caller workspace (") + (mode == 1 ? "one pass" : "least, misaligned") +
                      ") decode == forward row " + s.name() + detail);
      }
  }
  g_ws_mode = 0;

  // captured at once (no call before the capture), replayed
  {
    g_ws_mode = 1;
    const int t = 4777;
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    DeviceKv kv(s, {t + 1}, 32, rng);
    kv.preload(0, tg.k.data(), tg.v.data(), t);
    kv.upload();
    std::vector<uint16_t> q(tg.q.begin() + t * qe, tg.q.begin() + (t + 1) * qe);
    std::vector<uint16_t> kn(tg.k.begin() + t * ke, tg.k.begin() + (t + 1) * ke);
    std::vector<uint16_t> vn(tg.v.begin() + t * ke, tg.v.begin() + (t + 1) * ke);
    Step st(kv, 1, q, kn, vn, {t}, stream);
    g_ws_mode = 0;
    std::string err;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const sb_status cs = st.launch(&err);
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    bool ok = cs == SB_OK;
    if (ok) {
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      for (int r = 0; r < 3 && ok; ++r) {
        CUDA_OK(cudaMemset(st.dout, 0xff, qe * 2));
        CUDA_OK(cudaGraphLaunch(exec, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        std::vector<uint16_t> out;
        std::vector<float> lse;
        st.fetch(0, out, lse, s);
        ok = same_rows(s, tg, t, 1, out, lse);
      }
      cudaGraphExecDestroy(exec);
    }
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    check(ok, "caller workspace: captured with no call before, replayed (3x) == forward row " + s.name() +
                  (ok ? "" : " " + err));
  }

  // two streams at once, a workspace each, 20 steps each, interleaved
  {
    g_ws_mode = 1;
    cudaStream_t st2[2];
    const int ts[2] = {4100, 3333};
    std::vector<std::unique_ptr<DeviceKv>> kvs;
    std::vector<std::unique_ptr<Step>> steps;
    for (int j = 0; j < 2; ++j) {
      CUDA_OK(cudaStreamCreateWithFlags(&st2[j], cudaStreamNonBlocking));
      const int t = ts[j];
      kvs.emplace_back(new DeviceKv(s, {t + 1}, 64, rng));
      kvs[j]->preload(0, tg.k.data(), tg.v.data(), t);
      kvs[j]->upload();
      std::vector<uint16_t> q(tg.q.begin() + t * qe, tg.q.begin() + (t + 1) * qe);
      std::vector<uint16_t> kn(tg.k.begin() + t * ke, tg.k.begin() + (t + 1) * ke);
      std::vector<uint16_t> vn(tg.v.begin() + t * ke, tg.v.begin() + (t + 1) * ke);
      steps.emplace_back(new Step(*kvs[j], 1, q, kn, vn, {t}, st2[j]));  // the append rewrites the same key
    }
    g_ws_mode = 0;
    bool ok = true;
    std::string err;
    for (int r = 0; r < 20 && ok; ++r)
      for (int j = 0; j < 2; ++j) ok = ok && steps[j]->launch(&err) == SB_OK;
    for (int j = 0; j < 2 && ok; ++j) {
      std::vector<uint16_t> out;
      std::vector<float> lse;
      steps[j]->fetch(0, out, lse, s);
      ok = same_rows(s, tg, ts[j], 1, out, lse);
      if (!ok) err = "stream " + std::to_string(j) + " differs";
    }
    steps.clear();
    kvs.clear();
    for (auto x : st2) cudaStreamDestroy(x);
    check(ok, "caller workspace: two streams at once == forward rows " + s.name() + (ok ? "" : " " + err));
  }
}

// ---------------------------------------------------------------- benchmark
// Kernel-only timing of the attention call (sb_attention_forward_ws with a
// caller workspace of the one-pass size: no append, no allocation, no
// workspace query), for every schedule in --variants, at batch 1..256 x
// context 1k, 2k, 4k, 8k, 16k, ..., 128k (batch x context <= 8M tokens),
// 64 query heads over 8 KV heads, d128, bf16, page 64 with the pages
// scattered.
// Method (one CUDA stream): per repetition and variant, a 256 MiB memset
// that flushes L2, an event, the call (or, with --graph, the replay of a
// CUDA graph that captured the call, so host launch cost is not timed),
// an event; the median of --reps repetitions, variants interleaved so
// drift hits all alike. Bytes = the K and V bytes the sequences own (read
// once). Copy bandwidth: a 2 GiB device-to-device cudaMemcpy, read + write
// bytes over its median time. K/V hold random finite values, and the
// variants' out and lse are compared bitwise at every shape.
struct BenchOptions {
  std::vector<int> variants{0, 4};
  bool graph = false;
  int reps = 20;
  double max_tokens = 8.0 * 1024 * 1024;
  int short_by = 0;  // --short N: every sequence holds context - N keys (a partial last block)
};

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Fills n bytes of device memory with a random pattern of finite values
// (bf16 in [-2, 2)), 64 MiB from the host then doubled device to device.
void fill_random(void* dst, size_t n, Rng& rng) {
  const size_t chunk = std::min(n, size_t(64) << 20);
  auto vals = rng.values(chunk / 2, SB_BF16, 2.f);
  CUDA_OK(cudaMemcpy(dst, vals.data(), chunk / 2 * 2, cudaMemcpyHostToDevice));
  size_t done = chunk / 2 * 2;
  while (done < n) {
    const size_t m = std::min(done, n - done);
    CUDA_OK(cudaMemcpy(static_cast<char*>(dst) + done, dst, m, cudaMemcpyDeviceToDevice));
    done += m;
  }
}

void bench(const BenchOptions& o) {
  Shape s;
  s.H = 64;
  s.Hk = 8;
  s.D = 128;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  void *flush, *a, *b;
  const size_t fbytes = size_t(256) << 20, cbytes = size_t(2) << 30;
  CUDA_OK(cudaMalloc(&flush, fbytes));
  CUDA_OK(cudaMalloc(&a, cbytes));
  CUDA_OK(cudaMalloc(&b, cbytes));
  std::vector<float> ct;
  for (int r = 0; r < 10; ++r) {
    CUDA_OK(cudaEventRecord(e0, stream));
    CUDA_OK(cudaMemcpyAsync(b, a, cbytes, cudaMemcpyDeviceToDevice, stream));
    CUDA_OK(cudaEventRecord(e1, stream));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    ct.push_back(ms);
  }
  cudaFree(a);
  cudaFree(b);
  const double copy_gbs = 2.0 * cbytes / (median(ct) * 1e-3) / 1e9;
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; copy bandwidth: %.0f GB/s (2 GiB D2D, read + write)\n", prop.name,
              prop.multiProcessorCount, copy_gbs);
  std::printf("method: attention call only (sb_attention_forward_ws), %s, L2 flushed before each, median of %d; "
              "keys per sequence: context - %d\n",
              o.graph ? "CUDA graph replay" : "direct launch", o.reps, o.short_by);
  std::printf("| batch | context |");
  for (int v : o.variants) std::printf(" %s us | %s GB/s | %s %% copy |", variant_name(v).c_str(),
                                       variant_name(v).c_str(), variant_name(v).c_str());
  std::printf(" bits equal |\n|---|---|");
  for (size_t i = 0; i < o.variants.size(); ++i) std::printf("---|---|---|");
  std::printf("---|\n");
  std::fflush(stdout);
  Rng rng{42};
  bool all_equal = true;
  for (int B : {1, 4, 16, 64, 256})
    for (int ctx : {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072}) {
      if (double(B) * ctx > o.max_tokens) continue;  // 8M tokens: 32 GiB of K/V
      DeviceKv kv(s, std::vector<int>(B, ctx), 64, rng, /*mirror=*/false);
      fill_random(kv.dk, kv.pool_elems * 2, rng);
      fill_random(kv.dv, kv.pool_elems * 2, rng);
      const size_t qe = size_t(s.H) * s.D, ke = size_t(s.Hk) * s.D;
      std::vector<uint16_t> q = rng.values(B * qe, s.dt, 2.f), kn = rng.values(B * ke, s.dt, 2.f),
                            vn = rng.values(B * ke, s.dt, 2.f);
      std::vector<int32_t> lens(B, ctx - 1 - o.short_by);
      const int saved_mode = g_ws_mode;
      g_ws_mode = 1;  // caller workspace of the one-pass size
      Step st(kv, 1, q, kn, vn, lens, stream);
      g_ws_mode = saved_mode;
      std::string err;
      if (st.launch(&err) != SB_OK) {  // append the token (and a first call)
        std::printf("| %d | %d | error: %s |\n", B, ctx, err.c_str());
        continue;
      }
      const size_t nv = o.variants.size();
      std::vector<cudaGraphExec_t> execs(nv, nullptr);
      std::vector<uint64_t> hashes(nv, 0);
      bool ok = true;
      for (size_t j = 0; j < nv && ok; ++j) {
        set_variant(o.variants[j]);
        CUDA_OK(cudaMemsetAsync(st.dout, 0xff, B * qe * 2, stream));
        ok = sb_attention_forward_ws(&st.at, st.ws, st.ws_bytes) == SB_OK;  // warm up
        CUDA_OK(cudaStreamSynchronize(stream));
        hashes[j] = st.hash();
        if (ok && o.graph) {
          cudaGraph_t g = nullptr;
          CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
          ok = sb_attention_forward_ws(&st.at, st.ws, st.ws_bytes) == SB_OK;
          CUDA_OK(cudaStreamEndCapture(stream, &g));
          if (ok) CUDA_OK(cudaGraphInstantiate(&execs[j], g, 0));
          if (g) cudaGraphDestroy(g);
        }
      }
      if (!ok) {
        std::printf("| %d | %d | error: %s |\n", B, ctx, sb_last_error());
        set_variant(-1);
        continue;
      }
      std::vector<std::vector<float>> times(nv);
      for (int r = 0; r < o.reps; ++r)
        for (size_t j = 0; j < nv; ++j) {
          set_variant(o.variants[j]);
          CUDA_OK(cudaMemsetAsync(flush, r, fbytes, stream));
          CUDA_OK(cudaEventRecord(e0, stream));
          if (o.graph)
            CUDA_OK(cudaGraphLaunch(execs[j], stream));
          else
            sb_attention_forward_ws(&st.at, st.ws, st.ws_bytes);
          CUDA_OK(cudaEventRecord(e1, stream));
          CUDA_OK(cudaEventSynchronize(e1));
          float ms;
          CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
          times[j].push_back(ms);
        }
      set_variant(-1);
      bool equal = true;
      for (size_t j = 1; j < nv; ++j) equal = equal && hashes[j] == hashes[0];
      all_equal = all_equal && equal;
      const double bytes = 2.0 * B * double(ctx - o.short_by) * ke * 2;
      std::printf("| %d | %d |", B, ctx);
      for (size_t j = 0; j < nv; ++j) {
        const double sec = median(times[j]) * 1e-3;
        std::printf(" %.1f | %.0f | %.0f |", sec * 1e6, bytes / sec / 1e9, 100.0 * bytes / sec / 1e9 / copy_gbs);
      }
      std::printf(" %s |\n", equal ? "yes" : "NO");
      std::fflush(stdout);
      for (auto x : execs)
        if (x) cudaGraphExecDestroy(x);
    }
  cudaFree(flush);
  cudaStreamDestroy(stream);
  std::printf("bench: variants' out and lse bitwise equal at every shape: %s\n", all_equal ? "yes" : "NO");
  if (!all_equal) ++g_failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* f = std::getenv("SAMEBITS_DECODE_FOLD")) g_fold_env = strdup(f);
  bool do_bench = false;
  BenchOptions bo;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") g_quick = true;
    if (arg == "--small") g_small = g_quick = true;
    if (arg == "--bench") do_bench = true;
    if (arg == "--graph") bo.graph = true;
    if (arg == "--reps" && has_value) bo.reps = std::max(1, std::atoi(argv[++i]));
    if (arg == "--max-tokens" && has_value) bo.max_tokens = std::atof(argv[++i]);
    if (arg == "--short" && has_value) bo.short_by = std::max(0, std::atoi(argv[++i]));
    if (arg == "--variant" && has_value) set_variant(parse_variant(argv[++i]));  // every call of this run
    if (arg == "--variants" && has_value) {  // bench: the schedules to compare; tests: to run each check under
      bo.variants = parse_variants(argv[++i]);
      g_variants = bo.variants;
    }
  }
  if (!sb_cuda_supported(0)) {
    std::printf("no sm90 device: skipped\n");
    return 0;
  }
  if (do_bench) {
    bench(bo);
    return g_failures ? 1 : 0;
  }
  const char* variant_env = std::getenv("SAMEBITS_DECODE_VARIANT");
  std::printf("decode schedule: SAMEBITS_DECODE_VARIANT=%s SAMEBITS_DECODE_FOLD=%s%s\n",
              variant_env ? variant_env : "(unset: auto)", g_fold_env ? g_fold_env : "(unset: 1)",
              g_variants.empty() ? "" : (", every check under" + variants_label()).c_str());
  std::printf("samebits %s, sm90 KV-cache attention tests%s\n", sb_version(), g_quick ? " (quick)" : "");

  // The main configuration: long contexts, every page size and batch.
  Shape main_shape;  // bf16 d128, GQA 4:1, causal
  if (g_small) {  // every page size, decode and verify, each head dim; one hand-loaded last block each
    decode_vs_forward(main_shape, 3000, 6, 1);
    for (int D : {64, 256}) {
      Shape s;
      s.D = D;
      s.H = 4;
      s.Hk = 1;
      decode_vs_forward(s, 2000, 3, 10 + D);
    }
    std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
    return g_failures ? 1 : 0;
  }
  decode_vs_forward(main_shape, g_quick ? 20000 : 131072, g_quick ? 8 : 16, 1);
  Shape gqa8 = main_shape;
  gqa8.H = 16;
  gqa8.Hk = 2;
  decode_vs_forward(gqa8, 9000, g_quick ? 4 : 8, 2);
  // Every (head dim, dtype) and the mask variants at moderate lengths.
  for (int D : {64, 128, 256})
    for (sb_dtype dt : {SB_BF16, SB_F16}) {
      Shape s;
      s.D = D;
      s.dt = dt;
      s.H = 4;
      s.Hk = 1;
      decode_vs_forward(s, 5000, g_quick ? 4 : 8, 10 + D + dt);
      decode_vs_forward(s, 1000, g_quick ? 2 : 4, 70 + D + dt, 996);  // one split per row
      if (D == 128 || !g_quick) chunked_prefill(s, 2500, 20 + D + dt);
      accuracy(s, 3000, 30 + D + dt);
    }
  // One split per row (cache capacity <= 1024 keys): every variant (but 0
  // at d 256) writes out and lse from pass 1 (direct_out), no combine.
  decode_vs_forward(main_shape, 1000, g_quick ? 8 : 16, 60, 996);
  decode_vs_forward(gqa8, 1000, g_quick ? 4 : 8, 61, 996);
  chunked_prefill(main_shape, 1000, 62);
  Shape win = main_shape;
  win.wl = 700;
  decode_vs_forward(win, 9000, g_quick ? 4 : 8, 40);
  Shape win_short = main_shape;
  win_short.wl = 100;
  decode_vs_forward(win_short, 1000, 4, 63, 996);
  Shape cap = main_shape;
  cap.softcap = 30.f;
  decode_vs_forward(cap, 9000, g_quick ? 4 : 8, 41);
  chunked_prefill(cap, 2500, 42);
  Shape mqa = main_shape;
  mqa.H = 8;
  mqa.Hk = 1;
  mqa.D = 256;
  decode_vs_forward(mqa, 5000, 4, 44);

  run_invariance(main_shape, 50);  // with --variants: one hash over all runs of all of them
  // Checks that capture graphs or set up their own calls: once per schedule.
  const std::vector<int> all = g_variants;
  for (int v : variants_to_run()) {
    if (!all.empty()) g_variants = {v};
    set_variant(v);
    graph_replay(main_shape, 51);
    caller_workspace(main_shape, 53);
    negative_control(main_shape, 52);
  }
  g_variants = all;

  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "ALL PASSED", g_failures);
  return g_failures ? 1 : 0;
}
