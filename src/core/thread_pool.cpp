#include "core/thread_pool.h"

#include <algorithm>

#include "core/env.h"

namespace saker {

namespace {
thread_local bool tls_inside_pool_task = false;
thread_local ThreadPool* tls_current_pool = nullptr;
}

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(debug_env().num_threads);
  return pool;
}

ThreadPool& ThreadPool::current() { return tls_current_pool ? *tls_current_pool : global(); }

ThreadPool::Scope::Scope(ThreadPool& pool) : previous_(tls_current_pool) { tls_current_pool = &pool; }

ThreadPool::Scope::~Scope() { tls_current_pool = previous_; }

bool ThreadPool::run_one_chunk() {
  int64_t begin;
  const std::function<void(int64_t, int64_t)>* job;
  {
    std::lock_guard lock(mutex_);
    if (!job_ || next_begin_ >= job_n_) return false;
    begin = next_begin_;
    next_begin_ += job_chunk_;
    job = job_;
  }
  const int64_t end = std::min(begin + job_chunk_, job_n_);
  tls_inside_pool_task = true;
  (*job)(begin, end);
  tls_inside_pool_task = false;
  {
    std::lock_guard lock(mutex_);
    if (--chunks_left_ == 0) done_cv_.notify_all();
  }
  return true;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || (job_ && generation_ != seen); });
      if (stop_) return;
      seen = generation_;
    }
    while (run_one_chunk()) {
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  if (workers_.empty() || tls_inside_pool_task || n <= min_chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard run_lock(run_mutex_);
  const int64_t target_chunks = static_cast<int64_t>(size()) * 4;  // some slack for uneven chunks
  const int64_t chunk = std::max(min_chunk, (n + target_chunks - 1) / target_chunks);
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    next_begin_ = 0;
    chunks_left_ = (n + chunk - 1) / chunk;
    ++generation_;
  }
  work_cv_.notify_all();
  while (run_one_chunk()) {
  }
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return chunks_left_ == 0; });
  job_ = nullptr;
}

}  // namespace saker
