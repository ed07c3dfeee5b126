#pragma once
// Sequence: one request inside the engine, from admission to finish. It holds the tokens (prompt + every
// token decided so far), how many of them have their K/V in the pool (n_cached), its block table, its own
// Sampler (so one seed reproduces one request's tokens whatever else runs) and its TokenOutput stage
// (end-of-generation, logprobs, detokenization, stop strings, length), exactly what plain decoding uses.
//
// The next forward of a sequence feeds tokens[n_cached, ...): one token when only the last decided token is
// missing (decode), a chunk otherwise (prefill, or recompute after preemption). When a forward reaches the
// end of tokens, its last row decides the next token.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/generator_types.h"
#include "engine/draft_policy.h"
#include "engine/proposer.h"
#include "engine/token_output.h"
#include "sample/sampler.h"

namespace saker {

enum class SequenceState { kWaiting, kRunning, kFinished };

// What the engine reports about a request when it is over (result, or the error that ended it).
using DoneCallback = std::function<void(Result<GenerateResult>)>;

struct Sequence {
  using Clock = std::chrono::steady_clock;

  Sequence(uint64_t id, std::vector<int32_t> prompt, GenerateOptions options,
           std::function<bool(std::string_view)> on_text, DoneCallback on_done, const text::Tokenizer* tokenizer,
           int64_t n_ctx)
      : id(id),
        tokens(std::move(prompt)),
        n_prompt(static_cast<int64_t>(tokens.size())),
        options(std::move(options)),
        on_text(std::move(on_text)),
        on_done(std::move(on_done)),
        sampler(this->options.sampling),
        output(tokenizer, this->options, n_prompt, n_ctx, this->on_text, &result),
        arrived(Clock::now()),
        last_token_at(arrived),
        n_ctx(n_ctx) {
    result.n_prompt = n_prompt;
  }
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  // Tokens the next forward must feed before the last row decides a token.
  int64_t n_pending() const { return static_cast<int64_t>(tokens.size()) - n_cached; }
  bool cancel_requested() const { return options.cancel && options.cancel->load(std::memory_order_relaxed); }
  // Whether the decision needs the full logits row on the host (anything but plain greedy argmax).
  bool needs_logits() const {
    const SamplingParams& s = options.sampling;
    return !s.greedy() || options.top_logprobs >= 0 || !s.logit_bias.empty() || s.repetition_penalty != 1.0f ||
           s.presence_penalty != 0.0f || s.frequency_penalty != 0.0f;
  }

  const uint64_t id;
  std::vector<int32_t> tokens;  // prompt + decided tokens (the penalties' history)
  const int64_t n_prompt;
  int64_t n_cached = 0;         // tokens[0, n_cached) have K/V in `pages`
  std::vector<int32_t> pages;   // block table into the KvPool
  SequenceState state = SequenceState::kWaiting;
  int64_t admitted_order = 0;   // increases with every admission (preemption picks the newest)
  int64_t n_preempted = 0;
  int64_t n_prefix_hit = 0;     // prompt tokens served from the prefix cache at the first admission
  bool started = false;         // admitted at least once

  GenerateOptions options;
  std::function<bool(std::string_view)> on_text;
  DoneCallback on_done;
  GenerateResult result;
  Sampler sampler;
  TokenOutput output;
  bool going = true;            // false once the output stage has said the generation is over

  Clock::time_point arrived;
  std::optional<Clock::time_point> first_token_at;
  Clock::time_point last_token_at;
  const int64_t n_ctx;            // the longest prompt + generation this sequence may reach

  // Speculative decoding (null: plain decoding).
  std::unique_ptr<Proposer> proposer;
  DraftNodes drafts;              // this step's draft nodes
  DraftPolicy draft_policy{1, false};  // how deep the next draft may be (set with the proposer)
};

}  // namespace saker
