// CPU reference softmax / log_softmax (docs/numerics_dense.md).
#include <cmath>
#include <vector>

#include "core/backend.h"
#include "cpu/dense/convert.h"
#include "cpu/dense/dense_cpu.h"
#include "cpu/dense/parallel.h"

namespace samebits::cpu::dense {

sb_status softmax_forward(const sb_softmax_params& p) {
  const int64_t n = p.cols;
  parallel_rows(p.rows, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(n)), e(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(static_cast<const char*>(p.x) + r * p.x_row_stride * dtype_size(p.x_dtype), n,
               p.x_dtype, x.data());
      float mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) mx = std::fmax(mx, x[j]);  // exact: order-free
      if (mx == -INFINITY) mx = 0.0f;  // all -inf: keep exp(x - mx) = 0, not NaN
      for (int64_t j = 0; j < n; ++j) e[j] = exp_f32(x[j] - mx);
      const float s = sum16(e.data(), n);
      char* y = static_cast<char*>(p.y) + r * p.y_row_stride * dtype_size(p.y_dtype);
      if (p.log) {
        const float ls = log_f32(s);
        for (int64_t j = 0; j < n; ++j) store(y, j, p.y_dtype, (x[j] - mx) - ls);
      } else {
        const float inv = 1.0f / s;
        for (int64_t j = 0; j < n; ++j) store(y, j, p.y_dtype, e[j] * inv);
      }
    }
  });
  return SB_OK;
}

sb_status softmax_backward(const sb_softmax_backward_params& p) {
  const int64_t n = p.cols;
  parallel_rows(p.rows, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> y(static_cast<size_t>(n)), dy(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      const size_t ys = dtype_size(p.y_dtype);
      load_row(static_cast<const char*>(p.y) + r * p.y_row_stride * ys, n, p.y_dtype, y.data());
      load_row(static_cast<const char*>(p.dy) + r * p.dy_row_stride * ys, n, p.y_dtype, dy.data());
      char* dx = static_cast<char*>(p.dx) + r * p.dx_row_stride * dtype_size(p.dx_dtype);
      if (p.log) {
        const float s = sum16(dy.data(), n);
        for (int64_t j = 0; j < n; ++j) store(dx, j, p.dx_dtype, dy[j] - exp_f32(y[j]) * s);
      } else {
        const float s = dot16(dy.data(), y.data(), n);
        for (int64_t j = 0; j < n; ++j) store(dx, j, p.dx_dtype, y[j] * (dy[j] - s));
      }
    }
  });
  return SB_OK;
}

}  // namespace samebits::cpu::dense
