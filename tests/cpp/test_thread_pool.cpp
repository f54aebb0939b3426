// The CPU thread pool under churn: a pool resized right before every call
// (as the Python tests do before each test) must run every item exactly once
// before parallel_for returns, and must never hang; a child forked while
// another thread is inside parallel_for must get a working pool. A watchdog turns a hang
// into a failure with a message instead of a CI timeout.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#include <algorithm>

#include "cpu/thread_pool.h"
#include "test_util.h"

namespace {

std::atomic<int64_t> g_progress{0};

void watchdog() {
  int64_t last = -1;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(20));
    int64_t now = g_progress.load();
    if (now == last) {
      std::fprintf(stderr, "FAIL: thread pool made no progress for 20 s at call %lld (a hang)\n",
                   static_cast<long long>(now));
      std::fflush(stderr);
      std::_Exit(1);
    }
    last = now;
  }
}

// Runs `calls` resize-then-run rounds; returns the number of rounds in which
// parallel_for returned before all of its items had finished.
int churn(int calls) {
  samebits::cpu::ThreadPool& pool = samebits::cpu::ThreadPool::get();
  int early = 0;
  for (int c = 0; c < calls; ++c) {
    pool.set_num_threads(2 + c % 3);  // 1 to 3 workers, restarted every round
    // A varying pause, so the new workers start before, during and after
    // the call (a Python caller pauses for some microseconds here).
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(c % 23 * 5);
    while (std::chrono::steady_clock::now() < until) {
    }
    const int64_t n = 4 + c % 13;
    std::atomic<int64_t> finished{0};
    std::atomic<int64_t> ran[17] = {};
    pool.parallel_for(n, [&](int64_t i) {
      volatile double x = 0;  // a little work, so items overlap
      for (int k = 0; k < 200 + int(i) * 37; ++k) x = x + 1e-3 * k;
      ran[i].fetch_add(1);
      finished.fetch_add(1);
    });
    if (finished.load() != n) ++early;
    for (int64_t i = 0; i < n; ++i) CHECK(ran[i].load() <= 1);
    g_progress.fetch_add(1);
  }
  return early;
}

// Forks while another thread keeps the pool busy; returns the number of
// children whose pool did not run a call to completion within 10 s (a
// child that inherited a locked mutex hangs and is killed by its alarm).
int fork_rounds(int rounds) {
  samebits::cpu::ThreadPool& pool = samebits::cpu::ThreadPool::get();
  pool.set_num_threads(3);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {
      pool.parallel_for(16, [](int64_t) {
        volatile double x = 0;
        for (int k = 0; k < 2000; ++k) x = x + 1e-3 * k;
      });
    }
  });
  int bad = 0;
  for (int r = 0; r < rounds; ++r) {
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      alarm(10);
      std::atomic<int64_t> n{0};
      samebits::cpu::ThreadPool::get().parallel_for(32, [&](int64_t) { n.fetch_add(1); });
      _exit(n.load() == 32 ? 0 : 3);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
    g_progress.fetch_add(1);
  }
  stop.store(true);
  busy.join();
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const int forks = argc > 1 ? std::atoi(argv[1]) : 200;
  std::thread(watchdog).detach();
  // Busy threads beyond the cores, so pool threads get preempted at any point
  // (a loaded CI machine).
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  const int n_hogs = 2 * int(std::max(1u, std::thread::hardware_concurrency()));
  for (int h = 0; h < n_hogs; ++h)
    hogs.emplace_back([&] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  const int early = churn(3000);
  stop.store(true);
  for (std::thread& t : hogs) t.join();
  std::printf("3000 resize-then-run rounds: %d returned before their items finished\n", early);
  CHECK(early == 0);
  const int hung = fork_rounds(forks);
  std::printf("%d forks while another thread runs parallel_for: %d children's pools hung\n", forks, hung);
  CHECK(hung == 0);
  std::printf("test_thread_pool: ok\n");
  return 0;
}
