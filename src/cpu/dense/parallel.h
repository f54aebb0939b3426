// A fork-join loop over independent rows for the CPU dense backend. Work is
// split over threads by row ranges only; no reduction ever crosses a thread,
// so the thread count never changes a result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace samebits::cpu::dense {

// Calls body(begin, end) over [0, n) in contiguous ranges of at least
// `grain` items, on up to hardware_concurrency() threads.
template <class F>
void parallel_rows(int64_t n, int64_t grain, F&& body) {
  int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t nt = std::min<int64_t>(hw, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (nt <= 1) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
  int64_t per = (n + nt - 1) / nt;
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < nt; ++t) {
    int64_t b = t * per, e = std::min(n, b + per);
    if (b < e) threads.emplace_back([&body, b, e] { body(b, e); });
  }
  body(int64_t(0), std::min(n, per));
  for (auto& th : threads) th.join();
}

}  // namespace samebits::cpu::dense
