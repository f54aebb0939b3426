// CPU backend thread pool (see thread_pool.h).
#include "cpu/thread_pool.h"

#include <pthread.h>
#include <unistd.h>

#include "core/backend.h"

namespace samebits::cpu {

#ifdef SAMEBITS_POOL_TEST_PAUSES
namespace {
void test_pause() {
  thread_local unsigned state = 12345u;
  state = state * 1103515245u + 12345u;
  if ((state >> 16) % 4 == 0) usleep((state >> 8) % 50);
}
}  // namespace
#endif

ThreadPool& ThreadPool::get() {
  static ThreadPool* pool = [] {
    ThreadPool* p = new ThreadPool();  // intentionally leaked
    // A fork while another thread is inside parallel_for (or a worker holds
    // mu_) would copy a locked mutex into a child that has no thread to
    // unlock it: the forking thread holds both across the fork instead, so
    // the child starts with free mutexes and no workers (it starts its own).
    pthread_atfork([] { ThreadPool::get().before_fork(); }, [] { ThreadPool::get().after_fork(false); },
                   [] { ThreadPool::get().after_fork(true); });
    return p;
  }();
  return *pool;
}

void ThreadPool::before_fork() {
  call_mu_.lock();  // no parallel_for or resize in flight
  mu_.lock();       // no worker between its wait and its arrival
}

void ThreadPool::after_fork(bool child) {
  if (child) {
    workers_.clear();  // the parent's threads do not exist here
    started_ = false;
    busy_ = 0;
  }
  mu_.unlock();
  call_mu_.unlock();
}

void ThreadPool::start(int n) {
  if (n <= 0) n = int(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  stopping_ = false;
  owner_pid_ = long(getpid());
  // A new worker has seen every generation so far: it waits for the next
  // one. (Started at 0 instead, after a resize it would take the finished
  // generation for a new one and arrive on busy_ twice for one call: the
  // caller then returned early or waited forever.)
  uint64_t seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen = generation_;
  }
  for (int i = 1; i < n; ++i) workers_.push_back(new std::thread([this, seen] { worker_loop(seen); }));
  started_ = true;
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread* t : workers_) {
    t->join();
    delete t;
  }
  workers_.clear();
  stopping_ = false;
}

void ThreadPool::set_num_threads(int n) {
  std::lock_guard<std::mutex> call(call_mu_);
  if (started_ && owner_pid_ == long(getpid())) stop();
  workers_.clear();  // after a fork the parent's threads do not exist here
  start(n);
}

int ThreadPool::num_threads() {
  std::lock_guard<std::mutex> call(call_mu_);
  if (!started_) start(0);
  return int(workers_.size()) + 1;
}

void ThreadPool::run_items() {
  for (int64_t i = next_.fetch_add(1); i < job_n_; i = next_.fetch_add(1)) {
    try {
      (*job_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      next_.store(job_n_);  // abandon the remaining items
    }
  }
}

void ThreadPool::worker_loop(uint64_t seen) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
#ifdef SAMEBITS_POOL_TEST_PAUSES
    test_pause();  // the stress test widens every window that preemption opens
#endif
    run_items();
    std::lock_guard<std::mutex> lock(mu_);
    if (--busy_ == 0) done_cv_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> call(call_mu_);
  if (!started_ || owner_pid_ != long(getpid())) {
    workers_.clear();  // a forked child: the parent's workers are gone
    start(0);
  }
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    next_.store(0);
    busy_ = int(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  work_cv_.notify_all();
  run_items();  // the calling thread works too
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void set_num_threads(int num_threads) { ThreadPool::get().set_num_threads(num_threads); }

}  // namespace samebits::cpu
