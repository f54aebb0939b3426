/* samebits — dense ops: GEMM, RMSNorm, softmax / log_softmax, sum / mean.
 *
 * The C ABI of the dense kernels, beside samebits.h (sb_dtype, sb_device,
 * sb_status, SB_API come from there). One plain params struct per op, filled
 * on the host and passed by pointer. Pointers live on `device`; strides are
 * in elements and the innermost (column) stride is always 1.
 *
 * The invariance contract: every output row depends only on its input row
 * (and the weights / bias), never on the row count, the other rows, the
 * thread or SM count, or the run. The reduction order each op implements is
 * written down in docs/numerics_dense.md; the CPU backend and sm90 follow
 * different (each fixed) orders, so they differ in the last bits.
 */
#ifndef SAMEBITS_DENSE_H_
#define SAMEBITS_DENSE_H_

#include "samebits/samebits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- GEMM: out[b] = alpha * (A[b] @ op(B[b])) + beta * bias ----------------
 * A: (m, k), element (i, p) at a[i * a_row_stride + p].
 * B, layout SB_B_NK (the nn.Linear weight layout, (n, k)): element (p, j) of
 *   op(B) at b[j * b_row_stride + p].
 * B, layout SB_B_KN ((k, n), torch.mm's mat2): element (p, j) at
 *   b[p * b_row_stride + j].
 * bias (optional): element (i, j) at bias[i * bias_row_stride + j];
 *   bias_row_stride == 0 broadcasts one vector of n over the rows.
 * out: (m, n), element (i, j) at out[i * out_row_stride + j]. out may be
 *   the bias itself (an in-place addmm, the same strides); it must not
 *   overlap A or B.
 * Batched (bmm): `batch` problems, each pointer advanced by its
 * *_batch_stride (0 broadcasts B). A and B share `dtype`; products are
 * accumulated in fp32 over k in the fixed order of docs/numerics_dense.md
 * (no split-K, no stream-K). */
typedef enum sb_gemm_b_layout {
  SB_B_NK = 0,
  SB_B_KN = 1,
} sb_gemm_b_layout;

typedef struct sb_gemm_params {
  sb_dtype dtype;      /* A and B */
  sb_dtype out_dtype;  /* out */
  sb_dtype bias_dtype; /* bias */
  sb_device device;
  void* stream;
  int32_t batch;
  int64_t m, n, k;
  const void* a;
  int64_t a_batch_stride, a_row_stride;
  const void* b;
  sb_gemm_b_layout b_layout;
  int64_t b_batch_stride, b_row_stride;
  const void* bias; /* NULL: none */
  int64_t bias_batch_stride, bias_row_stride;
  float alpha, beta;
  void* out;
  int64_t out_batch_stride, out_row_stride;
} sb_gemm_params;

/* ---- RMSNorm ---------------------------------------------------------------
 * Per row: h = x (+ residual, rounded to x_dtype, written to residual_out);
 * rstd = 1 / sqrt(mean(h^2) + eps) in fp32; y = (h * rstd) [* weight].
 * weight (optional) is a vector of `cols` in w_dtype; rstd (optional) is an
 * fp32 vector of `rows` saved for the backward. */
typedef struct sb_rmsnorm_params {
  sb_dtype x_dtype; /* x, residual, residual_out */
  sb_dtype w_dtype;
  sb_dtype y_dtype;
  sb_device device;
  void* stream;
  int64_t rows, cols;
  const void* x;
  int64_t x_row_stride;
  const void* residual; /* NULL: no residual add */
  int64_t residual_row_stride;
  void* residual_out; /* required when residual is set */
  int64_t residual_out_row_stride;
  const void* weight; /* NULL: no weight */
  float eps;
  void* y;
  int64_t y_row_stride;
  float* rstd; /* NULL: not saved */
} sb_rmsnorm_params;

/* RMSNorm backward. x is the normalized input (h above), rstd the saved fp32
 * vector. dy in y_dtype; dx in x_dtype:
 *   xhat = x * rstd, g = dy * weight,
 *   dx = rstd * (g - xhat * sum(g * xhat) / cols).
 * dw (optional, w_dtype) = sum over rows of dy * xhat, reduced over rows in
 * fixed chunks of SB_RMSNORM_DW_CHUNK rows then folded in chunk order; it
 * needs an fp32 workspace of sb_rmsnorm_dw_workspace_elems(rows, cols)
 * elements (on `device`). */
#define SB_RMSNORM_DW_CHUNK 32
typedef struct sb_rmsnorm_backward_params {
  sb_dtype x_dtype; /* x, dx */
  sb_dtype w_dtype; /* weight, dw */
  sb_dtype y_dtype; /* dy */
  sb_device device;
  void* stream;
  int64_t rows, cols;
  const void* x;
  int64_t x_row_stride;
  const void* weight; /* NULL: no weight */
  const float* rstd;
  const void* dy;
  int64_t dy_row_stride;
  void* dx;
  int64_t dx_row_stride;
  void* dw;         /* NULL: not computed */
  float* workspace; /* fp32, sb_rmsnorm_dw_workspace_elems(rows, cols) */
} sb_rmsnorm_backward_params;

/* ---- softmax / log_softmax over the last dim -----------------------------
 * y = exp(x - max) / sum(exp(x - max))   (log: x - max - log(sum)). */
typedef struct sb_softmax_params {
  sb_dtype x_dtype;
  sb_dtype y_dtype;
  sb_device device;
  void* stream;
  int32_t log; /* 0: softmax, 1: log_softmax */
  int64_t rows, cols;
  const void* x;
  int64_t x_row_stride;
  void* y;
  int64_t y_row_stride;
} sb_softmax_params;

/* Backward, from the forward's output y and the gradient dy (both y_dtype):
 *   softmax:     dx = y * (dy - sum(dy * y))
 *   log_softmax: dx = dy - exp(y) * sum(dy)                      (dx_dtype) */
typedef struct sb_softmax_backward_params {
  sb_dtype y_dtype; /* y, dy */
  sb_dtype dx_dtype;
  sb_device device;
  void* stream;
  int32_t log;
  int64_t rows, cols;
  const void* y;
  int64_t y_row_stride;
  const void* dy;
  int64_t dy_row_stride;
  void* dx;
  int64_t dx_row_stride;
} sb_softmax_backward_params;

/* ---- sum / mean over the last dim: y[r] = sum(x[r, :]) (mean: / cols) ---- */
typedef enum sb_reduce_op {
  SB_REDUCE_SUM = 0,
  SB_REDUCE_MEAN = 1,
} sb_reduce_op;

typedef struct sb_reduce_params {
  sb_dtype x_dtype;
  sb_dtype y_dtype;
  sb_device device;
  void* stream;
  sb_reduce_op op;
  int64_t rows, cols;
  const void* x;
  int64_t x_row_stride;
  void* y; /* rows elements, y[r * y_stride] */
  int64_t y_stride;
} sb_reduce_params;

SB_API sb_status sb_gemm(const sb_gemm_params* params);
SB_API sb_status sb_rmsnorm_forward(const sb_rmsnorm_params* params);
SB_API sb_status sb_rmsnorm_backward(const sb_rmsnorm_backward_params* params);
SB_API sb_status sb_softmax_forward(const sb_softmax_params* params);
SB_API sb_status sb_softmax_backward(const sb_softmax_backward_params* params);
SB_API sb_status sb_reduce(const sb_reduce_params* params);
/* fp32 elements of the RMSNorm weight-gradient workspace. */
SB_API int64_t sb_rmsnorm_dw_workspace_elems(int64_t rows, int64_t cols);

#ifdef __cplusplus
}
#endif
#endif /* SAMEBITS_DENSE_H_ */
