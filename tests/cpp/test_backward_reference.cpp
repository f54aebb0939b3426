// Backward vs the f64 reference gradient (the f64 forward, exact softmax).
//
// Tolerance: dq/dk/dv are sums over up to a few hundred terms whose
// operands P and G are rounded to the dtype (eps relative each: 2^-24 f32,
// 2^-11 f16, 2^-8 bf16), with out also rounded before D_i = dout . out, and
// the result rounded once more. Errors therefore scale with eps times the
// typical gradient magnitude: atol = 24 eps * rms(ref), rtol = 4 eps (f32:
// plus the 1e-5-level f32 accumulation error of the forward, atol >= 2e-5).
#include "test_util.h"

using namespace sbtest;

static double eps_of(sb_dtype dt) { return dt == SB_F32 ? 0x1p-24 : dt == SB_F16 ? 0x1p-11 : 0x1p-8; }

static double rms(const std::vector<double>& x) {
  double s = 0;
  for (double e : x) s += e * e;
  return x.empty() ? 0 : std::sqrt(s / double(x.size()));
}

static int g_cases = 0;

static void check_case(const char* name, const Config& c, const std::vector<std::pair<int, int>>& lens,
                       uint64_t seed, float amp = 1.0f) {
  Rng rng(seed);
  std::vector<Seq> seqs;
  for (auto [lq, lk] : lens) seqs.push_back(make_seq(c, lq, lk, rng, amp));
  const bool dense = std::all_of(lens.begin(), lens.end(), [&](auto l) { return l == lens[0]; });
  auto res = run(c, seqs, iota(int(seqs.size())), true, dense);
  const double eps = eps_of(c.dt);
  for (size_t s = 0; s < seqs.size(); ++s) {
    Ref ref = reference(c, seqs[s], true);
    const char* names[3] = {"dq", "dk", "dv"};
    const std::vector<float>* got[3] = {&res[s].dq, &res[s].dk, &res[s].dv};
    const std::vector<double>* want[3] = {&ref.dq, &ref.dk, &ref.dv};
    for (int t = 0; t < 3; ++t) {
      const double atol = std::max(24 * eps * rms(*want[t]), c.dt == SB_F32 ? 2e-5 : 1e-6);
      const double w = worst(*got[t], *want[t], atol, 4 * eps);
      if (!(w <= 1.0)) {
        std::fprintf(stderr, "%s seq %zu: %s error %.3g x tolerance (rms %.3g)\n", name, s, names[t], w,
                     rms(*want[t]));
        std::exit(1);
      }
    }
  }
  ++g_cases;
}

int main() {
  for (sb_dtype dt : {SB_F32, SB_F16, SB_BF16}) {
    Config c;
    c.dt = dt;
    c.d = 64;
    check_case("plain", c, {{48, 48}}, 1);
    c.wr = 0;
    check_case("causal", c, {{150, 150}, {150, 150}}, 2);
    check_case("causal Lq<Lk and Lq>Lk", c, {{5, 140}, {30, 9}}, 3);
    c.wl = 30;
    c.wr = 5;
    check_case("window", c, {{160, 160}}, 4);
    c.wl = c.wr = -1;
    c.softcap = 4.0f;
    check_case("softcap", c, {{70, 90}}, 5, 1.5f);
  }
  {
    Config c;
    c.H = 8;
    c.Hk = 2;
    c.wr = 0;
    check_case("gqa 4 varlen", c, {{1, 1}, {20, 150}, {131, 131}, {0, 6}}, 10);
    c.H = 3;
    c.Hk = 1;
    c.d = 136;
    c.scale = 0.0857f;
    check_case("mqa d136", c, {{70, 200}}, 11);
    c.d = 256;
    c.H = c.Hk = 1;
    check_case("d256", c, {{90, 90}}, 12);
  }
  std::printf("test_backward_reference: %d cases passed\n", g_cases);
  return 0;
}
