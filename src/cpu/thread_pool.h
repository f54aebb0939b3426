// CPU backend: a small persistent thread pool. Work items are claimed from an
// atomic counter, so which thread runs which item varies from run to run;
// every caller makes each item's arithmetic independent of that (numerics.md:
// the CPU thread count never changes a result).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace samebits::cpu {

class ThreadPool {
 public:
  // The process-wide pool (created on first use, never destroyed, so no
  // thread is joined during static destruction).
  static ThreadPool& get();

  // Total threads, the calling thread included. n <= 0: hardware concurrency.
  void set_num_threads(int n);
  int num_threads();

  // Runs fn(i) for every i in [0, n) and returns when all have finished.
  // Calls from different threads are serialized; fn must not call
  // parallel_for itself. An exception thrown by fn is rethrown here.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  ThreadPool() = default;
  void before_fork();            // pthread_atfork handlers (see get())
  void after_fork(bool child);
  void start(int n);
  void stop();
  void worker_loop(uint64_t seen);  // seen: the generation at its start
  void run_items();

  std::mutex call_mu_;  // one parallel_for (or resize) at a time
  std::mutex mu_;       // guards the fields below
  std::condition_variable work_cv_;  // caller -> workers: a new generation
  std::condition_variable done_cv_;  // last worker -> caller: all finished
  std::vector<std::thread*> workers_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  std::atomic<int64_t> next_{0};
  uint64_t generation_ = 0;
  int busy_ = 0;
  bool stopping_ = false;
  bool started_ = false;
  long owner_pid_ = 0;
  std::exception_ptr error_;
};

}  // namespace samebits::cpu
