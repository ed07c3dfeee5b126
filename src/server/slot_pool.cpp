#include "server/slot_pool.h"

#include <algorithm>

#include "core/log.h"

namespace saker::server {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

Result<std::unique_ptr<SlotPool>> SlotPool::create(const GeneratorFactory& make_generator, int64_t n_ctx,
                                                   int32_t n_slots, Metrics* metrics) {
  if (n_slots <= 0) return make_error(StatusCode::kInvalidArgument, "--parallel must be >= 1 (got {})", n_slots);
  std::unique_ptr<SlotPool> pool(new SlotPool(n_ctx, metrics));
  for (int32_t i = 0; i < n_slots; ++i) {
    auto g = make_generator(n_ctx);
    if (!g.ok()) return g.status();
    pool->generators_.push_back(std::move(g).value());
  }
  for (auto& g : pool->generators_) pool->workers_.emplace_back([p = pool.get(), gen = g.get()] { p->worker(gen); });
  return pool;
}

SlotPool::~SlotPool() {
  std::deque<Job> dropped;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& j : dropped) j.stream->finish(make_error(StatusCode::kInternal, "the server is shutting down"));
  for (auto& t : workers_) t.join();
}

std::shared_ptr<GenerationStream> SlotPool::submit(GenerationRequest request) {
  auto stream = std::make_shared<GenerationStream>();
  {
    std::lock_guard lock(mutex_);
    if (stop_) {
      stream->finish(make_error(StatusCode::kInternal, "the server is shutting down"));
      return stream;
    }
    queue_.push_back({std::move(request), stream, Clock::now()});
  }
  cv_.notify_one();
  return stream;
}

ExecutorStats SlotPool::stats() const {
  std::lock_guard lock(mutex_);
  return {static_cast<int64_t>(queue_.size()), busy_, static_cast<int64_t>(generators_.size())};
}

void SlotPool::cancel_all() {
  std::lock_guard lock(mutex_);
  for (auto& j : queue_) j.stream->cancel();
  for (auto& r : running_) r->cancel();
}

void SlotPool::worker(SequenceGenerator* generator) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_++;
      running_.push_back(job.stream);
    }
    run_job(generator, job);
    {
      std::lock_guard lock(mutex_);
      busy_--;
      running_.erase(std::find(running_.begin(), running_.end(), job.stream));
    }
  }
}

void SlotPool::run_job(SequenceGenerator* generator, Job& job) {
  GenerationStream& stream = *job.stream;
  if (stream.cancelled()) {  // the client left while queued
    if (metrics_) metrics_->on_finish("cancelled");
    GenerateResult r;
    r.finish = FinishReason::kCancelled;
    stream.finish(std::move(r));
    return;
  }
  GenerateOptions opt = job.request.options;
  opt.cancel = stream.cancel_flag();
  Clock::time_point last = job.queued;
  bool first = true;
  auto user_on_token = opt.on_token;
  opt.on_token = [&](const GeneratedToken& t) {
    const Clock::time_point now = Clock::now();
    if (metrics_) {
      if (first) {
        metrics_->on_first_token(seconds_between(last, now));
      } else {
        metrics_->on_token_interval(seconds_between(last, now));
      }
    }
    first = false;
    last = now;
    stream.add_token(t);
    return !stream.cancelled();
  };
  auto result = generator->generate(job.request.prompt, opt, [&](std::string_view text) {
    stream.push_text(std::string(text));
    return !stream.cancelled();
  });
  if (metrics_) {
    if (result.ok()) {
      metrics_->on_prompt_tokens(result->n_prompt);
      metrics_->on_generated_tokens(static_cast<int64_t>(result->tokens.size()));
      metrics_->on_finish(finish_reason_name(result->finish));
      if (result->draft) metrics_->on_draft(result->draft->verify_steps, result->draft->committed_tokens);
    } else {
      metrics_->on_finish("error");
    }
  }
  if (!result.ok()) SAKER_LOG_WARN("generation failed: {}", result.status().to_string());
  stream.finish(std::move(result));
}

}  // namespace saker::server
