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
// Loads are 16-byte vectors when the row start is aligned (else scalar loads
// of the same elements, with the same arithmetic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/backend.h"
#include "cuda/dense/dense_cuda.h"
#include "cuda/dense/dtype.cuh"

namespace samebits::cuda::dense {
namespace {

constexpr int kRowThreads = 256;  // BITS: shapes the per-row reduction tree
constexpr int kWarps = kRowThreads / 32;
constexpr int kChunk = SB_RMSNORM_DW_CHUNK;
constexpr int kColThreads = 256;  // FREE: threads per CTA of the dw kernels

template <class T>
struct Vec {
  static constexpr int V = 16 / sizeof(T);
};

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

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// The fixed CTA tree over the threads' partial sums (see top). `red` holds
// kWarps floats; the leading barrier lets the function be called repeatedly.
__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // previous readers of `red` are done
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();  // warp totals visible
  float s = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s = __fadd_rn(s, red[w]);
  return s;
}

__device__ __forceinline__ float block_max(float v, float* red) {
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float s = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) s = fmaxf(s, red[w]);
  return s;
}

// j0 of this thread's c-th vector: ((c * kRowThreads) + t) * V
#define SB_ROW_LOOP(T, cols, j0)                                                        \
  for (int64_t j0 = int64_t(threadIdx.x) * Vec<T>::V; j0 < (cols);                      \
       j0 += int64_t(kRowThreads) * Vec<T>::V)

// ---------------------------------------------------------------- RMSNorm
template <class T, class TW>
__global__ void __launch_bounds__(kRowThreads)
    rmsnorm_fwd_kernel(const __grid_constant__ sb_rmsnorm_params p) {
  constexpr int V = Vec<T>::V;
  __shared__ float red[kWarps];
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
  ss = block_sum(ss, red);
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
    rmsnorm_bwd_dx_kernel(const __grid_constant__ sb_rmsnorm_backward_params p) {
  constexpr int V = Vec<T>::V;
  __shared__ float red[kWarps];
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
  const float mean_gx = __fdiv_rn(block_sum(s, red), float(n));
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

// dw partials: CTA (column block, chunk c); thread j adds dy * xhat over the
// chunk's rows in increasing row order.
template <class T>
__global__ void __launch_bounds__(kColThreads)
    rmsnorm_dw_partial_kernel(const __grid_constant__ sb_rmsnorm_backward_params p) {
  const int64_t j = int64_t(blockIdx.x) * kColThreads + threadIdx.x, c = blockIdx.y;
  if (j >= p.cols) return;
  const int64_t r0 = c * kChunk, r1 = min(p.rows, r0 + kChunk);
  float acc = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    float xh = __fmul_rn(to_float(static_cast<const T*>(p.x)[r * p.x_row_stride + j]), p.rstd[r]);
    float d = to_float(static_cast<const T*>(p.dy)[r * p.dy_row_stride + j]);
    acc = __fadd_rn(acc, __fmul_rn(d, xh));
  }
  p.workspace[c * p.cols + j] = acc;
}

// dw[j] = left fold of the chunk partials, chunk 0 first.
template <class TW>
__global__ void __launch_bounds__(kColThreads)
    rmsnorm_dw_fold_kernel(const __grid_constant__ sb_rmsnorm_backward_params p, int64_t chunks) {
  const int64_t j = int64_t(blockIdx.x) * kColThreads + threadIdx.x;
  if (j >= p.cols) return;
  float acc = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) acc = __fadd_rn(acc, p.workspace[c * p.cols + j]);
  static_cast<TW*>(p.dw)[j] = from_float<TW>(acc);
}

// ---------------------------------------------------------------- softmax
template <class TX, class TY>
__global__ void __launch_bounds__(kRowThreads)
    softmax_fwd_kernel(const __grid_constant__ sb_softmax_params p) {
  constexpr int V = Vec<TX>::V;
  __shared__ float red[kWarps];
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
  mx = block_max(mx, red);  // exact: max is order-free
  if (mx == -INFINITY) mx = 0.0f;
  float s = 0.0f;
  SB_ROW_LOOP(TX, n, j0) {
    float xv[V];
    load_v(x, j0, n, vec, xv);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (j0 + v < n) s = __fadd_rn(s, expf(__fsub_rn(xv[v], mx)));
  }
  s = block_sum(s, red);
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
    softmax_bwd_kernel(const __grid_constant__ sb_softmax_backward_params p) {
  constexpr int V = Vec<TY>::V;
  __shared__ float red[kWarps];
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
  s = block_sum(s, red);
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

// ---------------------------------------------------------------- sum / mean
template <class TX, class TY>
__global__ void __launch_bounds__(kRowThreads) reduce_kernel(const __grid_constant__ sb_reduce_params p) {
  constexpr int V = Vec<TX>::V;
  __shared__ float red[kWarps];
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
  s = block_sum(s, red);
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

sb_status launched(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return fail(SB_CUDA_ERROR, std::string(what) + ": " + cudaGetErrorString(e));
  return SB_OK;
}

bool grid_ok(int64_t rows) { return rows <= int64_t(0x7fffffff); }

}  // namespace

sb_status rmsnorm_forward(const sb_rmsnorm_params& p) {
  if (p.y_dtype != p.x_dtype) return fail(SB_UNSUPPORTED, "rmsnorm: y_dtype must equal x_dtype on CUDA");
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "rmsnorm: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.x_dtype, [&](auto tx) {
    using T = decltype(tx);
    return with_type(p.w_dtype, [&](auto tw) {
      using TW = decltype(tw);
      rmsnorm_fwd_kernel<T, TW><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
      return launched("rmsnorm_forward");
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
      if (p.rows > 0 && p.cols > 0)
        rmsnorm_bwd_dx_kernel<T, TW><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
      if (p.dw != nullptr && p.cols > 0) {
        const unsigned cb = unsigned((p.cols + kColThreads - 1) / kColThreads);
        if (chunks > 0) rmsnorm_dw_partial_kernel<T><<<dim3(cb, unsigned(chunks)), kColThreads, 0, s>>>(p);
        rmsnorm_dw_fold_kernel<TW><<<cb, kColThreads, 0, s>>>(p, chunks);
      }
      return launched("rmsnorm_backward");
    });
  });
}

sb_status softmax_forward(const sb_softmax_params& p) {
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "softmax: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.x_dtype, [&](auto tx) {
    return with_type(p.y_dtype, [&](auto ty) {
      softmax_fwd_kernel<decltype(tx), decltype(ty)><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
      return launched("softmax_forward");
    });
  });
}

sb_status softmax_backward(const sb_softmax_backward_params& p) {
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "softmax backward: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.y_dtype, [&](auto ty) {
    return with_type(p.dx_dtype, [&](auto td) {
      softmax_bwd_kernel<decltype(ty), decltype(td)><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
      return launched("softmax_backward");
    });
  });
}

sb_status reduce(const sb_reduce_params& p) {
  if (!grid_ok(p.rows)) return fail(SB_UNSUPPORTED, "reduce: too many rows");
  auto s = static_cast<cudaStream_t>(p.stream);
  return with_type(p.x_dtype, [&](auto tx) {
    return with_type(p.y_dtype, [&](auto ty) {
      reduce_kernel<decltype(tx), decltype(ty)><<<unsigned(p.rows), kRowThreads, 0, s>>>(p);
      return launched("reduce");
    });
  });
}

}  // namespace samebits::cuda::dense
