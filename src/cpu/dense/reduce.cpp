// CPU reference sum / mean over the last dim (docs/numerics_dense.md).
#include <vector>

#include "core/backend.h"
#include "cpu/dense/convert.h"
#include "cpu/dense/dense_cpu.h"
#include "cpu/dense/parallel.h"

namespace samebits::cpu::dense {

sb_status reduce(const sb_reduce_params& p) {
  const int64_t n = p.cols;
  parallel_rows(p.rows, 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(static_cast<const char*>(p.x) + r * p.x_row_stride * dtype_size(p.x_dtype), n,
               p.x_dtype, x.data());
      float s = sum16(x.data(), n);
      if (p.op == SB_REDUCE_MEAN) s = s / float(n);
      store(p.y, r * p.y_stride, p.y_dtype, s);
    }
  });
  return SB_OK;
}

}  // namespace samebits::cpu::dense
