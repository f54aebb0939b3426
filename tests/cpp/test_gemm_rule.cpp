// The sm90 GEMM's tile rule (src/cuda/dense/gemm_tile_configs.h, plain C++,
// so it runs here without a GPU): pick_gemm_tile chooses only entries that
// every build has. The measurement entries (kGemmResearchCfg) are left out
// of the default build (cmake/cuda_dense_sources.cmake); a rule that chose
// one would fail at run time with SB_INTERNAL. Swept: M = 1 .. 20000 (every
// M to 4096, then steps of 7), N of the common layers and a few odd ones,
// batch 1 and 3, the SM counts of an H100 SXM and PCIe and an H200.
// Negative control: the research entries are recognised as such, so the
// check can fail. Then a few picks the H100 measurements settled (one
// round of tiles where the first choice needs several), pinned so that a
// change of the rule that moves them is seen.
#include <cstdio>
#include <initializer_list>

#include "cuda/dense/gemm_tile_configs.h"
#include "test_util.h"

using namespace samebits::cuda::dense::sm90;

int main() {
  // Negative control: these are research entries, the rule's are not.
  for (GemmTile t : {GemmTile::T128x128pp, GemmTile::T128x256m2, GemmTile::T192x192, GemmTile::T192x128,
                     GemmTile::T64x256, GemmTile::T32x64s, GemmTile::T128x128m2, GemmTile::T128x128ppm2})
    CHECK(gemm_tile_research(t));
  for (GemmTile t : {GemmTile::T128x256, GemmTile::T192x192w3, GemmTile::T192x128w3, GemmTile::T64x128, GemmTile::T64x96,
                     GemmTile::T16x32s, GemmTile::T64x128c2})
    CHECK(!gemm_tile_research(t));

  const int64_t ns[] = {1, 8, 64, 96, 520, 1000, 1024, 2048, 4096, 5120, 8192, 11008, 14336, 28672, 128256};
  long picks = 0;
  for (int sms : {114, 132})
    for (int64_t batch : {int64_t(1), int64_t(3)})
      for (int64_t n : ns)
        for (int64_t m = 1; m <= 20000; m += (m < 4096 ? 1 : 7)) {
          const GemmTile t = pick_gemm_tile(m, n, batch, sms);
          if (gemm_tile_research(t)) {
            std::fprintf(stderr, "pick_gemm_tile(m=%lld, n=%lld, batch=%lld, sms=%d) = %s, a measurement entry\n",
                         (long long)m, (long long)n, (long long)batch, sms, gemm_tile_name(t));
            return 1;
          }
          ++picks;
        }
  std::printf("gemm rule: %ld picks, none a measurement entry\n", picks);

  // One round of tiles where the rule's first choice needs several
  // (twenty-eighth session, measured on an H100, 132 SMs;
  // docs/benchmarks_dense.md): the picks it made there, and the case it
  // must leave alone (a tile taller than M does not replace one that is
  // not: 80 x 11008 stays on 64x64).
  struct Pick {
    int64_t m, n;
    GemmTile want;
  };
  const Pick pinned[] = {{40, 5120, GemmTile::T64x64},     {128, 6144, GemmTile::T64x128},
                         {128, 11008, GemmTile::T128x96},  {80, 18944, GemmTile::T128x160},
                         {80, 11008, GemmTile::T64x64},    {256, 6144, GemmTile::T128x96},
                         {192, 11008, GemmTile::T128x168}, {384, 14336, GemmTile::T128x168},
                         {192, 4096, GemmTile::T64x96},    {128, 4096, GemmTile::T64x64},
                         {64, 4096, GemmTile::T64x32},     {1, 14336, GemmTile::T16x112s},
                         {16, 14336, GemmTile::T16x112s},  {1, 128256, GemmTile::T16x64s},
                         {1, 4096, GemmTile::T16x32s}};
  for (const Pick& q : pinned) {
    const GemmTile t = pick_gemm_tile(q.m, q.n, 1, 132);
    if (t != q.want) {
      std::fprintf(stderr, "pick_gemm_tile(m=%lld, n=%lld, 1, 132) = %s, the measured pick: %s\n",
                   (long long)q.m, (long long)q.n, gemm_tile_name(t), gemm_tile_name(q.want));
      return 1;
    }
  }
  std::printf("gemm rule: %zu measured picks as expected\n", sizeof(pinned) / sizeof(pinned[0]));
  return 0;
}
