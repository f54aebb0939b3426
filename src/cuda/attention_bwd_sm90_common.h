// sm90 attention backward: the pieces the three kernels share.
//  - cp.async tile loads into the 128B-swizzled chunk layout that wgmma
//    reads (rows past a sequence end are zero-filled, never read),
//  - the score functor: P, and the softcap chain rule factor, from a raw
//    dot product (docs/numerics.md "Backward", sm90 exponent form),
//  - the visibility of (query row, key) pairs,
//  - the static round-robin work walker (grid and order are FREE),
//  - wgmma issue helpers for the four matrix products of the backward.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <type_traits>

#include "cuda/attention_bwd_sm90_params.h"
#include "cuda/sm90_primitives.h"
#include "cuda/wgmma_ops_sm90.h"

namespace samebits::cuda::sm90::bwd {

// ---------------------------------------------------------------- cp.async
// 4 bytes global -> shared (one f32 of a row vector); src_bytes = 0 writes
// a zero and reads nothing.
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, bool valid) {
  const uint32_t n = valid ? 4u : 0u;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr(dst)), "l"(src),
               "r"(n)
               : "memory");
}
// (cp_async_16, cp_async_commit, cp_async_wait, load_tile: sm90_primitives.h)

// ---------------------------------------------------------------- numerics
// (pack2: sm90_primitives.h)
template <bool kBf16>
__device__ __forceinline__ float load_elem(const void* base, int64_t idx) {
  const uint16_t u = static_cast<const uint16_t*>(base)[idx];
  if constexpr (kBf16) {
    return __bfloat162float(__ushort_as_bfloat16(u));
  } else {
    return __half2float(__ushort_as_half(u));
  }
}

// P and the softcap factor of one (row, key) from the raw dot product s
// (numerics.md "Logits", "Backward", and the sm90 exponent form):
//   no softcap, c > 0 (raw):  P = exp2(fma(s, c, -lse2))
//   softcap:                  h = tanh(s * (scale / cap)), t = h * (cap * log2e),
//                             P = exp2(fma(t, 1, -lse2))
//   no softcap, c <= 0:       t = s * c, P = exp2(fma(t, 1, -lse2))
// Every product is rounded on its own (intrinsics: never contracted).
struct BwdScore {
  float scale_log2, softcap_in, softcap_out;
  bool softcap, raw;
  __device__ __forceinline__ explicit BwdScore(const AttentionBwdParams& p)
      : scale_log2(p.scale_log2),
        softcap_in(p.softcap_in),
        softcap_out(p.softcap_out),
        softcap(p.has_softcap != 0),
        raw(p.has_softcap == 0 && p.scale_log2 > 0.f) {}

  __device__ __forceinline__ float h(float s) const { return tanh_approx(__fmul_rn(s, softcap_in)); }
  // P from the raw score (visible pairs only).
  __device__ __forceinline__ float p(float s, float lse2) const {
    if (raw) return exp2_approx(__fmaf_rn(s, scale_log2, -lse2));
    const float t = softcap ? __fmul_rn(h(s), softcap_out) : __fmul_rn(s, scale_log2);
    return exp2_approx(__fmaf_rn(t, 1.f, -lse2));
  }
  // G from P, dP, D and the raw score:
  //   dS = P * (dP - D);  G = softcap ? dS * (1 - h * h) : dS
  __device__ __forceinline__ float g(float pv, float dp, float d, float s) const {
    const float ds = __fmul_rn(pv, __fsub_rn(dp, d));
    if (!softcap) return ds;
    const float hv = h(s);
    return __fmul_rn(ds, __fsub_rn(1.f, __fmul_rn(hv, hv)));
  }
};

// Bottom-right aligned window over one sequence (numerics.md
// "Visibility"): query row i sits at key position pos = i + lk - lq and
// sees key j iff i < lq, 0 <= j < lk, pos - j <= left (left >= 0) and
// j - pos <= right (right >= 0). Differences, not sums, so no window bound
// overflows.
struct BwdVisibility {
  int lq, lk, left, right;
  __device__ __forceinline__ int pos(int i) const { return i + lk - lq; }
  __device__ __forceinline__ bool visible(int i, int j) const {
    const int ps = pos(i);
    return i < lq && j < lk && (left < 0 || ps - j <= left) && (right < 0 || j - ps <= right);
  }
  // Keys [lo, hi] that some row of [i0, i1] (rows < lq) sees; hi < lo: none.
  __device__ __forceinline__ void keys_of_rows(int i0, int i1, int& lo, int& hi) const {
    i1 = min(i1, lq - 1);
    if (i1 < i0 || lk <= 0) {
      lo = 0;
      hi = -1;
      return;
    }
    const int64_t l = left < 0 ? 0 : int64_t(pos(i0)) - left;
    const int64_t h = right < 0 ? int64_t(lk) - 1 : int64_t(pos(i1)) + right;
    lo = static_cast<int>(l < 0 ? 0 : l);
    hi = static_cast<int>(h > lk - 1 ? lk - 1 : h);
  }
  // Rows [lo, hi] that see some key of [j0, j1] (keys < lk); hi < lo: none.
  __device__ __forceinline__ void rows_of_keys(int j0, int j1, int& lo, int& hi) const {
    j1 = min(j1, lk - 1);
    if (j1 < j0 || lq <= 0) {
      lo = 0;
      hi = -1;
      return;
    }
    const int64_t off = int64_t(lk) - lq;
    const int64_t l = right < 0 ? 0 : int64_t(j0) - right - off;
    const int64_t h = left < 0 ? int64_t(lq) - 1 : int64_t(j1) + left - off;
    lo = static_cast<int>(l < 0 ? 0 : l);
    hi = static_cast<int>(h > lq - 1 ? lq - 1 : h);
  }
  // The rows [lo, hi] that see key j (hi < lo: none), so that a mask is
  // two compares: visible(i, j) == (lo <= i && i <= hi) for every i >= 0.
  __device__ __forceinline__ void rows_of_key(int j, int& lo, int& hi) const {
    const int64_t off = int64_t(lk) - lq;
    int64_t l = right < 0 ? 0 : int64_t(j) - right - off;
    int64_t h = left < 0 ? int64_t(lq) - 1 : int64_t(j) + left - off;
    if (j >= lk) {
      l = 1;
      h = 0;
    }
    lo = static_cast<int>(l < 0 ? 0 : (l > lq ? lq : l));
    hi = static_cast<int>(h > lq - 1 ? lq - 1 : (h < -1 ? -1 : h));
  }
  // The keys [lo, hi] that row i sees: visible(i, j) == (lo <= j && j <= hi)
  // for every j >= 0.
  __device__ __forceinline__ void keys_of_row(int i, int& lo, int& hi) const {
    const int64_t ps = int64_t(i) + lk - lq;
    int64_t l = left < 0 ? 0 : ps - left;
    int64_t h = right < 0 ? int64_t(lk) - 1 : ps + right;
    if (i >= lq) {
      l = 1;
      h = 0;
    }
    lo = static_cast<int>(l < 0 ? 0 : (l > lk ? lk : l));
    hi = static_cast<int>(h > lk - 1 ? lk - 1 : (h < -1 ? -1 : h));
  }
  // Whether every row of [i0, i0 + m) sees every key of [j0, j0 + n).
  __device__ __forceinline__ bool all_visible(int i0, int m, int j0, int n) const {
    return i0 + m <= lq && j0 + n <= lk && (left < 0 || pos(i0 + m - 1) - j0 <= left) &&
           (right < 0 || j0 + n - 1 - pos(i0) <= right);
  }
};

// ---------------------------------------------------------------- work walker
// Static walk over units numbered sequence by sequence, then head by head,
// then tile by tile (ascending): CTA c takes units c, c + grid, ... (the v3
// kernels: zigzag_unit below).
// Units must be asked for in increasing order (a cursor over sequences).
// Which CTA computes a unit, and when, never moves a bit: each unit's
// sums are complete inside the CTA.
struct Walker {
  int b = 0;
  long before = 0;  // units of sequences < b

  // kByKeys: tiles over a sequence's stored keys, else over its query rows.
  template <bool kByKeys>
  __device__ bool get(const AttentionBwdParams& p, long unit, int heads, int tile_rows, int& bb,
                      int& head, int& tile) {
    while (b < p.batch) {
      int len;
      if (kByKeys)
        len = p.cu_seqlens_k ? p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b] : p.seqlen_k;
      else
        len = p.cu_seqlens_q ? p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b] : p.seqlen_q;
      const int tiles = (len + tile_rows - 1) / tile_rows;
      const long units = static_cast<long>(tiles) * heads;
      if (unit < before + units) {
        const long r = unit - before;
        bb = b;
        head = static_cast<int>(r / tiles);
        tile = static_cast<int>(r % tiles);
        return true;
      }
      before += units;
      ++b;
    }
    return false;
  }
};

// FREE. The unit a persistent CTA takes in its `round`-th step: rounds of
// gridDim.x consecutive units, every other round walked backwards. Units are
// numbered so that the work falls along a (sequence, head) under a causal
// mask (dK/dV: key blocks from 0; dQ: query tiles from the last), so a CTA
// that takes a long unit in one round takes a short one in the next; plain
// round-robin would give some CTAs the long units of every round. Each
// CTA's units increase (Walker needs that): two steps differ by at least 1.
// Packed (varlen) batches keep plain round-robin: their sequences' lengths
// differ, so there is no period to pair (packed = true).
__device__ __forceinline__ long zigzag_unit(uint32_t round, bool packed) {
  const long g = gridDim.x, c = blockIdx.x;
  return static_cast<long>(round) * g + ((round & 1) && !packed ? g - 1 - c : c);
}

// ---------------------------------------------------------------- wgmma
// acc (64 x N) = A (64 x d, K-major) * B^T (B: N x d, K-major), d / 16
// k steps ascending over d. Both operands in the swizzled chunk layout; a
// chunk of A (B) is a_chunk (b_chunk) bytes; k step ks reads chunk ks / 4
// at byte offset (ks % 4) * 32. Issued and committed as one group.
template <int N, int kD, bool kBf16>
__device__ __forceinline__ void issue_ss(float (&acc)[N / 2], uint32_t a_addr, uint32_t a_chunk,
                                         uint32_t b_addr, uint32_t b_chunk) {
  const uint32_t la = smem_desc_sw128_lo(a_addr, 16), lb = smem_desc_sw128_lo(b_addr, 16);
  wgmma_fence();
  wgmma_ss_zero<N, kBf16>(acc, smem_desc_sw128_at(la, 1024), smem_desc_sw128_at(lb, 1024));
#pragma unroll
  for (int ks = 1; ks < kD / 16; ++ks) {
    const uint32_t chunk = ks / 4, step = (ks % 4) * 32;
    wgmma_ss<N, kBf16>(acc, smem_desc_sw128_at(la + ((chunk * a_chunk + step) >> 4), 1024),
                       smem_desc_sw128_at(lb + ((chunk * b_chunk + step) >> 4), 1024), 1);
  }
  wgmma_commit();
}

// The same product with A from registers (the held operand: K, V in the
// dK/dV pass's held form, loaded once per unit by load_held):
// A's k16 fragment ks holds the values the SS form's step ks reads from
// shared memory, the B descriptor and the k order are the SS form's, so
// each accumulator sees the same products in the same order.
template <int N, int kD, bool kBf16>
__device__ __forceinline__ void issue_rs_held(float (&acc)[N / 2], const uint32_t (&a)[kD / 16][4],
                                              uint32_t b_addr, uint32_t b_chunk) {
  const uint32_t lb = smem_desc_sw128_lo(b_addr, 16);
  wgmma_fence();
  wgmma_rsk_zero<N, kBf16>(acc, a[0], smem_desc_sw128_at(lb, 1024));
#pragma unroll
  for (int ks = 1; ks < kD / 16; ++ks) {
    const uint32_t chunk = ks / 4, step = (ks % 4) * 32;
    wgmma_rsk<N, kBf16>(acc, a[ks], smem_desc_sw128_at(lb + ((chunk * b_chunk + step) >> 4), 1024), 1);
  }
  wgmma_commit();
}

// A's k16 fragments (m64k16, this warp's 16 rows) of the 64 x kD operand
// at rows row0 .. row0 + 63 of a swizzled tile of kRows rows (chunks of
// kRows x 128 bytes), by ldmatrix: lanes 8i .. 8i + 7 address matrix i,
// rows (i % 2) 8 .. +7 and columns (i / 2) 8 .. +7 of the step (the
// m16n8k16 A layout, which is wgmma's per warp).
template <int kRows, int kD>
__device__ __forceinline__ void load_held(uint32_t (&a)[kD / 16][4], uint32_t tile_addr, int row0,
                                          int warp, int lane) {
  const int r = row0 + 16 * warp + lane % 8 + ((lane / 8) % 2) * 8;
  const int c8 = lane / 16;
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) {
    const int unit = 2 * (ks % 4) + c8;  // 16-byte unit of the row within its chunk
    ldmatrix_x4(a[ks], tile_addr + (ks / 4) * kRows * 128 + r * 128 + ((unit ^ (r % 8)) << 4));
  }
}

// acc (64 x kD) += A (64 x K, registers, K / 16 k-fragments) * B (K x kD,
// N-major: kD contiguous, the same swizzled chunk layout, chunks of
// b_chunk bytes): K / 16 k steps ascending. Issued and committed as one group.
template <int kK, int kD, bool kBf16>
__device__ __forceinline__ void issue_rs(float (&acc)[kD / 2], const uint32_t (&af)[kK / 16][4],
                                         uint32_t b_addr, uint32_t b_chunk) {
  const uint32_t lb = smem_desc_sw128_lo(b_addr, b_chunk);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk)
    wgmma_rs<kD, kBf16>(acc, af[kk], smem_desc_sw128_at(lb + ((kk * 16 * 128) >> 4), 1024), 1);
  wgmma_commit();
}

// Packs a 64 x K f32 accumulator slice into K / 16 A fragments of
// m64nNk16 (rounding each value to the input dtype): k-fragment kk takes
// accumulator chunks 2kk and 2kk + 1 (registers 8kk .. 8kk + 7).
template <int kK, bool kBf16>
__device__ __forceinline__ void pack_a(const float (&x)[kK / 2], uint32_t (&af)[kK / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    af[kk][0] = pack2<kBf16>(x[8 * kk + 0], x[8 * kk + 1]);
    af[kk][1] = pack2<kBf16>(x[8 * kk + 2], x[8 * kk + 3]);
    af[kk][2] = pack2<kBf16>(x[8 * kk + 4], x[8 * kk + 5]);
    af[kk][3] = pack2<kBf16>(x[8 * kk + 6], x[8 * kk + 7]);
  }
}

// The same from a function of the register index (values computed on the fly).
template <int kK, bool kBf16, class F>
__device__ __forceinline__ void pack_a_fn(const F& f, uint32_t (&af)[kK / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) af[kk][r] = pack2<kBf16>(f(8 * kk + 2 * r), f(8 * kk + 2 * r + 1));
}

template <int N>
__device__ __forceinline__ void fence_regs(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) reg_fence(x[i]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&x)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) reg_fence(x[i][j]);
}

}  // namespace samebits::cuda::sm90::bwd
