// CPU reference GEMM. out(i, j) = alpha * dot16(A[i, :], op(B)[:, j]) + beta * bias(i, j):
// each product a*b is rounded to fp32, then accumulated in the lane-16 order
// of convert.h (docs/numerics_dense.md). Rows are independent: the row count,
// the thread count and the other rows never enter out(i, j).
#include <vector>

#include "core/backend.h"
#include "cpu/dense/convert.h"
#include "cpu/dense/dense_cpu.h"
#include "cpu/dense/parallel.h"

namespace samebits::cpu::dense {

sb_status gemm(const sb_gemm_params& p) {
  const int64_t m = p.m, n = p.n, k = p.k;
  const size_t in_sz = dtype_size(p.dtype);
  for (int32_t bi = 0; bi < p.batch; ++bi) {
    const char* a = static_cast<const char*>(p.a) + bi * p.a_batch_stride * in_sz;
    const char* b = static_cast<const char*>(p.b) + bi * p.b_batch_stride * in_sz;
    const char* bias = p.bias == nullptr ? nullptr
                       : static_cast<const char*>(p.bias) +
                             bi * p.bias_batch_stride * dtype_size(p.bias_dtype);
    char* out = static_cast<char*>(p.out) + bi * p.out_batch_stride * dtype_size(p.out_dtype);
    // Pack op(B) as fp32 (n, k): a layout change only, no arithmetic.
    std::vector<float> bt(size_t(n) * size_t(k));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t q = 0; q < k; ++q)
        bt[j * k + q] = p.b_layout == SB_B_NK ? load(b, j * p.b_row_stride + q, p.dtype)
                                              : load(b, q * p.b_row_stride + j, p.dtype);
    parallel_rows(m, 4, [&](int64_t r0, int64_t r1) {
      std::vector<float> arow(static_cast<size_t>(k));
      for (int64_t i = r0; i < r1; ++i) {
        for (int64_t q = 0; q < k; ++q) arow[q] = load(a, i * p.a_row_stride + q, p.dtype);
        for (int64_t j = 0; j < n; ++j) {
          float v = p.alpha * dot16(arow.data(), bt.data() + j * k, k);
          if (bias != nullptr) v = v + p.beta * load(bias, i * p.bias_row_stride + j, p.bias_dtype);
          store(out, i * p.out_row_stride + j, p.out_dtype, v);
        }
      }
    });
  }
  return SB_OK;
}

}  // namespace samebits::cpu::dense
