// Experiment (not a test, not in ctest): does a chain of mma.sync.m16n8k16
// steps give, bit for bit, the f32 accumulators of the library's wgmma GEMM?
//
// The GEMM's numerics contract (docs/numerics_dense.md) is one fp32
// accumulator per element, zeroed, then one k16 tensor-core step per 16 k in
// increasing k. The sm90 kernels issue each step as wgmma.m64nNk16, whose
// dependent chain costs ~130-160 cycles a step: at M <= 16 the GEMM is bound
// by that latency (K = 4096: 256 steps, ~18 us), not by the weight bytes. A
// warp-level mma.sync.m16n8k16 step has a far shorter latency. If its f32
// result equals wgmma's for every input, a small-M kernel could use it and
// keep every row's bits.
//
// Cases: bf16 and fp16 inputs; K = 64, 4096, 14336; value distributions
//   uniform  U(-1, 1)
//   mixed    signed, exponents 2^-12 .. 2^6
//   wide     signed, exponents over most of the format (bf16 2^-60 .. 2^60,
//            fp16 2^-24 .. 2^15 with subnormals), so alignment and
//            truncation inside a step show up
//   cancel   neighbours k, k+1 nearly cancel (b[k+1] = -b[k], a[k+1] = a[k]
//            plus one ulp now and then): sums close to zero, exposing how
//            low-order bits of the 16 products are kept
//   bigfirst the first k16 step holds values ~2^12, the rest ~2^-8: the
//            accumulator's magnitude dominates every later step
// The wgmma side is sb_gemm with f32 output and alpha = 1 (out = acc
// exactly), every tile entry in turn (SAMEBITS_GEMM_TILE); the mma.sync side
// is the kernel below (operands straight from global memory, no speed).
//
// Also prints the latency of one dependent mma.sync step (clock64 over a
// chain of 1024, one warp) and the SM's mma.sync throughput with 1 to 16
// warps of 4 or 8 independent chains.
//
// Prints per case the elements compared and those whose bits differ, and a
// final ALL EQUAL or DIFF line. Exit code 0 either way; nonzero on a CUDA or
// library error.
//
// Build: the CMake target experiment_mma_sync_vs_wgmma (CUDA builds), or
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -I include -I src -I tests/cuda \
//          tests/cuda/experiment_mma_sync_vs_wgmma.cu -L <build> -lsamebits -o experiment_mma_sync_vs_wgmma
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_fwd_harness.h"
#include "samebits/dense.h"

using sbtest::to16;

// --------------------------------------------------------------- mma.sync side
// One warp computes a 16 x 8 output block: out[m][n] = sum over k16 steps of
// A[m][k] * W[n][k] (A row-major (M, K), W row-major (N, K): the nn.Linear
// layout, which is mma's "col" B). Fragment layout of m16n8k16 (PTX ISA):
// g = lane / 4, t = lane % 4;
//   a: {A[g][2t, 2t+1], A[g+8][2t, 2t+1], A[g][2t+8, +9], A[g+8][2t+8, +9]}
//   b: {W[g][2t, 2t+1], W[g][2t+8, +9]}
//   c: {C[g][2t, 2t+1], C[g+8][2t, 2t+1]}
template <bool kF16>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (kF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

__device__ __forceinline__ uint32_t ld_pair(const uint16_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 16);
}

// grid (N / 8, M / 16), one warp each. K a multiple of 16.
template <bool kF16>
__global__ void mma_sync_gemm(const uint16_t* A, const uint16_t* W, float* out, int M, int N, int K) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.y * 16, n0 = blockIdx.x * 8;
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  const uint16_t* a_lo = A + int64_t(m0 + g) * K;
  const uint16_t* a_hi = A + int64_t(m0 + g + 8) * K;
  const uint16_t* w = W + int64_t(n0 + g) * K;
  for (int k = 0; k < K; k += 16) {
    const uint32_t a[4] = {ld_pair(a_lo + k + 2 * t), ld_pair(a_hi + k + 2 * t), ld_pair(a_lo + k + 2 * t + 8),
                           ld_pair(a_hi + k + 2 * t + 8)};
    const uint32_t b[2] = {ld_pair(w + k + 2 * t), ld_pair(w + k + 2 * t + 8)};
    mma16816<kF16>(c, a, b);
  }
  out[int64_t(m0 + g) * N + n0 + 2 * t] = c[0];
  out[int64_t(m0 + g) * N + n0 + 2 * t + 1] = c[1];
  out[int64_t(m0 + g + 8) * N + n0 + 2 * t] = c[2];
  out[int64_t(m0 + g + 8) * N + n0 + 2 * t + 1] = c[3];
}

// Latency of one dependent mma.sync step: one warp, a chain of kSteps.
__global__ void mma_sync_latency(float* sink, long long* cycles) {
  uint32_t a[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u};
  uint32_t b[2] = {0x3f803f80u, 0x3f803f80u};
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  constexpr int kSteps = 1024;
  mma16816<false>(c, a, b);
  const long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < kSteps; ++i) mma16816<false>(c, a, b);
  const long long t1 = clock64();
  sink[threadIdx.x] = c[0] + c[1] + c[2] + c[3];
  if (threadIdx.x == 0) *cycles = (t1 - t0) / kSteps;
}

// Throughput of mma.sync on one SM: every warp of one CTA runs kChains
// independent accumulators through kSteps steps each. The CTA's span runs
// from a barrier before the first step to a barrier after every warp has
// used its accumulators (so the last steps have completed, not only
// issued). Cycles per step of the SM = span / (warps * kChains * kSteps).
template <int kChains>
__global__ void mma_sync_throughput(float* sink, long long* cycles) {
  // distinct accumulators, so that no two chains compute the same values
  // (ptxas would merge identical chains)
  uint32_t a[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u};
  uint32_t b[2] = {0x3f803f80u, 0x3f803f80u};
  float c[kChains][4];
#pragma unroll
  for (int q = 0; q < kChains; ++q)
#pragma unroll
    for (int e = 0; e < 4; ++e) c[q][e] = sink[threadIdx.x] + float(q * 4 + e);
  constexpr int kSteps = 512;
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kSteps; ++i)
#pragma unroll
    for (int q = 0; q < kChains; ++q) mma16816<false>(c[q], a, b);
  float v = 0.f;
#pragma unroll
  for (int q = 0; q < kChains; ++q) v += c[q][0] + c[q][1] + c[q][2] + c[q][3];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = v;
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

template <int kChains>
void report_throughput(int warps) {
  float* sink;
  long long* cyc;
  CUDA_OK(cudaMalloc(&sink, warps * 32 * 4));
  CUDA_OK(cudaMemset(sink, 0, warps * 32 * 4));
  CUDA_OK(cudaMalloc(&cyc, 8));
  mma_sync_throughput<kChains><<<1, warps * 32>>>(sink, cyc);
  CUDA_OK(cudaDeviceSynchronize());
  long long span = 0;
  CUDA_OK(cudaMemcpy(&span, cyc, 8, cudaMemcpyDeviceToHost));
  const double per_sm = double(span) / (double(warps) * kChains * 512);
  std::printf("throughput: %2d warps x %d chains: %.2f cycles per mma.sync.m16n8k16 on the SM (%.0f MAC/cycle)\n",
              warps, kChains, per_sm, 16 * 8 * 16 / per_sm);
  CUDA_OK(cudaFree(sink));
  CUDA_OK(cudaFree(cyc));
}

// ------------------------------------------------------------------ the cases
enum class Dist { kUniform, kMixed, kWide, kCancel, kBigFirst };
const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kUniform: return "uniform";
    case Dist::kMixed: return "mixed";
    case Dist::kWide: return "wide";
    case Dist::kCancel: return "cancel";
    default: return "bigfirst";
  }
}

float draw(Dist d, bool f16, std::mt19937& rng, int64_t k) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_real_distribution<float> m(1.f, 2.f);
  const float sign = (rng() & 1) ? -1.f : 1.f;
  switch (d) {
    case Dist::kUniform: return u(rng);
    case Dist::kMixed: return sign * std::ldexp(m(rng), int(rng() % 19) - 12);
    case Dist::kWide:
      return f16 ? sign * std::ldexp(m(rng), int(rng() % 39) - 24) : sign * std::ldexp(m(rng), int(rng() % 121) - 60);
    case Dist::kCancel: return sign * std::ldexp(m(rng), int(rng() % 9) - 4);
    default: return k < 16 ? sign * std::ldexp(m(rng), 12 - int(rng() % 3)) : sign * std::ldexp(m(rng), -8 - int(rng() % 6));
  }
}

struct Tally {
  int64_t compared = 0, differ = 0;
};

bool run_case(sb_dtype dt, Dist d, int M, int N, int K, uint32_t seed, const std::vector<std::string>& tiles,
              Tally& total) {
  const bool f16 = dt == SB_F16;
  std::mt19937 rng(seed);
  std::vector<uint16_t> A(size_t(M) * K), W(size_t(N) * K);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) A[size_t(i) * K + k] = to16(draw(d, f16, rng, k), dt);
  for (int j = 0; j < N; ++j)
    for (int k = 0; k < K; ++k) W[size_t(j) * K + k] = to16(draw(d, f16, rng, k), dt);
  if (d == Dist::kCancel) {  // pairs (k, k+1) cancel, now and then one ulp apart
    for (int i = 0; i < M; ++i)
      for (int k = 0; k + 1 < K; k += 2) {
        uint16_t v = A[size_t(i) * K + k];
        if (rng() % 4 == 0) v ^= 1;
        A[size_t(i) * K + k + 1] = v;
      }
    for (int j = 0; j < N; ++j)
      for (int k = 0; k + 1 < K; k += 2) {
        uint16_t v = W[size_t(j) * K + k] ^ 0x8000;
        if (rng() % 4 == 0) v ^= 1;
        W[size_t(j) * K + k + 1] = v;
      }
  }
  uint16_t *dA, *dW;
  float *dRef, *dOut;
  CUDA_OK(cudaMalloc(&dA, A.size() * 2));
  CUDA_OK(cudaMalloc(&dW, W.size() * 2));
  CUDA_OK(cudaMalloc(&dRef, size_t(M) * N * 4));
  CUDA_OK(cudaMalloc(&dOut, size_t(M) * N * 4));
  CUDA_OK(cudaMemcpy(dA, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dW, W.data(), W.size() * 2, cudaMemcpyHostToDevice));
  if (f16)
    mma_sync_gemm<true><<<dim3(N / 8, M / 16), 32>>>(dA, dW, dRef, M, N, K);
  else
    mma_sync_gemm<false><<<dim3(N / 8, M / 16), 32>>>(dA, dW, dRef, M, N, K);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> ref(size_t(M) * N), out(size_t(M) * N);
  CUDA_OK(cudaMemcpy(ref.data(), dRef, ref.size() * 4, cudaMemcpyDeviceToHost));
  bool all = true;
  for (const std::string& tile : tiles) {
    setenv("SAMEBITS_GEMM_TILE", tile.c_str(), 1);
    sb_gemm_params p;
    std::memset(&p, 0, sizeof(p));
    p.dtype = dt;
    p.out_dtype = SB_F32;
    p.bias_dtype = SB_F32;
    p.device = SB_CUDA;
    p.batch = 1;
    p.m = M;
    p.n = N;
    p.k = K;
    p.a = dA;
    p.a_row_stride = K;
    p.b = dW;
    p.b_layout = SB_B_NK;
    p.b_row_stride = K;
    p.alpha = 1.f;
    p.beta = 0.f;
    p.out = dOut;
    p.out_row_stride = N;
    CUDA_OK(cudaMemset(dOut, 0xff, size_t(M) * N * 4));
    const sb_status st = sb_gemm(&p);
    if (st == SB_UNSUPPORTED) {  // a measurement entry this build leaves out
      std::printf("tile=%-8s not in this build (SAMEBITS_GEMM_RESEARCH_TILES=OFF), skipped\n", tile.c_str());
      continue;
    }
    if (st != SB_OK) {
      std::fprintf(stderr, "sb_gemm failed (tile %s): %s\n", tile.c_str(), sb_last_error());
      std::exit(2);
    }
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(out.data(), dOut, out.size() * 4, cudaMemcpyDeviceToHost));
    int64_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i)
      if (std::memcmp(&out[i], &ref[i], 4) != 0) {
        if (differ < 3)
          std::printf("    [%zu] mma.sync %a  wgmma %a\n", i, double(ref[i]), double(out[i]));
        ++differ;
      }
    std::printf("%-4s %-8s M=%d N=%d K=%5d seed=%u tile=%-8s compared %8zu differ %lld\n",
                f16 ? "f16" : "bf16", dist_name(d), M, N, K, seed, tile.c_str(), out.size(), (long long)differ);
    total.compared += int64_t(out.size());
    total.differ += differ;
    all = all && differ == 0;
  }
  unsetenv("SAMEBITS_GEMM_TILE");
  CUDA_OK(cudaFree(dA));
  CUDA_OK(cudaFree(dW));
  CUDA_OK(cudaFree(dRef));
  CUDA_OK(cudaFree(dOut));
  return all;
}

int main() {
  int dev = 0;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess || prop.major != 9) {
    std::fprintf(stderr, "needs an sm90 device\n");
    return 3;
  }
  std::printf("device: %s\n", prop.name);
  {
    float* sink;
    long long* cyc;
    CUDA_OK(cudaMalloc(&sink, 32 * 4));
    CUDA_OK(cudaMalloc(&cyc, 8));
    mma_sync_latency<<<1, 32>>>(sink, cyc);
    CUDA_OK(cudaDeviceSynchronize());
    long long c = 0;
    CUDA_OK(cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost));
    std::printf("latency: one dependent mma.sync.m16n8k16 step = %lld cycles\n", c);
  }
  for (int warps : {1, 4, 8, 16}) {
    report_throughput<4>(warps);
    report_throughput<8>(warps);
  }
  const std::vector<std::string> tiles = {"64x32", "64x64", "128x256", "16x32s", "16x64s", "32x64s"};
  Tally total;
  bool all = true;
  const Dist dists[] = {Dist::kUniform, Dist::kMixed, Dist::kWide, Dist::kCancel, Dist::kBigFirst};
  for (sb_dtype dt : {SB_BF16, SB_F16})
    for (Dist d : dists)
      for (int K : {64, 4096, 14336})
        for (uint32_t seed : {1u, 2u}) all = run_case(dt, d, 64, 256, K, seed * 7919u + uint32_t(K), tiles, total) && all;
  std::printf("total: compared %lld, differ %lld\n", (long long)total.compared, (long long)total.differ);
  std::printf("%s\n", all ? "ALL EQUAL" : "DIFF");
  return 0;
}
