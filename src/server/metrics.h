#pragma once
// Server metrics in the Prometheus text format: request and token counters, time-to-first-token and
// per-token latency histograms, queue depth and slot use. Thread-safe; every update takes one mutex.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/executor.h"

namespace saker::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double v);
  // Appends `name_bucket{le=...}`, `name_sum`, `name_count` lines.
  void render(const std::string& name, const std::string& help, std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  Metrics();

  // One finished HTTP request on `endpoint` ("/v1/chat/completions") with its status code.
  void on_request(const std::string& endpoint, int status);
  void on_prompt_tokens(int64_t n);
  void on_generated_tokens(int64_t n);
  void on_finish(const std::string& reason);  // a finished generation: stop, length, eos, cancelled, shutdown, error
  void on_first_token(double seconds);        // from admission to the queue to the first generated token
  void on_token_interval(double seconds);     // between two generated tokens of one sequence
  // Speculative decoding: verify steps run and tokens they committed (mean accepted length = ratio).
  void on_draft(int64_t verify_steps, int64_t committed_tokens);

  // Gauges come from the executor when the page is rendered.
  std::string render(const ExecutorStats& executor, bool ready) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> finishes_;
  uint64_t prompt_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t draft_verify_steps_ = 0;
  uint64_t draft_committed_tokens_ = 0;
  Histogram ttft_;
  Histogram token_latency_;
};

}  // namespace saker::server
