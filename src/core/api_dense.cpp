// The C ABI of the dense ops (include/samebits/dense.h): checks the
// structural rules of each params struct, then dispatches to the backend
// named by params->device.
#include <string>

#include "core/backend.h"
#include "cpu/dense/dense_cpu.h"
#include "cuda/dense/dense_cuda.h"
#include "samebits/dense.h"

namespace samebits {
namespace {

bool valid_dtype(sb_dtype d) { return d == SB_F32 || d == SB_F16 || d == SB_BF16; }

sb_status check_common(const void* p, sb_device device, std::initializer_list<sb_dtype> dtypes) {
  if (p == nullptr) return fail(SB_INVALID_ARGUMENT, "params is NULL");
  for (sb_dtype d : dtypes)
    if (!valid_dtype(d)) return fail(SB_INVALID_ARGUMENT, "dtype: unknown sb_dtype");
  if (device != SB_CPU && device != SB_CUDA)
    return fail(SB_INVALID_ARGUMENT, "device: unknown sb_device");
  return SB_OK;
}

sb_status check_rows(int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return fail(SB_INVALID_ARGUMENT, "rows and cols must be >= 0");
  return SB_OK;
}

sb_status check_gemm(const sb_gemm_params* p) {
  if (sb_status s = check_common(p, p ? p->device : SB_CPU,
                                 {p ? p->dtype : SB_F32, p ? p->out_dtype : SB_F32});
      s != SB_OK)
    return s;
  if (p->bias != nullptr && !valid_dtype(p->bias_dtype))
    return fail(SB_INVALID_ARGUMENT, "bias_dtype: unknown sb_dtype");
  if (p->batch < 0 || p->m < 0 || p->n < 0 || p->k < 0)
    return fail(SB_INVALID_ARGUMENT, "batch, m, n and k must be >= 0");
  if (p->b_layout != SB_B_NK && p->b_layout != SB_B_KN)
    return fail(SB_INVALID_ARGUMENT, "b_layout must be SB_B_NK or SB_B_KN");
  if (p->batch * p->m * p->n > 0 && (p->out == nullptr || (p->k > 0 && (p->a == nullptr || p->b == nullptr))))
    return fail(SB_INVALID_ARGUMENT, "a, b and out must not be NULL");
  return SB_OK;
}

}  // namespace

#ifndef SAMEBITS_WITH_CUDA
namespace cuda::dense {
static sb_status not_built() {
  return fail(SB_UNSUPPORTED, "this samebits build has no CUDA kernels (built without nvcc)");
}
sb_status gemm(const sb_gemm_params&) { return not_built(); }
sb_status rmsnorm_forward(const sb_rmsnorm_params&) { return not_built(); }
sb_status rmsnorm_backward(const sb_rmsnorm_backward_params&) { return not_built(); }
sb_status softmax_forward(const sb_softmax_params&) { return not_built(); }
sb_status softmax_backward(const sb_softmax_backward_params&) { return not_built(); }
sb_status reduce(const sb_reduce_params&) { return not_built(); }
}  // namespace cuda::dense
#endif

}  // namespace samebits

using namespace samebits;

extern "C" {

sb_status sb_gemm(const sb_gemm_params* p) {
  fail(SB_OK, "");
  if (sb_status s = check_gemm(p); s != SB_OK) return s;
  if (p->batch == 0 || p->m == 0 || p->n == 0) return SB_OK;
  return p->device == SB_CPU ? cpu::dense::gemm(*p) : cuda::dense::gemm(*p);
}

sb_status sb_rmsnorm_forward(const sb_rmsnorm_params* p) {
  fail(SB_OK, "");
  if (sb_status s = check_common(p, p ? p->device : SB_CPU,
                                 {p ? p->x_dtype : SB_F32, p ? p->y_dtype : SB_F32,
                                  p ? p->w_dtype : SB_F32});
      s != SB_OK)
    return s;
  if (sb_status s = check_rows(p->rows, p->cols); s != SB_OK) return s;
  if (p->rows * p->cols > 0 && (p->x == nullptr || p->y == nullptr))
    return fail(SB_INVALID_ARGUMENT, "x and y must not be NULL");
  if (p->residual != nullptr && p->residual_out == nullptr)
    return fail(SB_INVALID_ARGUMENT, "residual_out must be set when residual is");
  if (!(p->eps >= 0.0f)) return fail(SB_INVALID_ARGUMENT, "eps must be >= 0");
  if (p->rows == 0) return SB_OK;
  return p->device == SB_CPU ? cpu::dense::rmsnorm_forward(*p) : cuda::dense::rmsnorm_forward(*p);
}

sb_status sb_rmsnorm_backward(const sb_rmsnorm_backward_params* p) {
  fail(SB_OK, "");
  if (sb_status s = check_common(p, p ? p->device : SB_CPU,
                                 {p ? p->x_dtype : SB_F32, p ? p->y_dtype : SB_F32,
                                  p ? p->w_dtype : SB_F32});
      s != SB_OK)
    return s;
  if (sb_status s = check_rows(p->rows, p->cols); s != SB_OK) return s;
  if (p->rows * p->cols > 0 &&
      (p->x == nullptr || p->dy == nullptr || p->dx == nullptr || p->rstd == nullptr))
    return fail(SB_INVALID_ARGUMENT, "x, rstd, dy and dx must not be NULL");
  if (p->dw != nullptr && (p->weight == nullptr || p->workspace == nullptr))
    return fail(SB_INVALID_ARGUMENT, "dw needs weight and a workspace");
  return p->device == SB_CPU ? cpu::dense::rmsnorm_backward(*p)
                             : cuda::dense::rmsnorm_backward(*p);
}

sb_status sb_softmax_forward(const sb_softmax_params* p) {
  fail(SB_OK, "");
  if (sb_status s = check_common(p, p ? p->device : SB_CPU,
                                 {p ? p->x_dtype : SB_F32, p ? p->y_dtype : SB_F32});
      s != SB_OK)
    return s;
  if (sb_status s = check_rows(p->rows, p->cols); s != SB_OK) return s;
  if (p->rows * p->cols > 0 && (p->x == nullptr || p->y == nullptr))
    return fail(SB_INVALID_ARGUMENT, "x and y must not be NULL");
  if (p->rows * p->cols == 0) return SB_OK;
  return p->device == SB_CPU ? cpu::dense::softmax_forward(*p) : cuda::dense::softmax_forward(*p);
}

sb_status sb_softmax_backward(const sb_softmax_backward_params* p) {
  fail(SB_OK, "");
  if (sb_status s = check_common(p, p ? p->device : SB_CPU,
                                 {p ? p->y_dtype : SB_F32, p ? p->dx_dtype : SB_F32});
      s != SB_OK)
    return s;
  if (sb_status s = check_rows(p->rows, p->cols); s != SB_OK) return s;
  if (p->rows * p->cols > 0 && (p->y == nullptr || p->dy == nullptr || p->dx == nullptr))
    return fail(SB_INVALID_ARGUMENT, "y, dy and dx must not be NULL");
  if (p->rows * p->cols == 0) return SB_OK;
  return p->device == SB_CPU ? cpu::dense::softmax_backward(*p)
                             : cuda::dense::softmax_backward(*p);
}

sb_status sb_reduce(const sb_reduce_params* p) {
  fail(SB_OK, "");
  if (sb_status s = check_common(p, p ? p->device : SB_CPU,
                                 {p ? p->x_dtype : SB_F32, p ? p->y_dtype : SB_F32});
      s != SB_OK)
    return s;
  if (sb_status s = check_rows(p->rows, p->cols); s != SB_OK) return s;
  if (p->op != SB_REDUCE_SUM && p->op != SB_REDUCE_MEAN)
    return fail(SB_INVALID_ARGUMENT, "op must be SB_REDUCE_SUM or SB_REDUCE_MEAN");
  if (p->rows > 0 && (p->y == nullptr || (p->cols > 0 && p->x == nullptr)))
    return fail(SB_INVALID_ARGUMENT, "x and y must not be NULL");
  if (p->rows == 0) return SB_OK;
  return p->device == SB_CPU ? cpu::dense::reduce(*p) : cuda::dense::reduce(*p);
}

int64_t sb_rmsnorm_dw_workspace_elems(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 1;
  return ((rows + SB_RMSNORM_DW_CHUNK - 1) / SB_RMSNORM_DW_CHUNK) * cols;
}

}  // extern "C"
