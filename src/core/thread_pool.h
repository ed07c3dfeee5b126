#pragma once
// A fixed pool of worker threads for data-parallel loops (the CPU backend's matmuls and codecs).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace saker {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads = 0);  // 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }  // the caller works too

  // Runs fn(begin, end) over [0, n) split into contiguous chunks of at least min_chunk; returns when all
  // chunks are done. Calls from inside a task run serially (no nested parallelism, no deadlock).
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

  static ThreadPool& global();  // sized by SAKER_NUM_THREADS or the hardware
  // The pool the ops of this thread use: the one a Scope on this thread names, else global(). A tensor-parallel
  // rank runs its ops on a pool of its own, so N ranks share the cores instead of queueing on one pool.
  static ThreadPool& current();

  // Makes `pool` this thread's current() until the scope ends (scopes nest).
  class Scope {
   public:
    explicit Scope(ThreadPool& pool);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ThreadPool* previous_;
  };

 private:
  void worker_loop();
  bool run_one_chunk();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // Guarded by mutex_. generation_, chunks_left_ and stop_ change under it too, and are atomic so that a thread
  // can spin on them without it before it sleeps (see kSpin in thread_pool.cpp).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;
  int64_t next_begin_ = 0;
  std::atomic<int64_t> chunks_left_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex run_mutex_;  // one parallel_for at a time
};

}  // namespace saker
