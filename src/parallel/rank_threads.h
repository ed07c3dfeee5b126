#pragma once
// RankThreads: one thread per tensor-parallel rank, kept for the model's lifetime (a forward per step would
// otherwise start N threads per token). run(fn) calls fn(rank) for every rank at once, rank 0 on the calling
// thread, and returns when all have returned. Each rank's ops run on a thread pool of its own
// (ThreadPool::Scope), threads_per_rank threads counting the rank's thread, so N ranks share the cores
// instead of queueing on one pool.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace saker {

class RankThreads {
 public:
  RankThreads(int n_ranks, int threads_per_rank);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return static_cast<int>(pools_.size()); }
  int threads_per_rank() const { return pools_.empty() ? 0 : pools_[0]->size(); }
  // One call at a time.
  void run(const std::function<void(int rank)>& fn);

 private:
  void worker(int rank);

  std::vector<std::unique_ptr<ThreadPool>> pools_;  // [n_ranks]
  std::vector<std::thread> threads_;                // ranks 1..n-1
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace saker
