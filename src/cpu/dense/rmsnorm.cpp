// CPU reference RMSNorm, forward and backward (docs/numerics_dense.md).
#include <cmath>
#include <vector>

#include "core/backend.h"
#include "cpu/dense/convert.h"
#include "cpu/dense/dense_cpu.h"
#include "cpu/dense/parallel.h"

namespace samebits::cpu::dense {

sb_status rmsnorm_forward(const sb_rmsnorm_params& p) {
  const int64_t n = p.cols;
  std::vector<float> w(size_t(n), 1.0f);
  if (p.weight != nullptr) load_row(p.weight, n, p.w_dtype, w.data());
  parallel_rows(p.rows, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> h(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      const char* x = static_cast<const char*>(p.x) + r * p.x_row_stride * dtype_size(p.x_dtype);
      load_row(x, n, p.x_dtype, h.data());
      if (p.residual != nullptr) {
        const char* res = static_cast<const char*>(p.residual) +
                          r * p.residual_row_stride * dtype_size(p.x_dtype);
        char* ro = static_cast<char*>(p.residual_out) +
                   r * p.residual_out_row_stride * dtype_size(p.x_dtype);
        for (int64_t j = 0; j < n; ++j) {
          store(ro, j, p.x_dtype, h[j] + load(res, j, p.x_dtype));
          h[j] = load(ro, j, p.x_dtype);  // the rounded sum is what gets normalized
        }
      }
      float ss = lane16_sum(n, [&](int64_t j) { return h[j] * h[j]; });
      float rstd = 1.0f / std::sqrt(ss / float(n) + p.eps);
      if (p.rstd != nullptr) p.rstd[r] = rstd;
      char* y = static_cast<char*>(p.y) + r * p.y_row_stride * dtype_size(p.y_dtype);
      for (int64_t j = 0; j < n; ++j) store(y, j, p.y_dtype, (h[j] * rstd) * w[j]);
    }
  });
  return SB_OK;
}

sb_status rmsnorm_backward(const sb_rmsnorm_backward_params& p) {
  const int64_t n = p.cols, rows = p.rows;
  std::vector<float> w(size_t(n), 1.0f);
  if (p.weight != nullptr) load_row(p.weight, n, p.w_dtype, w.data());
  const int64_t chunks = (rows + SB_RMSNORM_DW_CHUNK - 1) / SB_RMSNORM_DW_CHUNK;
  // dx row by row; dw partials per chunk of SB_RMSNORM_DW_CHUNK rows, each
  // chunk's partial the left-to-right sum of its rows (thread-independent).
  parallel_rows(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> xh(static_cast<size_t>(n)), dy(static_cast<size_t>(n)), g(static_cast<size_t>(n));
    for (int64_t c = c0; c < c1; ++c) {
      float* part = p.dw != nullptr ? p.workspace + c * n : nullptr;
      if (part != nullptr)
        for (int64_t j = 0; j < n; ++j) part[j] = 0.0f;
      const int64_t rend = std::min(rows, (c + 1) * int64_t(SB_RMSNORM_DW_CHUNK));
      for (int64_t r = c * SB_RMSNORM_DW_CHUNK; r < rend; ++r) {
        const float rstd = p.rstd[r];
        const char* x = static_cast<const char*>(p.x) + r * p.x_row_stride * dtype_size(p.x_dtype);
        const char* dyp =
            static_cast<const char*>(p.dy) + r * p.dy_row_stride * dtype_size(p.y_dtype);
        for (int64_t j = 0; j < n; ++j) {
          xh[j] = load(x, j, p.x_dtype) * rstd;
          dy[j] = load(dyp, j, p.y_dtype);
          g[j] = dy[j] * w[j];
        }
        const float mean_gx = dot16(g.data(), xh.data(), n) / float(n);
        char* dx = static_cast<char*>(p.dx) + r * p.dx_row_stride * dtype_size(p.x_dtype);
        for (int64_t j = 0; j < n; ++j) store(dx, j, p.x_dtype, rstd * (g[j] - xh[j] * mean_gx));
        if (part != nullptr)
          for (int64_t j = 0; j < n; ++j) part[j] = part[j] + dy[j] * xh[j];
      }
    }
  });
  if (p.dw != nullptr) {
    // fold the chunk partials left to right, chunk 0 first
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t c = 0; c < chunks; ++c) acc = acc + p.workspace[c * n + j];
      store(p.dw, j, p.w_dtype, acc);
    }
  }
  return SB_OK;
}

}  // namespace samebits::cpu::dense
