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

std::string Metrics::render(const ExecutorStats& e, bool ready) const {
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
      e.queue_depth, e.slots_busy, e.slots_total, ready ? 1 : 0);
  const double hit_ratio = e.prefix_lookup_tokens > 0
                               ? static_cast<double>(e.prefix_hit_tokens) / static_cast<double>(e.prefix_lookup_tokens)
                               : 0.0;
  out += fmt::format(
      "# HELP saker_prefix_cache_lookup_tokens_total Prompt tokens looked up in the prefix cache.\n"
      "# TYPE saker_prefix_cache_lookup_tokens_total counter\nsaker_prefix_cache_lookup_tokens_total {}\n"
      "# HELP saker_prefix_cache_hit_tokens_total Prompt tokens served from cached KV pages (not recomputed).\n"
      "# TYPE saker_prefix_cache_hit_tokens_total counter\nsaker_prefix_cache_hit_tokens_total {}\n"
      "# HELP saker_prefix_cache_host_hit_tokens_total Of the hits, tokens brought back from the host-RAM tier.\n"
      "# TYPE saker_prefix_cache_host_hit_tokens_total counter\nsaker_prefix_cache_host_hit_tokens_total {}\n"
      "# HELP saker_prefix_cache_hit_ratio Hit tokens over looked-up tokens since start.\n"
      "# TYPE saker_prefix_cache_hit_ratio gauge\nsaker_prefix_cache_hit_ratio {:.6f}\n"
      "# HELP saker_prefix_cache_tokens Tokens held in cached pages that no running request owns.\n"
      "# TYPE saker_prefix_cache_tokens gauge\nsaker_prefix_cache_tokens {}\n"
      "# HELP saker_prefix_cache_host_pages KV pages kept in the host-RAM tier (--cache-ram).\n"
      "# TYPE saker_prefix_cache_host_pages gauge\nsaker_prefix_cache_host_pages {}\n"
      "# HELP saker_kv_pages_total KV pool pages.\n# TYPE saker_kv_pages_total gauge\nsaker_kv_pages_total {}\n"
      "# HELP saker_kv_pages_free KV pool pages neither owned nor cached.\n"
      "# TYPE saker_kv_pages_free gauge\nsaker_kv_pages_free {}\n"
      "# HELP saker_preemptions_total Sequences preempted (pages given back, recomputed later) for lack of KV pages.\n"
      "# TYPE saker_preemptions_total counter\nsaker_preemptions_total {}\n"
      "# HELP saker_engine_steps_total Batched engine steps (one forward each).\n"
      "# TYPE saker_engine_steps_total counter\nsaker_engine_steps_total {}\n"
      "# HELP saker_engine_step_tokens_total Tokens fed to the model over all engine steps.\n"
      "# TYPE saker_engine_step_tokens_total counter\nsaker_engine_step_tokens_total {}\n"
      "# HELP saker_speculation_undrafted_steps_total Engine steps in which the speculation cost policy held "
      "speculating requests' drafts back (plain decoding measured faster, or a plain step due for measuring).\n"
      "# TYPE saker_speculation_undrafted_steps_total counter\nsaker_speculation_undrafted_steps_total {}\n",
      e.prefix_lookup_tokens, e.prefix_hit_tokens, e.prefix_host_hit_tokens, hit_ratio,
      e.kv_pages_cached * e.kv_page_tokens, e.host_cached_pages, e.kv_pages_total, e.kv_pages_free, e.preemptions,
      e.engine_steps, e.engine_step_tokens, e.undrafted_steps);
  // What speculation costs and brings, measured: an operator compares the drafting steps' tokens per second
  // with the plain ones' (the cost policy's own comparison).
  out += fmt::format(
      "# HELP saker_speculation_decode_steps_total Engine steps that only decode, by whether drafts rode in them.\n"
      "# TYPE saker_speculation_decode_steps_total counter\n"
      "saker_speculation_decode_steps_total{{drafts=\"no\"}} {}\n"
      "saker_speculation_decode_steps_total{{drafts=\"yes\"}} {}\n"
      "# HELP saker_speculation_decode_step_seconds_total Wall time of those steps (drafting and the verify walk "
      "included).\n# TYPE saker_speculation_decode_step_seconds_total counter\n"
      "saker_speculation_decode_step_seconds_total{{drafts=\"no\"}} {:.6f}\n"
      "saker_speculation_decode_step_seconds_total{{drafts=\"yes\"}} {:.6f}\n"
      "# HELP saker_speculation_accepted_drafts Drafts accepted a verify step, the engine's recent average (what a "
      "new request expects; NaN before any verify step).\n# TYPE saker_speculation_accepted_drafts gauge\n"
      "saker_speculation_accepted_drafts {}\n",
      e.plain_decode_steps, e.drafting_steps, e.plain_decode_seconds, e.drafting_seconds,
      e.accepted_drafts >= 0 ? fmt::format("{:.4f}", e.accepted_drafts) : std::string("NaN"));
  return out;
}

}  // namespace saker::server
