#pragma once
// What a generation loop takes and gives: options, generated tokens with their logprobs, the result, and
// SequenceGenerator, the interface of a loop that takes one sequence from prompt to finish (plain decoding in
// Generator, speculative decoding in spec::SpeculativeGenerator; the server and `saker run` use either).
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/sampling_params.h"

namespace saker {

// One generated token as the sampler saw it, for logprobs (OpenAI `logprobs` / `top_logprobs`).
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;  // log-softmax of the raw model logits (before bias, penalties, temperature)
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;               // only when GenerateOptions::top_logprobs >= 0
  std::vector<TokenLogprob> top;   // the top_logprobs most likely tokens, highest first
};

struct GenerateOptions {
  int32_t max_tokens = 128;
  std::vector<std::string> stop;    // stop strings (never streamed, not even in part)
  bool ignore_eos = false;          // keep going past end-of-generation tokens (benchmarks)
  SamplingParams sampling;
  int32_t prefill_chunk = 512;      // prompt tokens per forward
  int32_t top_logprobs = -1;        // -1: no logprobs; >= 0: each token's logprob plus that many alternatives
  // Called for each generated token (end-of-generation tokens excluded) before its text reaches on_text;
  // return false to stop (FinishReason::kCancelled).
  std::function<bool(const GeneratedToken&)> on_token;
  // Set from another thread (a client that went away): generation stops at the next forward
  // (FinishReason::kCancelled). Must outlive generate().
  const std::atomic<bool>* cancel = nullptr;
};

// kShutdown: Engine::cancel_all ended it (the server is shutting down) before it finished. It is not an
// answer: the server reports it as an error (503), never as a completed generation.
enum class FinishReason { kLength, kStop, kEos, kCancelled, kShutdown };
const char* finish_reason_name(FinishReason r);

// Speculative decoding's account of a generation (absent for plain decoding).
struct DraftStats {
  int64_t verify_steps = 0;
  int64_t committed_tokens = 0;            // over all verify steps (accepted drafts + the target's token)
  int64_t drafted_tokens = 0;              // draft tokens (chain or tree nodes) offered to verify steps
  // Draft tokens the target accepted (each verify step also commits one token of the target's own).
  int64_t accepted_tokens() const { return committed_tokens - verify_steps; }
  // Adds another generation's counts (the per-step histogram is left as it is).
  void merge(const DraftStats& o) {
    verify_steps += o.verify_steps;
    committed_tokens += o.committed_tokens;
    drafted_tokens += o.drafted_tokens;
  }
  std::vector<int64_t> tokens_per_step;    // [k - 1] = verify steps that committed k tokens
  // Mean tokens committed per verify step: the drafter's mean accepted length.
  double mean_accepted_length() const {
    return verify_steps ? static_cast<double>(committed_tokens) / static_cast<double>(verify_steps) : 0.0;
  }
};

struct GenerateResult {
  std::vector<int32_t> tokens;      // generated ids (a stop string's tokens included)
  std::string text;                 // streamed text, without the stop string
  FinishReason finish = FinishReason::kLength;
  std::string stop_string;          // the stop string that ended generation (finish == kStop), else ""
  int64_t n_prompt = 0;
  double prompt_ms = 0;             // prefill, including the first token's logits
  double generate_ms = 0;           // every later step
  std::optional<DraftStats> draft;  // speculative decoding only
};

class SequenceGenerator {
 public:
  virtual ~SequenceGenerator() = default;
  // on_text(chunk) receives valid UTF-8 as it becomes final; return false to stop early.
  virtual Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                          const std::function<bool(std::string_view)>& on_text = nullptr) = 0;
  // The longest prompt + generation it holds.
  virtual int64_t n_ctx() const = 0;
};

}  // namespace saker
