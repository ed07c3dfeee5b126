#include "parallel/rank_threads.h"

#include <algorithm>

namespace saker {

RankThreads::RankThreads(int n_ranks, int threads_per_rank) {
  n_ranks = std::max(1, n_ranks);
  for (int r = 0; r < n_ranks; ++r) pools_.push_back(std::make_unique<ThreadPool>(std::max(1, threads_per_rank)));
  for (int r = 1; r < n_ranks; ++r) threads_.emplace_back([this, r] { worker(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankThreads::worker(int rank) {
  ThreadPool::Scope scope(*pools_[rank]);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(rank);
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_cv_.notify_all();
  }
}

void RankThreads::run(const std::function<void(int)>& fn) {
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    pending_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  {
    ThreadPool::Scope scope(*pools_[0]);
    fn(0);
  }
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

}  // namespace saker
