#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "core/env.h"

namespace saker {

namespace {
thread_local bool tls_inside_pool_task = false;
thread_local ThreadPool* tls_current_pool = nullptr;

// How long a thread polls for the next job (a worker) or for the last chunk (the caller) before it sleeps on a
// condition variable. A decode step is hundreds of parallel loops a few microseconds apart; a futex sleep and
// wake-up between each pair cost more than the loops of a small model (SmolLM2-135M on 2 cores: 75.7 tok/s
// sleeping at once, against llama.cpp's spinning 104.7). Idle pools still sleep after this long.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls done() until it holds or kSpin has passed; true if it held.
template <typename Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return done();
  }
}
}  // namespace

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
  if (chunks_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard lock(mutex_);  // the caller checks chunks_left_ under it before it sleeps: no lost wake-up
    done_cv_.notify_all();
  }
  return true;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    spin_until(
        [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; });
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
  spin_until([&] { return chunks_left_.load(std::memory_order_acquire) == 0; });
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return chunks_left_ == 0; });
  job_ = nullptr;
}

}  // namespace saker
