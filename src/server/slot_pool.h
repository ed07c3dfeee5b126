#pragma once
// SlotPool: --parallel N generation slots, each a SequenceGenerator (plain or speculative) with its own KV
// cache of n_ctx tokens, fed from one FIFO queue by N worker threads. The Model is shared (its forward is
// reentrant). Records time to first token, per-token latency, token counts and draft acceptance in Metrics.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/executor.h"
#include "server/metrics.h"

namespace saker::server {

class SlotPool : public Executor {
 public:
  // make_generator(n_ctx) makes one slot's generator.
  using GeneratorFactory = std::function<Result<std::unique_ptr<SequenceGenerator>>(int64_t n_ctx)>;
  static Result<std::unique_ptr<SlotPool>> create(const GeneratorFactory& make_generator, int64_t n_ctx,
                                                  int32_t n_slots, Metrics* metrics);
  ~SlotPool() override;  // cancels queued and running requests, joins the workers

  std::shared_ptr<GenerationStream> submit(GenerationRequest request) override;
  ExecutorStats stats() const override;
  // Cancels every queued and running request (shutdown).
  void cancel_all();
  int64_t n_ctx() const override { return n_ctx_; }

 private:
  struct Job {
    GenerationRequest request;
    std::shared_ptr<GenerationStream> stream;
    std::chrono::steady_clock::time_point queued;
  };

  SlotPool(int64_t n_ctx, Metrics* metrics) : n_ctx_(n_ctx), metrics_(metrics) {}
  void worker(SequenceGenerator* generator);
  void run_job(SequenceGenerator* generator, Job& job);

  int64_t n_ctx_;
  Metrics* metrics_;
  std::vector<std::unique_ptr<SequenceGenerator>> generators_;
  std::vector<std::thread> workers_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<std::shared_ptr<GenerationStream>> running_;
  int64_t busy_ = 0;
  bool stop_ = false;
};

}  // namespace saker::server
