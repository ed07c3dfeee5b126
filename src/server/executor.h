#pragma once
// The request path between HTTP handlers and the engine. A handler submits a GenerationRequest to an
// Executor and reads GenerationEvents from the GenerationStream it gets back; cancelling the stream (a
// client that went away) stops the generation at its next step and frees its KV pages. EngineExecutor (the
// batched engine) implements it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/generator.h"

namespace saker::server {

struct GenerationRequest {
  std::vector<int32_t> prompt;
  GenerateOptions options;  // on_token and cancel are set by the executor
};

struct GenerationEvent {
  enum class Kind { kText, kDone, kError };
  Kind kind = Kind::kText;
  std::string text;                     // kText: released text (valid UTF-8, no part of a stop string)
  std::vector<GeneratedToken> tokens;   // tokens generated since the previous event (ids, logprobs)
  GenerateResult result;                // kDone
  Status status;                        // kError
  // kError: the server ended the generation because it is shutting down (FinishReason::kShutdown), not a
  // failure of the generation; the answer is a 503, never a completed one.
  bool shutdown = false;
};

class GenerationStream {
 public:
  // Producer side (the executor).
  void push(GenerationEvent e);
  void add_token(const GeneratedToken& t);  // held until the next text or the end
  void push_text(std::string text);
  void finish(Result<GenerateResult> r);

  // Consumer side (the handler): blocks until an event; after kDone / kError there are no more.
  GenerationEvent next();
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  const std::atomic<bool>* cancel_flag() const { return &cancelled_; }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<GenerationEvent> events_;
  std::vector<GeneratedToken> pending_tokens_;
  std::atomic<bool> cancelled_{false};
};

struct ExecutorStats {
  int64_t queue_depth = 0;
  int64_t slots_busy = 0;
  int64_t slots_total = 0;
  // The batched engine's KV pool and prefix cache (zero for an executor without one).
  int64_t kv_pages_total = 0;
  int64_t kv_pages_free = 0;
  int64_t kv_pages_cached = 0;
  int64_t kv_page_tokens = 0;
  int64_t prefix_lookup_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_host_hit_tokens = 0;
  int64_t host_cached_pages = 0;
  int64_t preemptions = 0;
  int64_t engine_steps = 0;
  int64_t engine_step_tokens = 0;
  int64_t undrafted_steps = 0;  // steps in which the speculation cost policy held drafts back
  // Decode-only steps without drafts and with them, and their wall time: what speculation costs a step.
  int64_t plain_decode_steps = 0, drafting_steps = 0;
  double plain_decode_seconds = 0, drafting_seconds = 0;
  double accepted_drafts = -1.0;  // the engine's recent mean accepted drafts per verify step (negative: none yet)
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::shared_ptr<GenerationStream> submit(GenerationRequest request) = 0;
  virtual ExecutorStats stats() const = 0;
  // The longest prompt + generation one request may use.
  virtual int64_t n_ctx() const = 0;
};

}  // namespace saker::server
