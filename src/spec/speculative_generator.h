#pragma once
// SpeculativeGenerator: decoding of one sequence with a DFlash drafter, verified as a chain.
//
// Each step: the drafter proposes block_size - 1 tokens after the pending token t (position s); the target
// runs once over [t, d_1, ..] (slots s.., causal) with its hidden states tapped. Row i's logits go through the
// same Sampler plain decoding uses (bias, penalties over the history up to that row, then greedy argmax or a
// draw); d_{i+1} is accepted iff that token equals it, and the first token that differs (or the token after
// the last draft) becomes the next pending token. For a deterministic draft this is the lossless rule of the
// speculative-decoding notes (section 1: draw y ~ p_i, accept iff y == x_i), and it makes exactly one sampler
// call per generated token, in order, as plain decoding does: with the same seed the output is plain
// decoding's, token for token, whenever verify rows' logits equal one-row decode logits (the CPU backend's
// integer and float matmul paths guarantee it for batches under BLAS's threshold). The target's K/V rows of
// rejected drafts stay in slots past the committed length and are overwritten by the next step.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/generator.h"
#include "engine/kv_cache.h"
#include "models/model.h"
#include "sample/sampling_params.h"
#include "spec/dflash_drafter.h"

namespace saker::spec {

struct SpeculativeStats {
  int64_t verify_steps = 0;
  int64_t committed_tokens = 0;              // over all verify steps (accepted drafts + the target's token)
  std::vector<int64_t> tokens_per_step;      // [block_size]: [k - 1] = verify steps that committed k tokens
  // Mean tokens committed per verify step: the drafter's mean accepted length (block, temperature 0).
  double mean_accepted_length() const {
    return verify_steps ? static_cast<double>(committed_tokens) / static_cast<double>(verify_steps) : 0.0;
  }
};

struct SpeculativeResult {
  std::vector<int32_t> tokens;  // generated ids, at most max_tokens
  FinishReason finish = FinishReason::kLength;
  SpeculativeStats stats;
  double prompt_ms = 0;
  double generate_ms = 0;
};

struct SpeculativeOptions {
  int32_t max_tokens = 128;
  // As for plain decoding; the default here is greedy (temperature 0).
  SamplingParams sampling = [] {
    SamplingParams p;
    p.temperature = 0.0f;
    return p;
  }();
  int32_t prefill_chunk = 512;
  // Ends generation at an end-of-generation token (not emitted); null: never (benchmarks).
  std::function<bool(int32_t)> is_end;
  // Receives each generated token in order; return false to stop (FinishReason::kCancelled).
  std::function<bool(int32_t)> on_token;
};

class SpeculativeGenerator {
 public:
  // n_ctx: the longest prompt + generation held. The drafter must have been loaded for this target, which
  // must run on the CPU backend (the only one that taps hidden states so far).
  static Result<std::unique_ptr<SpeculativeGenerator>> create(Model& target, DFlashDrafter& drafter, int64_t n_ctx);

  Result<SpeculativeResult> generate(std::span<const int32_t> prompt, const SpeculativeOptions& options);

 private:
  SpeculativeGenerator(Model& target, DFlashDrafter& drafter, int64_t n_ctx, KvCache kv);
  // Target forward over tokens at slots first.. (causal), logits of every row, hidden-state taps of every row.
  Status forward(std::span<const int32_t> tokens, int64_t first, std::vector<float>* logits, std::vector<float>* taps,
                 bool all_logits);

  Model& target_;
  DFlashDrafter& drafter_;
  int64_t n_ctx_;
  KvCache kv_;
  std::vector<int32_t> block_table_;
};

}  // namespace saker::spec
