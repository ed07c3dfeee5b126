#include "server/metrics.h"

#include <fmt/format.h>

namespace saker::server {

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  if (i < counts_.size()) counts_[i]++;
  count_++;
  sum_ += v;
}

void Histogram::render(const std::string& name, const std::string& help, std::string* out) const {
  *out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    *out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  *out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      token_latency_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void Metrics::on_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  requests_[{endpoint, status}]++;
}
void Metrics::on_prompt_tokens(int64_t n) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(n);
}
void Metrics::on_generated_tokens(int64_t n) {
  std::lock_guard lock(mutex_);
  generated_tokens_ += static_cast<uint64_t>(n);
}
void Metrics::on_finish(const std::string& reason) {
  std::lock_guard lock(mutex_);
  finishes_[reason]++;
}
void Metrics::on_draft(int64_t verify_steps, int64_t committed_tokens) {
  std::lock_guard lock(mutex_);
  draft_verify_steps_ += static_cast<uint64_t>(verify_steps);
  draft_committed_tokens_ += static_cast<uint64_t>(committed_tokens);
}
void Metrics::on_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}
void Metrics::on_token_interval(double seconds) {
  std::lock_guard lock(mutex_);
  token_latency_.observe(seconds);
}

std::string Metrics::render(int64_t queue_depth, int64_t slots_busy, int64_t slots_total, bool ready) const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP saker_requests_total HTTP requests answered, by endpoint and status code.\n"
         "# TYPE saker_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    out += fmt::format("saker_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
  }
  out += "# HELP saker_generations_total Finished generations, by finish reason.\n"
         "# TYPE saker_generations_total counter\n";
  for (const auto& [reason, n] : finishes_) {
    out += fmt::format("saker_generations_total{{reason=\"{}\"}} {}\n", reason, n);
  }
  out += fmt::format(
      "# HELP saker_prompt_tokens_total Prompt tokens processed.\n# TYPE saker_prompt_tokens_total counter\n"
      "saker_prompt_tokens_total {}\n"
      "# HELP saker_generation_tokens_total Tokens generated.\n# TYPE saker_generation_tokens_total counter\n"
      "saker_generation_tokens_total {}\n",
      prompt_tokens_, generated_tokens_);
  out += fmt::format(
      "# HELP saker_draft_verify_steps_total Speculative verify steps (target forwards over drafted tokens).\n"
      "# TYPE saker_draft_verify_steps_total counter\nsaker_draft_verify_steps_total {}\n"
      "# HELP saker_draft_committed_tokens_total Tokens committed by speculative verify steps (accepted drafts plus "
      "the target's own token); over verify steps: the mean accepted length.\n"
      "# TYPE saker_draft_committed_tokens_total counter\nsaker_draft_committed_tokens_total {}\n",
      draft_verify_steps_, draft_committed_tokens_);
  ttft_.render("saker_time_to_first_token_seconds", "Time from queueing a request to its first generated token.",
               &out);
  token_latency_.render("saker_time_per_output_token_seconds", "Time between two generated tokens of a sequence.",
                        &out);
  out += fmt::format(
      "# HELP saker_queue_depth Requests waiting for a slot.\n# TYPE saker_queue_depth gauge\nsaker_queue_depth {}\n"
      "# HELP saker_slots_busy Generation slots in use.\n# TYPE saker_slots_busy gauge\nsaker_slots_busy {}\n"
      "# HELP saker_slots_total Generation slots (--parallel).\n# TYPE saker_slots_total gauge\nsaker_slots_total {}\n"
      "# HELP saker_model_ready 1 once the model is loaded.\n# TYPE saker_model_ready gauge\nsaker_model_ready {}\n",
      queue_depth, slots_busy, slots_total, ready ? 1 : 0);
  return out;
}

}  // namespace saker::server
