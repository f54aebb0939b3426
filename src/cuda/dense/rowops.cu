// sm90 row kernels of the dense ops: RMSNorm forward/backward, softmax /
// log_softmax forward/backward, sum / mean over the last dim.
//
// One CTA of kRowThreads threads per row. The reduction order of a row
// (docs/numerics_dense.md, "row reductions on sm90") is a function of the
// column count alone: element j belongs to thread t = (j / V) % kRowThreads,
// where V = 16 / sizeof(input dtype); each thread adds its elements in
// increasing j, then a warp xor-butterfly (offsets 16, 8, 4, 2, 1) and a
// sequential sum of the kRowThreads / 32 warp totals, warp 0 first. Rows
// never interact, so the row count and the grid do not enter any result.
//
// Two implementations of that one order:
// - register kernels (*_reg_kernel), rows of at most kMaxRegVecs vectors per
//   thread: a thread loads its NV vectors of the row (slot c holds elements
//   [j0, j0 + V), j0 = (c * kRowThreads + t) * V) once, all loads of the CTA
//   issued before any reduction or store, keeps them in registers for every
//   pass, and writes 16-byte vectors. A CTA runs kRowsPerCta rows side by
//   side (each row its own tree; one barrier pair serves them all) so that a
//   thread has about 64 bytes of each input in flight.
// - loop kernels (*_loop_kernel), longer rows: every pass re-reads the row.
// - RMSNorm backward with dw, where dw_fused_pays(rows, cols): one kernel computes
//   dx and the dw chunk partials from one read of x and dy
//   (rmsnorm_bwd_fused_kernel); the split kernels give the same bits. Both
//   end in one fold of the chunk partials (rmsnorm_dw_fold_kernel).
// Loads and stores are 16-byte vectors when the row start is aligned (else
// scalar accesses of the same elements, with the same arithmetic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/backend.h"
#include "cuda/dense/dense_cuda.h"
#include "cuda/dense/dtype.cuh"
#include "cuda/kernel_attributes.h"

namespace samebits::cuda::dense {
namespace {

constexpr int kRowThreads = 256;  // BITS: shapes the per-row reduction tree
constexpr int kWarps = kRowThreads / 32;
constexpr int kChunk = SB_RMSNORM_DW_CHUNK;
constexpr int kColThreads = 128;  // FREE: threads per CTA of the dw kernels
// FREE: the dw fold (rmsnorm_dw_fold_kernel): a CTA of kFoldWarps warps
// owns 32 columns (128 CTAs at N = 4096, one per SM); every warp loads
// kFoldLoads chunk partials of them per round, 16 KiB of partials in flight
// per CTA. The fold's loads are L2 hits bound by latency: the previous fold
// (one warp per CTA, a thread per column, 32 loads in flight per thread:
// 4 KiB per CTA) made dw (with dx) 1.04-1.20x slower at N = 1024..8192,
// M >= 4096 on the H100. Only warp 0 adds, so the CTA shape changes no bit.
constexpr int kFoldWarps = 8;
constexpr int kFoldLoads = 16;
constexpr int kFoldRound = kFoldWarps * kFoldLoads;  // chunks per round
constexpr int kMaxRegVecs = 8;    // FREE: longest row kept in registers, in vectors per thread

// FREE: rows per CTA of the register kernels, for NV vectors per thread of
// each of kInputs row inputs: about 64 bytes in flight per thread, at most 2
// rows (rows never interact).
template <int NV, int kInputs>
constexpr int kRowsPerCta = 4 / (NV * kInputs) >= 2 ? 2 : 1;
// FREE: CTAs per SM the register kernels are compiled for (launch bounds),
// i.e. a register cap of 64 per thread up to NV = 2, then 128; 255 for the
// longest rows of two inputs (no spills at these caps, nvcc 13.0): about
// 32-64 KiB of loads in flight per SM whatever the row length.
template <int NV, int kInputs>
constexpr int kMinCtasPerSm = NV <= 2 ? 4 : (NV == 4 || kInputs == 1) ? 2 : 1;
// FREE: rows per CTA of RMSNorm forward without a residual. kRowsPerCta
// counts the inputs the kernel may load; a forward without a residual loads
// x alone and then waits on the barrier and the weight like one with a
// residual, so at kRowsPerCta<NV, 1> rows it has half the loads of
// add_rms_norm in flight per CTA for the same fixed cost per CTA (measured
// on the H100 at N = 4096: 0.80-0.84 of copy against add_rms_norm's 0.96).
// These entries give it add_rms_norm's bytes per thread: 128 (4 rows of
// 2 vectors at N = 4096 bf16; 2 rows of 4; 1 row of 8).
template <int NV>
constexpr int kRowsPerCtaNoRes = NV <= 2 ? 4 : NV == 4 ? 2 : 1;

template <class T>
struct Vec {
  static constexpr int V = 16 / sizeof(T);
};

// V elements of E in registers, as one (or two) 16-byte words, or one 8-byte
// word for 4 x 16-bit.
template <class E, int V>
struct alignas(V * sizeof(E) >= 16 ? 16 : V * sizeof(E)) Pack {
  E e[V];
};

__host__ __device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// Elements [j0, j0 + V) of `row`; those >= n read as +0. `vec`: row is
// 16-byte aligned.
template <class E, int V>
__device__ __forceinline__ Pack<E, V> load_pack(const E* row, int64_t j0, int64_t n, bool vec) {
  constexpr int kBytes = V * sizeof(E);
  static_assert(kBytes % 16 == 0 || kBytes == 8, "a pack is 8, 16 or 32 bytes");
  Pack<E, V> q;
  if (vec && j0 + V <= n) {
    if constexpr (kBytes % 16 == 0) {
#pragma unroll
      for (int k = 0; k < kBytes / 16; ++k)
        reinterpret_cast<uint4*>(q.e)[k] = reinterpret_cast<const uint4*>(row + j0)[k];
    } else {
      *reinterpret_cast<uint2*>(q.e) = *reinterpret_cast<const uint2*>(row + j0);
    }
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) q.e[v] = j0 + v < n ? row[j0 + v] : from_float<E>(0.0f);
  }
  return q;
}

// Pack of from_float<E>(f[v]) for every v. For 16-bit E, two elements per
// conversion (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32: each half rounded to
// nearest even exactly as from_float rounds it, so the bits are the same; one
// instruction for two elements where ptxas otherwise converts each element
// on its own and then merges the halves).
template <class E, int V>
__device__ __forceinline__ Pack<E, V> pack_floats(const float (&f)[V]) {
  Pack<E, V> q;
  if constexpr (std::is_same_v<E, __nv_bfloat16> && V % 2 == 0) {
#pragma unroll
    for (int v = 0; v < V; v += 2) reinterpret_cast<__nv_bfloat162*>(q.e)[v / 2] = __floats2bfloat162_rn(f[v], f[v + 1]);
  } else if constexpr (std::is_same_v<E, __half> && V % 2 == 0) {
#pragma unroll
    for (int v = 0; v < V; v += 2) reinterpret_cast<__half2*>(q.e)[v / 2] = __floats2half2_rn(f[v], f[v + 1]);
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) q.e[v] = from_float<E>(f[v]);
  }
  return q;
}

// Stores the elements of q that are < n at row[j0...]. kStreaming: the
// 16-byte stores marked streaming (st.global.cs: evict first), for outputs
// no later step of the kernel reads: the fused RMSNorm backward's dx (H100:
// 0.3-2.4 us faster at 4096-8192 x 4096-8192, docs/benchmarks_dense.md,
// forty-first session). Same values either way.
template <class E, int V, bool kStreaming = false>
__device__ __forceinline__ void store_pack(E* row, int64_t j0, int64_t n, bool vec, const Pack<E, V>& q) {
  constexpr int kBytes = V * sizeof(E);
  if (vec && j0 + V <= n) {
    if constexpr (kBytes % 16 == 0) {
#pragma unroll
      for (int k = 0; k < kBytes / 16; ++k) {
        const uint4 w = reinterpret_cast<const uint4*>(q.e)[k];
        if constexpr (kStreaming)
          __stcs(reinterpret_cast<uint4*>(row + j0) + k, w);
        else
          reinterpret_cast<uint4*>(row + j0)[k] = w;
      }
    } else {
      *reinterpret_cast<uint2*>(row + j0) = *reinterpret_cast<const uint2*>(q.e);
    }
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) row[j0 + v] = q.e[v];
  }
}

// Hides q's value from the compiler (emits no instruction). Called after a
// barrier on the packs a later pass reads again: the fp32 conversions made
// before the barrier cannot be reused after it, so only the packed words stay
// live across it (half the registers for 16-bit types). Values are unchanged.
template <class E, int V>
__device__ __forceinline__ void launder(Pack<E, V>& q) {
  uint32_t* w = reinterpret_cast<uint32_t*>(q.e);
#pragma unroll
  for (int k = 0; k < int(V * sizeof(E) / 4); ++k) asm volatile("" : "+r"(w[k]));
}

template <class E, int V, int R, int NV>
__device__ __forceinline__ void launder(Pack<E, V> (&q)[R][NV]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int c = 0; c < NV; ++c) launder(q[i][c]);
}

// First element of this thread's slot c (see top).
template <int V>
__device__ __forceinline__ int64_t slot_j0(int c) {
  return (int64_t(c) * kRowThreads + threadIdx.x) * V;
}

// The NV packs of this thread of row `row` (stride `stride` elements) of
// `base`; every element reads as +0 when n == 0 (a row past the end).
template <class E, int V, int NV>
__device__ __forceinline__ void load_row(Pack<E, V> (&dst)[NV], const void* base, int64_t row, int64_t stride,
                                         int64_t n) {
  const E* x = static_cast<const E*>(base) + row * stride;
#pragma unroll
  for (int c = 0; c < NV; ++c) dst[c] = load_pack<E, V>(x, slot_j0<V>(c), n, aligned16(x));
}

// The fixed CTA tree (see top) over the threads' partial sums of R rows at
// once; row i's tree touches only v[i] and red[i]. The leading barrier lets
// the function be called repeatedly on the same `red`.
// kLeadingBarrier false: without the leading barrier, for a caller that
// alternates two `red` buffers (rmsnorm_bwd_fused_kernel: step k uses
// red[k % 2]). A thread writes red[k % 2] in step k + 2 only after the
// barrier of step k + 1, which every thread reaches after its reads of step
// k: one barrier a step. The tree, and so every bit, is the same.
template <int R, bool kLeadingBarrier = true>
__device__ __forceinline__ void block_sum(float (&v)[R], float (*red)[kWarps]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int o = 16; o >= 1; o /= 2) v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], o));
  if constexpr (kLeadingBarrier) __syncthreads();  // previous readers of `red` are done
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int i = 0; i < R; ++i) red[i][threadIdx.x / 32] = v[i];
  __syncthreads();  // warp totals visible to every thread
#pragma unroll
  for (int i = 0; i < R; ++i) {
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s = __fadd_rn(s, red[i][w]);
    v[i] = s;
  }
}

template <int R>
__device__ __forceinline__ void block_max(float (&v)[R], float (*red)[kWarps]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int o = 16; o >= 1; o /= 2) v[i] = fmaxf(v[i], __shfl_xor_sync(0xffffffffu, v[i], o));
  __syncthreads();  // previous readers of `red` are done
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int i = 0; i < R; ++i) red[i][threadIdx.x / 32] = v[i];
  __syncthreads();  // warp maxima visible to every thread
#pragma unroll
  for (int i = 0; i < R; ++i) {
    float s = red[i][0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) s = fmaxf(s, red[i][w]);
    v[i] = s;
  }
}

// One row: single-row forms of the trees for the loop kernels.
__device__ __forceinline__ float block_sum1(float v, float (*red)[kWarps]) {
  float a[1] = {v};
  block_sum<1>(a, red);
  return a[0];
}

__device__ __forceinline__ float block_max1(float v, float (*red)[kWarps]) {
  float a[1] = {v};
  block_max<1>(a, red);
  return a[0];
}

// ---------------------------------------------------------------- register kernels
// Row i of the CTA is row blockIdx.x * R + i; a row past the last one reads
// nothing (n_i = 0), takes part in the barriers and writes nothing.
// Every kernel loads all its row inputs (x, residual, dy, y) before its
// first store: outputs may alias them (in-place ops), so each element is read
// before the same thread overwrites it. Only the weight, never an output, is
// read after a store.

// R rows per CTA; kRes: the residual code is compiled in (used when
// p.residual is set; the kRes = false form ignores p.residual).
template <class T, class TW, int NV, int R, bool kRes>
__global__ void __launch_bounds__(kRowThreads, kMinCtasPerSm<NV, 1>)
    rmsnorm_fwd_reg_kernel(const __grid_constant__ sb_rmsnorm_params p) {
  constexpr int V = Vec<T>::V;
  __shared__ float red[R][kWarps];
  const int64_t n = p.cols, r0 = int64_t(blockIdx.x) * R;
  const bool has_res = kRes && p.residual != nullptr;
  const TW* w = static_cast<const TW*>(p.weight);
  Pack<T, V> h[R][NV], rv[kRes ? R : 1][kRes ? NV : 1];
  // loads: x, residual
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t ni = r0 + i < p.rows ? n : 0;
    load_row(h[i], p.x, r0 + i, p.x_row_stride, ni);
    if constexpr (kRes) {
      if (has_res) load_row(rv[i], p.residual, r0 + i, p.residual_row_stride, ni);
    }
  }
  if constexpr (!kRes) {
    // this thread's weight lines into L1 while x is in flight: the weight is
    // read after the barrier, slot by slot with the stores in between, and
    // an L2 round trip there per slot left the CTA with no loads in flight
    // (H100, 13th session: 1.00-1.04x at N >= 2048, 4096 x 4096 bf16 27.8 ->
    // 27.3 us; holding it in registers instead, 0.94-1.21x, spills at
    // R = 4; bench/results/2026-11-22_h100_s13_rows_wpf/)
    if (w)
#pragma unroll
      for (int c = 0; c < NV; ++c)
        if (slot_j0<V>(c) < n) asm volatile("prefetch.global.L1 [%0];" ::"l"(w + slot_j0<V>(c)));
  }
  // h = round(x + residual), the rounded sum is normalized; sum of squares
  float ss[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    ss[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;  // the slot holds no element of the row
      if constexpr (kRes) {
        if (has_res) {
#pragma unroll
          for (int v = 0; v < V; ++v)
            if (j0 + v < n) h[i][c].e[v] = from_float<T>(__fadd_rn(to_float(h[i][c].e[v]), to_float(rv[i][c].e[v])));
          if (r0 + i < p.rows) {
            T* ho = static_cast<T*>(p.residual_out) + (r0 + i) * p.residual_out_row_stride;
            store_pack<T, V>(ho, j0, n, aligned16(ho), h[i][c]);
          }
        }
      }
#pragma unroll
      for (int v = 0; v < V; ++v) {  // tail lanes add +0
        const float hv = to_float(h[i][c].e[v]);
        ss[i] = __fadd_rn(ss[i], __fmul_rn(hv, hv));
      }
    }
  }
  block_sum<R>(ss, red);
  launder(h);
  if constexpr (!kRes) {
    // slot by slot, each weight vector used by the R rows then dropped (4
    // registers live instead of 4 NV: no spills at R = 4 under the 64-register
    // cap of kMinCtasPerSm); the same arithmetic per element as below
    float rstd[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      rstd[i] = __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(ss[i], float(n)), p.eps)));
      if (p.rstd && threadIdx.x == 0 && r0 + i < p.rows) p.rstd[r0 + i] = rstd[i];
    }
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
      Pack<TW, V> wc;
      if (w) wc = load_pack<TW, V>(w, j0, n, aligned16(w));  // an L1 hit (prefetched above)
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const int64_t r = r0 + i;
        if (r >= p.rows) continue;
        T* y = static_cast<T*>(p.y) + r * p.y_row_stride;
        float o[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          float a = __fmul_rn(to_float(h[i][c].e[v]), rstd[i]);
          if (w) a = __fmul_rn(a, to_float(wc.e[v]));
          o[v] = a;
        }
        store_pack<T, V>(y, j0, n, aligned16(y), pack_floats<T, V>(o));
      }
    }
    return;
  }
  // the weight (an L2 hit after the first CTAs) is loaded here, not held
  // across the barrier
  Pack<TW, V> wv[NV];
  if (w)
    load_row(wv, w, 0, 0, n);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t r = r0 + i;
    if (r >= p.rows) continue;
    const float rstd = __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(ss[i], float(n)), p.eps)));
    if (p.rstd && threadIdx.x == 0) p.rstd[r] = rstd;
    T* y = static_cast<T*>(p.y) + r * p.y_row_stride;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
      float o[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float a = __fmul_rn(to_float(h[i][c].e[v]), rstd);
        if (w) a = __fmul_rn(a, to_float(wv[c].e[v]));
        o[v] = a;
      }
      store_pack<T, V>(y, j0, n, aligned16(y), pack_floats<T, V>(o));
    }
  }
}

template <class T, class TW, int NV>
__global__ void __launch_bounds__(kRowThreads, kMinCtasPerSm<NV, 2>)
    rmsnorm_bwd_dx_reg_kernel(const __grid_constant__ sb_rmsnorm_backward_params p) {
  constexpr int V = Vec<T>::V, R = kRowsPerCta<NV, 2>;
  __shared__ float red[R][kWarps];
  const int64_t n = p.cols, r0 = int64_t(blockIdx.x) * R;
  const TW* w = static_cast<const TW*>(p.weight);
  Pack<T, V> xv[R][NV], dv[R][NV];
  Pack<TW, V> wv[NV];
  float rstd[R];
  // loads: x, dy, rstd, weight
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const bool live = r0 + i < p.rows;
    const int64_t ni = live ? n : 0;
    const T* x = static_cast<const T*>(p.x) + (r0 + i) * p.x_row_stride;
    const T* dy = static_cast<const T*>(p.dy) + (r0 + i) * p.dy_row_stride;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      xv[i][c] = load_pack<T, V>(x, slot_j0<V>(c), ni, aligned16(x));
      dv[i][c] = load_pack<T, V>(dy, slot_j0<V>(c), ni, aligned16(dy));
    }
    rstd[i] = live ? p.rstd[r0 + i] : 0.0f;
  }
  if (w)
    load_row(wv, w, 0, 0, n);
  // sum of g * xhat
  float s[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float d = to_float(dv[i][c].e[v]);
        const float g = (w && j0 + v < n) ? __fmul_rn(d, to_float(wv[c].e[v])) : d;
        s[i] = __fadd_rn(s[i], __fmul_rn(g, __fmul_rn(to_float(xv[i][c].e[v]), rstd[i])));
      }
    }
  }
  block_sum<R>(s, red);
  launder(xv);
  launder(dv);
  // the weight is read again (an L1 hit) rather than held across the barrier
  if (w)
    load_row(wv, w, 0, 0, n);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t r = r0 + i;
    if (r >= p.rows) continue;
    const float mean_gx = __fdiv_rn(s[i], float(n));
    T* dx = static_cast<T*>(p.dx) + r * p.dx_row_stride;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
      float o[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float d = to_float(dv[i][c].e[v]);
        const float g = w ? __fmul_rn(d, to_float(wv[c].e[v])) : d;
        const float xh = __fmul_rn(to_float(xv[i][c].e[v]), rstd[i]);
        o[v] = __fmul_rn(rstd[i], __fsub_rn(g, __fmul_rn(xh, mean_gx)));
      }
      store_pack<T, V>(dx, j0, n, aligned16(dx), pack_floats<T, V>(o));
    }
  }
}

// LOG: log_softmax. exp(x - mx) is computed once per element and kept for
// the softmax output (the same value the sum used: expf is a pure function).
template <class TX, class TY, int NV, bool LOG>
__global__ void __launch_bounds__(kRowThreads, kMinCtasPerSm<NV, 1>)
    softmax_fwd_reg_kernel(const __grid_constant__ sb_softmax_params p) {
  constexpr int V = Vec<TX>::V, R = kRowsPerCta<NV, 1>;
  __shared__ float red[R][kWarps];
  const int64_t n = p.cols, r0 = int64_t(blockIdx.x) * R;
  Pack<TX, V> xv[R][NV];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t ni = r0 + i < p.rows ? n : 0;
    load_row(xv[i], p.x, r0 + i, p.x_row_stride, ni);
  }
  float mx[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    mx[i] = -INFINITY;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (j0 + v < n) mx[i] = fmaxf(mx[i], to_float(xv[i][c].e[v]));
    }
  }
  block_max<R>(mx, red);  // exact: max is order-free
  launder(xv);
  float s[R], e[LOG ? 1 : R][LOG ? 1 : NV][V];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    if (mx[i] == -INFINITY) mx[i] = 0.0f;
    s[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float ev = expf(__fsub_rn(to_float(xv[i][c].e[v]), mx[i]));
        if constexpr (!LOG) e[i][c][v] = ev;
        if (j0 + v < n) s[i] = __fadd_rn(s[i], ev);
      }
    }
  }
  block_sum<R>(s, red);
  if constexpr (LOG) launder(xv);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t r = r0 + i;
    if (r >= p.rows) continue;
    TY* y = static_cast<TY*>(p.y) + r * p.y_row_stride;
    const float ls = logf(s[i]), inv = __frcp_rn(s[i]);
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
      float o[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if constexpr (LOG) o[v] = __fsub_rn(__fsub_rn(to_float(xv[i][c].e[v]), mx[i]), ls);
        else o[v] = __fmul_rn(e[i][c][v], inv);
      }
      store_pack<TY, V>(y, j0, n, aligned16(y), pack_floats<TY, V>(o));
    }
  }
}

template <class TY, class TD, int NV>
__global__ void __launch_bounds__(kRowThreads, kMinCtasPerSm<NV, 2>)
    softmax_bwd_reg_kernel(const __grid_constant__ sb_softmax_backward_params p) {
  constexpr int V = Vec<TY>::V, R = kRowsPerCta<NV, 2>;
  __shared__ float red[R][kWarps];
  const int64_t n = p.cols, r0 = int64_t(blockIdx.x) * R;
  Pack<TY, V> yv[R][NV], dv[R][NV];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t ni = r0 + i < p.rows ? n : 0;
    const TY* y = static_cast<const TY*>(p.y) + (r0 + i) * p.y_row_stride;
    const TY* dy = static_cast<const TY*>(p.dy) + (r0 + i) * p.dy_row_stride;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      yv[i][c] = load_pack<TY, V>(y, slot_j0<V>(c), ni, aligned16(y));
      dv[i][c] = load_pack<TY, V>(dy, slot_j0<V>(c), ni, aligned16(dy));
    }
  }
  float s[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      if (slot_j0<V>(c) >= n) continue;
#pragma unroll
      for (int v = 0; v < V; ++v) {  // tail lanes add +0
        const float d = to_float(dv[i][c].e[v]);
        s[i] = __fadd_rn(s[i], p.log ? d : __fmul_rn(d, to_float(yv[i][c].e[v])));
      }
    }
  }
  block_sum<R>(s, red);
  launder(yv);
  launder(dv);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t r = r0 + i;
    if (r >= p.rows) continue;
    TD* dx = static_cast<TD*>(p.dx) + r * p.dx_row_stride;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
      float o[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const float yf = to_float(yv[i][c].e[v]), d = to_float(dv[i][c].e[v]);
        o[v] = p.log ? __fsub_rn(d, __fmul_rn(expf(yf), s[i])) : __fmul_rn(yf, __fsub_rn(d, s[i]));
      }
      store_pack<TD, V>(dx, j0, n, aligned16(dx), pack_floats<TD, V>(o));
    }
  }
}

template <class TX, class TY, int NV>
__global__ void __launch_bounds__(kRowThreads, kMinCtasPerSm<NV, 1>)
    reduce_reg_kernel(const __grid_constant__ sb_reduce_params p) {
  constexpr int V = Vec<TX>::V, R = kRowsPerCta<NV, 1>;
  __shared__ float red[R][kWarps];
  const int64_t n = p.cols, r0 = int64_t(blockIdx.x) * R;
  Pack<TX, V> xv[R][NV];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int64_t ni = r0 + i < p.rows ? n : 0;
    load_row(xv[i], p.x, r0 + i, p.x_row_stride, ni);
  }
  float s[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    s[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      if (slot_j0<V>(c) >= n) continue;
#pragma unroll
      for (int v = 0; v < V; ++v) s[i] = __fadd_rn(s[i], to_float(xv[i][c].e[v]));  // tail lanes add +0
    }
  }
  block_sum<R>(s, red);
  if (threadIdx.x == 0)
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (r0 + i >= p.rows) continue;
      const float si = p.op == SB_REDUCE_MEAN ? __fdiv_rn(s[i], float(n)) : s[i];
      static_cast<TY*>(p.y)[(r0 + i) * p.y_stride] = from_float<TY>(si);
    }
}

// ---------------------------------------------------------------- RMSNorm dw
// dw partials: CTA (column block, chunk c); a thread owns V adjacent columns
// and adds dy * xhat over the chunk's rows in increasing row order, one
// accumulator per column.
template <class T>
__global__ void __launch_bounds__(kColThreads)
    rmsnorm_dw_partial_kernel(const __grid_constant__ sb_rmsnorm_backward_params p) {
  constexpr int V = Vec<T>::V;
  const int64_t j0 = (int64_t(blockIdx.x) * kColThreads + threadIdx.x) * V, c = blockIdx.y, n = p.cols;
  if (j0 >= n) return;
  const int64_t r0 = c * kChunk, r1 = min(p.rows, r0 + kChunk);
  const T* x = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  // every row start 16-byte aligned
  const bool vec = aligned16(x) && aligned16(dy) && p.x_row_stride % V == 0 && p.dy_row_stride % V == 0;
  float acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = 0.0f;
#pragma unroll 8
  for (int64_t r = r0; r < r1; ++r) {
    const Pack<T, V> xv = load_pack<T, V>(x + r * p.x_row_stride, j0, n, vec);
    const Pack<T, V> dv = load_pack<T, V>(dy + r * p.dy_row_stride, j0, n, vec);
    const float rs = p.rstd[r];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const float xh = __fmul_rn(to_float(xv.e[v]), rs);
      acc[v] = __fadd_rn(acc[v], __fmul_rn(to_float(dv.e[v]), xh));
    }
  }
  float* ws = p.workspace + c * n;
#pragma unroll
  for (int k = 0; k < V / 4; ++k) {  // float4 quarters of the V columns
    Pack<float, 4> q;
#pragma unroll
    for (int v = 0; v < 4; ++v) q.e[v] = acc[4 * k + v];
    store_pack<float, 4>(ws, j0 + 4 * k, n, aligned16(ws), q);
  }
}

// dw[j] = left fold of the chunk partials, chunk 0 first: acc = +0, then
// acc = acc + partial of chunk 0, 1, 2, ... (one __fadd_rn each), in lane
// j % 32 of one warp of the CTA that folds column slice j / 32 (32 columns:
// CTA j / 32 of the fold kernel, or a CTA of the fused kernel after its grid
// barrier). kSlices (1 or 2) slices at once, slice0 and slice0 + step: warp
// s adds slice s, the other warps only load (two: one L2 round trip and two
// adding warps where the fused kernel's CTA folds two slices; every
// column's chain is the same). Round b brings chunks [b * kFoldRound,
// (b + 1) * kFoldRound) of every slice into buf's half b % 2, laid out
// [slice][chunk in round][column] (warp w chunks b * kFoldRound +
// w * kFoldLoads + u, u < kFoldLoads, a chunk past the end reads +0 and is
// not added); the adding warps add them in chunk order while the loads of
// round b + 1 are in flight.
template <class TW, int kSlices = 1>
__device__ __forceinline__ void dw_fold_columns(const sb_rmsnorm_backward_params& p, int64_t chunks, int64_t slice0,
                                                int64_t step, float* buf) {
  static_assert(kSlices >= 1 && kSlices <= kFoldWarps, "a warp adds each slice");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t j[kSlices];
  bool col[kSlices];
#pragma unroll
  for (int s = 0; s < kSlices; ++s) {
    j[s] = (slice0 + s * step) * 32 + lane;
    col[s] = j[s] < p.cols;
  }
  float v[kSlices][kFoldLoads];  // this thread's partials of the next round, in flight
  auto load = [&](int64_t base) {
#pragma unroll
    for (int s = 0; s < kSlices; ++s)
#pragma unroll
      for (int u = 0; u < kFoldLoads; ++u) {
        const int64_t c = base + warp * kFoldLoads + u;
        // L2 loads: in the fused kernel other CTAs wrote the partials
        v[s][u] = col[s] && c < chunks ? __ldcg(p.workspace + c * p.cols + j[s]) : 0.0f;
      }
  };
  load(0);
  float acc = 0.0f;
  const int64_t rounds = (chunks + kFoldRound - 1) / kFoldRound;
  for (int64_t b = 0; b < rounds; ++b) {  // uniform over the CTA
    float* cur = buf + (b & 1) * kSlices * kFoldRound * 32;
#pragma unroll
    for (int s = 0; s < kSlices; ++s)
#pragma unroll
      for (int u = 0; u < kFoldLoads; ++u) cur[(s * kFoldRound + warp * kFoldLoads + u) * 32 + lane] = v[s][u];
    // all warps produce round b's partials in cur, the adding warps consume
    // them below. The stores above overwrite the half they read in round
    // b - 2, which they finished before arriving here in round b - 1: one
    // barrier per round suffices
    __syncthreads();
    if (b + 1 < rounds) load((b + 1) * kFoldRound);  // in flight during the adds below
    if (warp < kSlices) {
      const int cnt = int(min(int64_t(kFoldRound), chunks - b * kFoldRound));
      const float* mine = cur + warp * kFoldRound * 32 + lane;
#pragma unroll 16
      for (int c = 0; c < cnt; ++c) acc = __fadd_rn(acc, mine[c * 32]);
    }
  }
  if (warp < kSlices && col[warp]) static_cast<TW*>(p.dw)[j[warp]] = from_float<TW>(acc);
}

template <class TW>
__global__ void __launch_bounds__(kFoldWarps * 32)
    rmsnorm_dw_fold_kernel(const __grid_constant__ sb_rmsnorm_backward_params p, int64_t chunks) {
  __shared__ float buf[2][kFoldRound][32];  // [round parity][chunk in round][column]
  dw_fold_columns<TW>(p, chunks, blockIdx.x, 0, &buf[0][0][0]);
}

// The previous release's fold, for SAMEBITS_ROWS_LEGACY=1 only: the same
// left fold, one thread per column, kColThreads columns per CTA, 32 loads in
// flight per thread.
template <class TW>
__global__ void __launch_bounds__(kColThreads)
    rmsnorm_dw_fold_legacy_kernel(const __grid_constant__ sb_rmsnorm_backward_params p, int64_t chunks) {
  const int64_t j = int64_t(blockIdx.x) * kColThreads + threadIdx.x;
  if (j >= p.cols) return;
  float acc = 0.0f;
#pragma unroll 32
  for (int64_t c = 0; c < chunks; ++c) acc = __fadd_rn(acc, p.workspace[c * p.cols + j]);
  static_cast<TW*>(p.dw)[j] = from_float<TW>(acc);
}

// ---------------------------------------------------------------- RMSNorm backward, dx + dw fused
// One CTA per dw chunk (kChunk rows, aligned at row 0): it computes dx of the
// chunk's rows exactly as rmsnorm_bwd_dx_reg_kernel does (the same per-row
// tree) and, from the same x and dy values, the chunk's dw partial exactly as
// rmsnorm_dw_partial_kernel does (one fp32 accumulator per column, rows added
// in increasing order from +0). x and dy are read once instead of twice, and
// the partials and the fold are unchanged, so dw keeps its bits. kFold: the
// launch is cooperative (every CTA resident, chunks <= resident CTAs); each
// CTA adds its last rows' dw terms, stores its partial and arrives at the
// grid barrier before those rows' sums and dx (so the barrier's latency runs
// under them), waits at the end, then folds column slices blockIdx.x,
// blockIdx.x + gridDim.x, ... as rmsnorm_dw_fold_kernel does (two at a time
// while two are left). That saves the fold's launch and the gap between the
// two kernels. At 4096 x 8192 (H100) the barrier and the fold still cost
// 4-6 us of 74-82 (docs/benchmarks_dense.md, forty-first session).
//
// Loads: a thread copies its own slots (the elements it reduces) of x and dy
// into shared memory with cp.async, kDwStages steps of kDwRows rows ahead,
// one commit group per step. A thread reads back only what it copied itself,
// so cp.async.wait_group orders producer and consumer and no barrier is
// needed for the copies; the one barrier a step is block_sum<R, false>'s.

// FREE: rows per step (side by side in one block_sum, as kRowsPerCta). Two
// at NV = 2 since the thirty-second session: two rows' chains interleave and
// share a barrier (H100, N = 4096: 2-4 % faster than one row a step); two
// at NV = 4 since the thirty-third (H100, N = 8192, after an L2 flush:
// 1.5-1.8 % faster at 4096-32768 rows; back to back -1 to +1.6 %).
template <int NV>
constexpr int kDwRows = NV <= 4 ? 2 : 1;
// FREE: steps in flight, about 128 KiB of x and dy per CTA (192 KiB at NV = 8,
// three rows of 64 KiB; NV = 4: two steps of two rows); one CTA per SM.
template <int NV>
constexpr int kDwStages = NV == 1 ? 8 : NV == 2 ? 4 : NV == 4 ? 2 : 3;
// FREE: the weight stays in registers for the whole chunk (else it is
// reloaded where used): at NV = 8 the 64 dw accumulators and the weight do
// not fit in 255 registers without spills.
template <int NV>
constexpr bool kDwHoldWeight = NV <= 4;
// FREE: a step's dy, g = dy * w and xhat of this thread's elements are kept
// in registers from the row sum to the dx / dw pass (else both passes read
// the stage and convert): 3 * R * NV * V floats, up to 96 at NV * R <= 4.
// The values are the same either way.
template <int NV>
constexpr bool kDwHoldRow = NV * kDwRows<NV> <= 4;
// FREE: where the fused kernel runs: from 2048 rows (4096 above 8192
// columns); below, the split kernels (dx, then dw partials) spread fewer
// rows over more SMs. Both give the same bits. H100, 2026-11-21 (fused
// against the split path of the previous release): 0.47-0.89x at 1024 rows
// (N = 2048-16384) and at 2048 rows x 16384 columns, 1.19-1.78x from
// there on (docs/benchmarks_dense.md).
constexpr bool dw_fused_pays(int64_t rows, int64_t cols) {
  return rows >= 4096 || (rows >= 2048 && cols <= 8192);
}

template <int NV>
constexpr int dw_smem_bytes() {
  return kDwStages<NV> * kDwRows<NV> * 2 * NV * kRowThreads * 16;
}

__device__ __forceinline__ void cp_async16_shared(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Needs (checked on the host): cols % V == 0, x, dy 16-byte aligned, row
// strides multiples of V, so every slot is one aligned 16-byte vector.
template <class T, class TW, int NV, bool kFold>
__global__ void __launch_bounds__(kRowThreads, 1)
    rmsnorm_bwd_fused_kernel(const __grid_constant__ sb_rmsnorm_backward_params p, int64_t chunks) {
  constexpr int V = Vec<T>::V, R = kDwRows<NV>, S = kDwStages<NV>, kSteps = kChunk / R;
  static_assert(kChunk % R == 0, "a step never straddles two chunks");
  static_assert(kChunk == 32, "rstd of the chunk's rows is spread over the 32 lanes of a warp");
  static_assert(kFoldWarps * 32 == kRowThreads, "the inline fold runs on the CTA's threads");
  static_assert(dw_smem_bytes<NV>() >= int(sizeof(float[2][kFoldRound][32])), "the fold reuses the stages");
  extern __shared__ uint4 stage_buf[];  // [S][R][2 (x, dy)][NV][kRowThreads] 16-byte vectors
  __shared__ float red[2][R][kWarps];  // step k's warp totals in red[k % 2] (block_sum<R, false>)
  const int64_t n = p.cols, r0 = int64_t(blockIdx.x) * kChunk;
  const int rows_here = int(min(int64_t(kChunk), p.rows - r0));
  const int t = threadIdx.x;
  const TW* w = static_cast<const TW*>(p.weight);
  auto slot = [&](int stage, int i, int in, int c) -> uint4* {
    return stage_buf + (((stage * R + i) * 2 + in) * NV + c) * kRowThreads + t;
  };
  // slot(0, 0, 0, 0) as a shared-space address, for the copies
  const unsigned slot_base = static_cast<unsigned>(__cvta_generic_to_shared(stage_buf + t));
  auto slot_shared = [&](int stage, int i, int in, int c) -> unsigned {
    return slot_base + unsigned((((stage * R + i) * 2 + in) * NV + c) * kRowThreads * 16);
  };
  // Where the next step's copies come from: row r0 + next_k * R of x and dy
  // at this thread's first slot, advanced by R rows a step (the slots of a
  // row are c * kRowThreads * V elements apart), so a step's copies need no
  // 64-bit products.
  const T* x_next = static_cast<const T*>(p.x) + r0 * p.x_row_stride + slot_j0<V>(0);
  const T* dy_next = static_cast<const T*>(p.dy) + r0 * p.dy_row_stride + slot_j0<V>(0);
  const int64_t x_step = int64_t(R) * p.x_row_stride, dy_step = int64_t(R) * p.dy_row_stride;
  bool slot_in[NV];  // slot c holds elements of the row (cols % V == 0: whole)
#pragma unroll
  for (int c = 0; c < NV; ++c) slot_in[c] = slot_j0<V>(c) < n;
  // copies of step k (rows r0 + k*R ...) into stage k % S; one group per
  // step, empty past the chunk, so group k is always the k-th committed;
  // called with k = 0, 1, 2, ... in turn
  auto issue = [&](int k) {
    if (k < kSteps) {
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (k * R + i >= rows_here) continue;
#pragma unroll
        for (int c = 0; c < NV; ++c) {
          if (!slot_in[c]) continue;
          const int64_t col = int64_t(c) * kRowThreads * V;
          cp_async16_shared(slot_shared(k % S, i, 0, c), x_next + i * p.x_row_stride + col);
          cp_async16_shared(slot_shared(k % S, i, 1, c), dy_next + i * p.dy_row_stride + col);
        }
      }
      x_next += x_step;
      dy_next += dy_step;
    }
    cp_async_commit();
  };
#pragma unroll
  for (int k = 0; k < S - 1; ++k) issue(k);
  // rstd of row r0 + l in lane l
  const float rs_lane = (t % 32) < rows_here ? p.rstd[r0 + t % 32] : 0.0f;
  Pack<TW, V> wv[NV];  // reloaded per use (kDwHoldWeight false), an L1 hit
  float wf[kDwHoldWeight<NV> ? NV : 1][V];  // kDwHoldWeight: the weight as floats for the whole chunk
  if (kDwHoldWeight<NV> && w) {
    load_row(wv, w, 0, 0, n);
#pragma unroll
    for (int c = 0; c < NV; ++c)
#pragma unroll
      for (int v = 0; v < V; ++v) wf[c % (kDwHoldWeight<NV> ? NV : 1)][v] = to_float(wv[c].e[v]);
  }
  auto weight_at = [&](int c, int v) -> float {
    if constexpr (kDwHoldWeight<NV>)
      return wf[c][v];
    else
      return to_float(wv[c].e[v]);
  };
  // kFold: the last step stores the chunk's partial and arrives at the grid
  // barrier (thread 0's token) before that step's row sums and dx
  const int last_step = min(kSteps, (rows_here + R - 1) / R) - 1;
  unsigned token = 0;
  float acc[NV][V];  // the chunk's dw partial of this thread's columns
#pragma unroll
  for (int c = 0; c < NV; ++c)
#pragma unroll
    for (int v = 0; v < V; ++v) acc[c][v] = 0.0f;

  auto store_partial = [&]() {
    float* ws = p.workspace + int64_t(blockIdx.x) * n;
#pragma unroll
    for (int c = 0; c < NV; ++c) {
      const int64_t j0 = slot_j0<V>(c);
      if (j0 >= n) continue;
#pragma unroll
      for (int q = 0; q < V / 4; ++q) {  // float4 quarters of the V columns
        Pack<float, 4> o;
#pragma unroll
        for (int v = 0; v < 4; ++v) o.e[v] = acc[c][4 * q + v];
        store_pack<float, 4>(ws, j0 + 4 * q, n, aligned16(ws), o);
      }
    }
  };
  for (int k = 0; k < kSteps && k * R < rows_here; ++k) {  // uniform over the CTA
    issue(k + S - 1);  // refills the stage read in step k - 1 (by this thread only)
    cp_async_wait<S - 1>();  // this thread's copies of step k have landed
    // x and dy of row i, slot c: this thread's own copies (zero for a slot
    // past the row, as load_pack gives); read before the barrier and, where
    // kDwHoldRow is false, again after it
    auto x_at = [&](int i, int c) { return *reinterpret_cast<const Pack<T, V>*>(slot(k % S, i, 0, c)); };
    auto dy_at = [&](int i, int c) { return *reinterpret_cast<const Pack<T, V>*>(slot(k % S, i, 1, c)); };
    float rstd[R];
#pragma unroll
    for (int i = 0; i < R; ++i) rstd[i] = __shfl_sync(0xffffffffu, rs_lane, (k * R + i) % 32);
    // sum of g * xhat: rmsnorm_bwd_dx_reg_kernel's loop (a row past the
    // chunk's end sums stale values; its result is not used)
    constexpr bool kHold = kDwHoldRow<NV>;
    constexpr int HR = kHold ? R : 1, HN = kHold ? NV : 1;
    float hd[HR][HN][V], hg[HR][HN][V], hx[HR][HN][V];  // dy, g, xhat of step k (kHold)
    float s[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      s[i] = 0.0f;
#pragma unroll
      for (int c = 0; c < NV; ++c) {
        const int64_t j0 = slot_j0<V>(c);
        if (j0 >= n) continue;
        const Pack<T, V> xv = x_at(i, c), dv = dy_at(i, c);
        if (!kDwHoldWeight<NV> && w) wv[c] = load_pack<TW, V>(w, j0, n, aligned16(w));
#pragma unroll
        for (int v = 0; v < V; ++v) {  // j0 + v < n: cols % V == 0
          const float d = to_float(dv.e[v]);
          const float g = w ? __fmul_rn(d, weight_at(c, v)) : d;
          const float xh = __fmul_rn(to_float(xv.e[v]), rstd[i]);
          s[i] = __fadd_rn(s[i], __fmul_rn(g, xh));
          // dw's term needs no row sum: added here, rows in increasing
          // order as before (a row past the chunk's end adds nothing)
          if (k * R + i < rows_here) acc[c][v] = __fadd_rn(acc[c][v], __fmul_rn(d, xh));
          if constexpr (kHold) {
            hd[i % HR][c % HN][v] = d;
            hg[i % HR][c % HN][v] = g;
            hx[i % HR][c % HN][v] = xh;
          }
        }
      }
    }
    if constexpr (kFold) {
      // the chunk's partial is complete once the last step's rows are added
      // above: stored, and the grid barrier arrived at, before this step's
      // row sums and dx, so the barrier's latency runs under them
      if (k == last_step) {
        store_partial();
        token = cooperative_groups::this_grid().barrier_arrive();
      }
    }
    block_sum<R, false>(s, red[k % 2]);  // one barrier a step
    // dx (rmsnorm_bwd_dx_reg_kernel's epilogue), rows in increasing order
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (k * R + i >= rows_here) continue;
      const int64_t r = r0 + int64_t(k) * R + i;
      const float mean_gx = __fdiv_rn(s[i], float(n));
      T* dx = static_cast<T*>(p.dx) + r * p.dx_row_stride;
#pragma unroll
      for (int c = 0; c < NV; ++c) {
        const int64_t j0 = slot_j0<V>(c);
        if (j0 >= n) continue;
        float o[V];
        if constexpr (kHold) {
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const float d = hd[i % HR][c % HN][v], g = hg[i % HR][c % HN][v], xh = hx[i % HR][c % HN][v];
            o[v] = __fmul_rn(rstd[i], __fsub_rn(g, __fmul_rn(xh, mean_gx)));
          }
        } else {
          const Pack<T, V> xv = x_at(i, c), dv = dy_at(i, c);
          if (!kDwHoldWeight<NV> && w) wv[c] = load_pack<TW, V>(w, j0, n, aligned16(w));
#pragma unroll
          for (int v = 0; v < V; ++v) {
            const float d = to_float(dv.e[v]);
            const float g = w ? __fmul_rn(d, weight_at(c, v)) : d;
            const float xh = __fmul_rn(to_float(xv.e[v]), rstd[i]);
            o[v] = __fmul_rn(rstd[i], __fsub_rn(g, __fmul_rn(xh, mean_gx)));
          }
        }
        store_pack<T, V, true>(dx, j0, n, aligned16(dx), pack_floats<T, V>(o));  // streaming
      }
    }
  }
  cp_async_wait<0>();  // nothing left in flight at exit (the groups past the rows are empty)
  if constexpr (!kFold) store_partial();
  if constexpr (kFold) {
    // every chunk's partial written and visible (the barrier orders the
    // grid's memory), and this CTA's stages free for the fold's buffer
    cooperative_groups::this_grid().barrier_wait(static_cast<unsigned>(token));
    float* buf = reinterpret_cast<float*>(stage_buf);
    const int64_t slices = (n + 31) / 32;
    static_assert(dw_smem_bytes<NV>() >= int(sizeof(float[2][2][kFoldRound][32])), "two slices' buffers");
    int64_t sl = blockIdx.x;
    // two slices at once while this CTA has two left (N >= 2 * 32 * grid)
    for (; sl + gridDim.x < slices; sl += 2 * int64_t(gridDim.x)) {  // uniform over the CTA
      dw_fold_columns<TW, 2>(p, chunks, sl, gridDim.x, buf);
      __syncthreads();  // the next slices' first round rewrites the buffer
    }
    for (; sl < slices; sl += gridDim.x) {  // uniform over the CTA
      dw_fold_columns<TW>(p, chunks, sl, 0, buf);
      __syncthreads();  // the next slice's first round rewrites the buffer
    }
  }
}

// ---------------------------------------------------------------- loop kernels
// Rows longer than kMaxRegVecs vectors per thread: each pass re-reads the row.

// Loads elements [j0, j0 + V) of `row` (those < cols) as fp32.
template <class T>
__device__ __forceinline__ void load_v(const T* row, int64_t j0, int64_t cols, bool vec,
                                       float (&out)[Vec<T>::V]) {
  constexpr int V = Vec<T>::V;
  if (vec && j0 + V <= cols) {
    uint4 raw = *reinterpret_cast<const uint4*>(row + j0);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int v = 0; v < V; ++v) out[v] = to_float(e[v]);
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) out[v] = j0 + v < cols ? to_float(row[j0 + v]) : 0.0f;
  }
}

// j0 of this thread's c-th vector: ((c * kRowThreads) + t) * V
#define SB_ROW_LOOP(T, cols, j0)                                                        \
  for (int64_t j0 = int64_t(threadIdx.x) * Vec<T>::V; j0 < (cols);                      \
       j0 += int64_t(kRowThreads) * Vec<T>::V)

template <class T, class TW>
__global__ void __launch_bounds__(kRowThreads)
    rmsnorm_fwd_loop_kernel(const __grid_constant__ sb_rmsnorm_params p) {
  constexpr int V = Vec<T>::V;
  __shared__ float red[1][kWarps];
  const int64_t r = blockIdx.x, n = p.cols;
  const T* x = static_cast<const T*>(p.x) + r * p.x_row_stride;
  const T* res = p.residual ? static_cast<const T*>(p.residual) + r * p.residual_row_stride : nullptr;
  T* ho = p.residual ? static_cast<T*>(p.residual_out) + r * p.residual_out_row_stride : nullptr;
  const bool vec = aligned16(x) && (!res || (aligned16(res) && aligned16(ho)));
  float ss = 0.0f;
  SB_ROW_LOOP(T, n, j0) {
    float h[V];
    load_v(x, j0, n, vec, h);
    if (res) {
      float rv[V];
      load_v(res, j0, n, vec, rv);
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (j0 + v < n) {
          T hs = from_float<T>(__fadd_rn(h[v], rv[v]));  // the rounded sum is normalized
          ho[j0 + v] = hs;
          h[v] = to_float(hs);
        }
    }
#pragma unroll
    for (int v = 0; v < V; ++v) ss = __fadd_rn(ss, __fmul_rn(h[v], h[v]));  // tail lanes add +0
  }
  ss = block_sum1(ss, red);
  const float rstd = __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(ss, float(n)), p.eps)));
  if (p.rstd && threadIdx.x == 0) p.rstd[r] = rstd;
  const T* hsrc = res ? ho : x;
  const TW* w = static_cast<const TW*>(p.weight);
  T* y = static_cast<T*>(p.y) + r * p.y_row_stride;
  SB_ROW_LOOP(T, n, j0) {
    float h[V];
    load_v(hsrc, j0, n, vec && !res, h);  // the thread's own residual_out stores
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) {
        float o = __fmul_rn(h[v], rstd);
        if (w) o = __fmul_rn(o, to_float(w[j0 + v]));
        y[j0 + v] = from_float<T>(o);
      }
  }
}

template <class T, class TW>
__global__ void __launch_bounds__(kRowThreads)
    rmsnorm_bwd_dx_loop_kernel(const __grid_constant__ sb_rmsnorm_backward_params p) {
  constexpr int V = Vec<T>::V;
  __shared__ float red[1][kWarps];
  const int64_t r = blockIdx.x, n = p.cols;
  const T* x = static_cast<const T*>(p.x) + r * p.x_row_stride;
  const T* dy = static_cast<const T*>(p.dy) + r * p.dy_row_stride;
  const TW* w = static_cast<const TW*>(p.weight);
  const bool vec = aligned16(x) && aligned16(dy);
  const float rstd = p.rstd[r];
  float s = 0.0f;
  SB_ROW_LOOP(T, n, j0) {
    float xv[V], dv[V];
    load_v(x, j0, n, vec, xv);
    load_v(dy, j0, n, vec, dv);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      float g = (w && j0 + v < n) ? __fmul_rn(dv[v], to_float(w[j0 + v])) : dv[v];
      s = __fadd_rn(s, __fmul_rn(g, __fmul_rn(xv[v], rstd)));
    }
  }
  const float mean_gx = __fdiv_rn(block_sum1(s, red), float(n));
  T* dx = static_cast<T*>(p.dx) + r * p.dx_row_stride;
  SB_ROW_LOOP(T, n, j0) {
    float xv[V], dv[V];
    load_v(x, j0, n, vec, xv);
    load_v(dy, j0, n, vec, dv);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) {
        float g = w ? __fmul_rn(dv[v], to_float(w[j0 + v])) : dv[v];
        float xh = __fmul_rn(xv[v], rstd);
        dx[j0 + v] = from_float<T>(__fmul_rn(rstd, __fsub_rn(g, __fmul_rn(xh, mean_gx))));
      }
  }
}

template <class TX, class TY>
__global__ void __launch_bounds__(kRowThreads)
    softmax_fwd_loop_kernel(const __grid_constant__ sb_softmax_params p) {
  constexpr int V = Vec<TX>::V;
  __shared__ float red[1][kWarps];
  const int64_t r = blockIdx.x, n = p.cols;
  const TX* x = static_cast<const TX*>(p.x) + r * p.x_row_stride;
  const bool vec = aligned16(x);
  float mx = -INFINITY;
  SB_ROW_LOOP(TX, n, j0) {
    float xv[V];
    load_v(x, j0, n, vec, xv);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) mx = fmaxf(mx, xv[v]);
  }
  mx = block_max1(mx, red);  // exact: max is order-free
  if (mx == -INFINITY) mx = 0.0f;
  float s = 0.0f;
  SB_ROW_LOOP(TX, n, j0) {
    float xv[V];
    load_v(x, j0, n, vec, xv);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) s = __fadd_rn(s, expf(__fsub_rn(xv[v], mx)));
  }
  s = block_sum1(s, red);
  TY* y = static_cast<TY*>(p.y) + r * p.y_row_stride;
  const float ls = logf(s), inv = __frcp_rn(s);
  SB_ROW_LOOP(TX, n, j0) {
    float xv[V];
    load_v(x, j0, n, vec, xv);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) {
        float d = __fsub_rn(xv[v], mx);
        y[j0 + v] = from_float<TY>(p.log ? __fsub_rn(d, ls) : __fmul_rn(expf(d), inv));
      }
  }
}

template <class TY, class TD>
__global__ void __launch_bounds__(kRowThreads)
    softmax_bwd_loop_kernel(const __grid_constant__ sb_softmax_backward_params p) {
  constexpr int V = Vec<TY>::V;
  __shared__ float red[1][kWarps];
  const int64_t r = blockIdx.x, n = p.cols;
  const TY* y = static_cast<const TY*>(p.y) + r * p.y_row_stride;
  const TY* dy = static_cast<const TY*>(p.dy) + r * p.dy_row_stride;
  const bool vec = aligned16(y) && aligned16(dy);
  float s = 0.0f;
  SB_ROW_LOOP(TY, n, j0) {
    float yv[V] = {}, dv[V];
    load_v(dy, j0, n, vec, dv);
    if (!p.log) load_v(y, j0, n, vec, yv);
#pragma unroll
    for (int v = 0; v < V; ++v) s = __fadd_rn(s, p.log ? dv[v] : __fmul_rn(dv[v], yv[v]));
  }
  s = block_sum1(s, red);
  TD* dx = static_cast<TD*>(p.dx) + r * p.dx_row_stride;
  SB_ROW_LOOP(TY, n, j0) {
    float yv[V], dv[V];
    load_v(dy, j0, n, vec, dv);
    load_v(y, j0, n, vec, yv);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n)
        dx[j0 + v] = from_float<TD>(p.log ? __fsub_rn(dv[v], __fmul_rn(expf(yv[v]), s))
                                          : __fmul_rn(yv[v], __fsub_rn(dv[v], s)));
  }
}

template <class TX, class TY>
__global__ void __launch_bounds__(kRowThreads) reduce_loop_kernel(const __grid_constant__ sb_reduce_params p) {
  constexpr int V = Vec<TX>::V;
  __shared__ float red[1][kWarps];
  const int64_t r = blockIdx.x, n = p.cols;
  const TX* x = static_cast<const TX*>(p.x) + r * p.x_row_stride;
  const bool vec = aligned16(x);
  float s = 0.0f;
  SB_ROW_LOOP(TX, n, j0) {
    float xv[V];
    load_v(x, j0, n, vec, xv);
#pragma unroll
    for (int v = 0; v < V; ++v) s = __fadd_rn(s, xv[v]);
  }
  s = block_sum1(s, red);
  if (p.op == SB_REDUCE_MEAN) s = __fdiv_rn(s, float(n));
  if (threadIdx.x == 0) static_cast<TY*>(p.y)[r * p.y_stride] = from_float<TY>(s);
}


// ---------------------------------------------------------------- dispatch
// Calls f(T{}) for the storage type of `d`.
template <class F>
sb_status with_type(sb_dtype d, F&& f) {
  switch (d) {
    case SB_F32: return f(float{});
    case SB_F16: return f(__half{});
    default: return f(__nv_bfloat16{});
  }
}

// Calls f(std::integral_constant<int, NV>{}) with the register kernels' NV
// (1, 2, 4 or 8 vectors per thread) that holds a row of `cols` elements of a
// V-element vector type, or NV = 0 (the loop kernels) for longer rows.
template <class F>
sb_status with_vecs(int64_t cols, int V, F&& f) {
  const int64_t nv = ((cols + V - 1) / V + kRowThreads - 1) / kRowThreads;
  static_assert(kMaxRegVecs == 8, "the list below ends at kMaxRegVecs");
  if (nv <= 1) return f(std::integral_constant<int, 1>{});
  if (nv <= 2) return f(std::integral_constant<int, 2>{});
  if (nv <= 4) return f(std::integral_constant<int, 4>{});
  if (nv <= 8) return f(std::integral_constant<int, 8>{});
  return f(std::integral_constant<int, 0>{});
}

// CTAs for `rows` rows at R rows per CTA.
unsigned row_grid(int64_t rows, int R) { return unsigned((rows + R - 1) / R); }

sb_status launched(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return fail(SB_CUDA_ERROR, std::string(what) + ": " + cudaGetErrorString(e));
  return SB_OK;
}

bool grid_ok(int64_t rows) { return rows <= int64_t(0x7fffffff); }

// SAMEBITS_ROWS_LEGACY=1: the launch shapes of the previous release
// (RMSNorm forward at kRowsPerCta rows per CTA, RMSNorm backward's dw by the
// split kernels at every size, the fold one thread per column). Same bits
// either way; read on every call so one process can time both.
bool rows_legacy() {
  const char* e = std::getenv("SAMEBITS_ROWS_LEGACY");
  return e != nullptr && e[0] == '1';
}

// SAMEBITS_RMSNORM_DW_PATH=fused | split forces the dw path whatever the row
// count (where the fused kernel applies), for the bitwise checks at small M.
int dw_path_forced() {  // 1 fused, 2 split, 0 not forced
  const char* e = std::getenv("SAMEBITS_RMSNORM_DW_PATH");
  if (e == nullptr) return 0;
  if (std::strcmp(e, "fused") == 0) return 1;
  if (std::strcmp(e, "split") == 0) return 2;
  return 0;
}

// The dw fold of the `chunks` partials in p.workspace into p.dw (the
// previous release's fold kernel under SAMEBITS_ROWS_LEGACY=1; same bits).
template <class TW>
void launch_dw_fold(const sb_rmsnorm_backward_params& p, int64_t chunks, cudaStream_t s) {
  if (rows_legacy()) {
    const unsigned grid = unsigned((p.cols + kColThreads - 1) / kColThreads);
    rmsnorm_dw_fold_legacy_kernel<TW><<<grid, kColThreads, 0, s>>>(p, chunks);
  } else {
    const unsigned grid = unsigned((p.cols + 31) / 32);  // 32 columns per CTA
    rmsnorm_dw_fold_kernel<TW><<<grid, kFoldWarps * 32, 0, s>>>(p, chunks);
  }
}

// SAMEBITS_RMSNORM_DW_FOLD=kernel: the fused dx + dw runs the fold as its own
// kernel (the previous release's launches) also where the cooperative launch
// with the fold inline applies. Same bits; read on every call.
bool dw_fold_kernel_forced() {
  const char* e = std::getenv("SAMEBITS_RMSNORM_DW_FOLD");
  return e != nullptr && std::strcmp(e, "kernel") == 0;
}

// Resident CTAs of Kernel (kRowThreads threads, `smem` dynamic bytes) on the
// current device: SMs x CTAs per SM, once per (kernel, device); 0 when unknown.
template <auto Kernel>
int64_t resident_ctas(int smem) {
  static int cache[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64 && cache[dev] != 0) return cache[dev];
  int sms = 0, per_sm = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kRowThreads, smem) != cudaSuccess) {
    cudaGetLastError();  // this call's own error: the caller falls back
    return 0;
  }
  if (dev >= 0 && dev < 64) cache[dev] = sms * per_sm;
  return int64_t(sms) * per_sm;
}

// The fused dx + dw with its fold inline: a cooperative grid of one CTA per
// chunk. False (nothing launched, no error left pending) where the chunks
// outnumber the resident CTAs or the device cannot run it; the caller then
// launches the separate-fold form.
template <auto Kernel>
bool launch_cooperative(const sb_rmsnorm_backward_params& p, int64_t chunks, int smem, cudaStream_t s) {
  if (opt_in_shared_memory<Kernel>(smem) != cudaSuccess) {
    cudaGetLastError();  // this call's own error: the caller falls back
    return false;
  }
  if (resident_ctas<Kernel>(smem) < chunks) return false;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(chunks));
  cfg.blockDim = dim3(kRowThreads);
  cfg.dynamicSmemBytes = size_t(smem);
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, Kernel, p, chunks) == cudaSuccess) return true;
  cudaGetLastError();  // this call's own error: the caller falls back
  return false;
}

}  // namespace

sb_status rmsnorm_forward(const sb_rmsnorm_params& p) {
  if (p.y_dtype != p.x_dtype) return fail(SB_UNSUPPORTED, "rmsnorm: y_dtype must equal x_dtype on CUDA");
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "rmsnorm: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.x_dtype, [&](auto tx) {
    using T = decltype(tx);
    return with_type(p.w_dtype, [&](auto tw) {
      using TW = decltype(tw);
      return with_vecs(p.cols, Vec<T>::V, [&](auto nv) {
        constexpr int NV = decltype(nv)::value;
        if constexpr (NV == 0) {
          rmsnorm_fwd_loop_kernel<T, TW><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
        } else if (p.residual != nullptr || rows_legacy()) {
          constexpr int R = kRowsPerCta<NV, 1>;
          rmsnorm_fwd_reg_kernel<T, TW, NV, R, true><<<row_grid(p.rows, R), kRowThreads, 0, s>>>(p);
        } else {
          constexpr int R = kRowsPerCtaNoRes<NV>;
          rmsnorm_fwd_reg_kernel<T, TW, NV, R, false><<<row_grid(p.rows, R), kRowThreads, 0, s>>>(p);
        }
        return launched("rmsnorm_forward");
      });
    });
  });
}

sb_status rmsnorm_backward(const sb_rmsnorm_backward_params& p) {
  if (p.y_dtype != p.x_dtype) return fail(SB_UNSUPPORTED, "rmsnorm backward: dy must have x's dtype on CUDA");
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "rmsnorm backward: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  const int64_t chunks = (p.rows + kChunk - 1) / kChunk;
  if (chunks > 65535) return fail(SB_UNSUPPORTED, "rmsnorm backward: more than 65535 * 32 rows");
  return with_type(p.x_dtype, [&](auto tx) {
    using T = decltype(tx);
    return with_type(p.w_dtype, [&](auto tw) {
      using TW = decltype(tw);
      constexpr int V = Vec<T>::V;
      // dx and dw in one pass (rmsnorm_bwd_fused_kernel), where it applies
      const int forced = dw_path_forced();
      const bool fusable = p.dw != nullptr && p.rows > 0 && p.cols > 0 && p.cols % V == 0 &&
                           aligned16(p.x) && aligned16(p.dy) && p.x_row_stride % V == 0 &&
                           p.dy_row_stride % V == 0 && forced != 2 &&
                           (forced == 1 || (!rows_legacy() && dw_fused_pays(p.rows, p.cols)));
      bool fused = false;
      if (fusable) {
        with_vecs(p.cols, V, [&](auto nv) {
          constexpr int NV = decltype(nv)::value;
          if constexpr (NV != 0) {
            constexpr int smem = dw_smem_bytes<NV>();
            constexpr auto inline_fold = rmsnorm_bwd_fused_kernel<T, TW, NV, true>;
            constexpr auto separate_fold = rmsnorm_bwd_fused_kernel<T, TW, NV, false>;
            if (!dw_fold_kernel_forced() && launch_cooperative<inline_fold>(p, chunks, smem, s)) {
              fused = true;  // partials and fold in one kernel
            } else if (opt_in_shared_memory<separate_fold>(smem) == cudaSuccess) {
              separate_fold<<<unsigned(chunks), kRowThreads, smem, s>>>(p, chunks);
              launch_dw_fold<TW>(p, chunks, s);
              fused = true;
            }
          }
          return SB_OK;
        });
      }
      if (fused) return launched("rmsnorm_backward");
      if (p.rows > 0 && p.cols > 0) {
        with_vecs(p.cols, Vec<T>::V, [&](auto nv) {
          constexpr int NV = decltype(nv)::value;
          if constexpr (NV == 0)
            rmsnorm_bwd_dx_loop_kernel<T, TW><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
          else
            rmsnorm_bwd_dx_reg_kernel<T, TW, NV><<<row_grid(p.rows, kRowsPerCta<NV, 2>), kRowThreads, 0, s>>>(p);
          return SB_OK;
        });
      }
      if (p.dw != nullptr && p.cols > 0) {
        const int64_t per_cta = int64_t(kColThreads) * Vec<T>::V;  // columns of a partial CTA
        const unsigned pb = unsigned((p.cols + per_cta - 1) / per_cta);
        if (chunks > 0) rmsnorm_dw_partial_kernel<T><<<dim3(pb, unsigned(chunks)), kColThreads, 0, s>>>(p);
        launch_dw_fold<TW>(p, chunks, s);
      }
      return launched("rmsnorm_backward");
    });
  });
}

sb_status softmax_forward(const sb_softmax_params& p) {
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "softmax: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.x_dtype, [&](auto tx) {
    using TX = decltype(tx);
    return with_type(p.y_dtype, [&](auto ty) {
      using TY = decltype(ty);
      return with_vecs(p.cols, Vec<TX>::V, [&](auto nv) {
        constexpr int NV = decltype(nv)::value;
        if constexpr (NV == 0) {
          softmax_fwd_loop_kernel<TX, TY><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
        } else {
          const unsigned grid = row_grid(p.rows, kRowsPerCta<NV, 1>);
          if (p.log) softmax_fwd_reg_kernel<TX, TY, NV, true><<<grid, kRowThreads, 0, s>>>(p);
          else softmax_fwd_reg_kernel<TX, TY, NV, false><<<grid, kRowThreads, 0, s>>>(p);
        }
        return launched("softmax_forward");
      });
    });
  });
}

sb_status softmax_backward(const sb_softmax_backward_params& p) {
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "softmax backward: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.y_dtype, [&](auto ty) {
    using TY = decltype(ty);
    return with_type(p.dx_dtype, [&](auto td) {
      using TD = decltype(td);
      return with_vecs(p.cols, Vec<TY>::V, [&](auto nv) {
        constexpr int NV = decltype(nv)::value;
        if constexpr (NV == 0)
          softmax_bwd_loop_kernel<TY, TD><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
        else
          softmax_bwd_reg_kernel<TY, TD, NV><<<row_grid(p.rows, kRowsPerCta<NV, 2>), kRowThreads, 0, s>>>(p);
        return launched("softmax_backward");
      });
    });
  });
}

sb_status reduce(const sb_reduce_params& p) {
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "reduce: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.x_dtype, [&](auto tx) {
    using TX = decltype(tx);
    return with_type(p.y_dtype, [&](auto ty) {
      using TY = decltype(ty);
      return with_vecs(p.cols, Vec<TX>::V, [&](auto nv) {
        constexpr int NV = decltype(nv)::value;
        if constexpr (NV == 0)
          reduce_loop_kernel<TX, TY><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
        else
          reduce_reg_kernel<TX, TY, NV><<<row_grid(p.rows, kRowsPerCta<NV, 1>), kRowThreads, 0, s>>>(p);
        return launched("reduce");
      });
    });
  });
}

}  // namespace samebits::cuda::dense
