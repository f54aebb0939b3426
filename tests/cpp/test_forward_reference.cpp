// Forward vs an f64 reference, over dtypes, head dims, GQA/MQA, masks,
// softcap, varlen and lengths that cross KV-block and split boundaries.
//
// Tolerance (|err| <= atol + rtol*|ref|), per dtype with eps = its unit
// roundoff (2^-24 f32, 2^-11 f16, 2^-8 bf16): the output is rounded once to
// the dtype (<= eps relative) and P enters P*V rounded to the dtype (each
// weight off by <= eps relative, so the output by <= eps * max|v| ~ 3-4 eps
// for normal inputs); f32 accumulation over <= 2k keys adds ~1e-5. So:
// atol = 8 eps (+1e-5), rtol = 2 eps; the LSE uses unrounded p and is f32:
// atol 2e-5 + 4e-6 relative (log2/exp2 are accurate to ~1 ulp).
#include "test_util.h"

using namespace sbtest;

static double eps_of(sb_dtype dt) { return dt == SB_F32 ? 0x1p-24 : dt == SB_F16 ? 0x1p-11 : 0x1p-8; }

static int g_cases = 0;

static void check_case(const char* name, const Config& c, const std::vector<std::pair<int, int>>& lens,
                       uint64_t seed, float amp = 1.0f) {
  Rng rng(seed);
  std::vector<Seq> seqs;
  for (auto [lq, lk] : lens) seqs.push_back(make_seq(c, lq, lk, rng, amp));
  const bool dense = std::all_of(lens.begin(), lens.end(), [&](auto l) { return l == lens[0]; });
  auto res = run(c, seqs, iota(int(seqs.size())), false, dense);
  const double eps = eps_of(c.dt);
  for (size_t s = 0; s < seqs.size(); ++s) {
    Ref ref = reference(c, seqs[s], false);
    const double wo = worst(res[s].out, ref.out, 8 * eps + 1e-5, 2 * eps);
    const double wl = worst(res[s].lse, ref.lse, 2e-5, 4e-6);
    if (!(wo <= 1.0 && wl <= 1.0)) {
      std::fprintf(stderr, "%s seq %zu: out error %.3g, lse error %.3g (x tolerance)\n", name, s, wo, wl);
      std::exit(1);
    }
  }
  ++g_cases;
}

int main() {
  for (sb_dtype dt : {SB_F32, SB_F16, SB_BF16}) {
    Config c;
    c.dt = dt;
    c.d = 64;
    c.scale = 0.125f;
    check_case("plain", c, {{33, 33}}, 1);
    c.wr = 0;
    check_case("causal", c, {{200, 200}, {200, 200}}, 2);
    check_case("causal, Lq < Lk (bottom-right)", c, {{7, 300}}, 3);
    check_case("causal, Lq > Lk (empty rows)", c, {{40, 9}}, 4);
    c.wl = 50;
    c.wr = 10;
    check_case("window 50/10", c, {{260, 260}}, 5);
    c.wl = -1;
    c.wr = -1;
    c.softcap = 5.0f;
    check_case("softcap", c, {{90, 130}}, 6, 2.0f);
  }
  {
    Config c;  // head dims, incl. the 64-key block above 128
    for (int d : {8, 40, 128, 136, 256}) {
      c.d = d;
      c.scale = 1.0f / std::sqrt(float(d));
      c.wr = 0;
      check_case("head dims", c, {{150, 150}}, 10 + d);
    }
  }
  {
    Config c;  // GQA 4, MQA, varlen mix, and more than two splits
    c.H = 8;
    c.Hk = 2;
    c.wr = 0;
    check_case("gqa 4 varlen", c, {{1, 1}, {17, 140}, {129, 129}, {0, 5}, {3, 0}}, 20);
    c.H = 4;
    c.Hk = 1;
    c.dt = SB_F16;
    check_case("mqa", c, {{64, 64}}, 21);
    c.H = 1;
    c.dt = SB_BF16;
    c.wr = -1;
    check_case("two split boundaries", c, {{40, 2100}}, 22);
    c.wr = 0;
    check_case("causal across splits", c, {{1100, 1100}}, 23);
  }
  std::printf("test_forward_reference: %d cases passed\n", g_cases);
  return 0;
}
