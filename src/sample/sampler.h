#pragma once
// Sampler: turns one row of logits into the next token, applying in order
//   logit bias -> repetition / presence / frequency penalties (over recent tokens)
//   -> greedy argmax, or temperature -> top-k -> softmax -> top-p -> min-p -> draw.
// The RNG is per sampler, so one seed reproduces one request's tokens whatever else runs.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "sample/sampling_params.h"

namespace saker {

struct TokenProb {
  int32_t id;
  float prob;
};

class Sampler {
 public:
  explicit Sampler(SamplingParams params);

  // logits: [n_vocab], modified in place by bias and penalties. history: tokens so far (prompt + generated).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);

  // The distribution sample() draws from, after every processor (greedy: the argmax with probability 1),
  // highest first. Used for logprobs and by the speculative verifier.
  std::vector<TokenProb> distribution(std::span<float> logits, std::span<const int32_t> history);

  const SamplingParams& params() const { return params_; }

 private:
  void apply_bias_and_penalties(std::span<float> logits, std::span<const int32_t> history) const;

  SamplingParams params_;
  std::mt19937_64 rng_;
};

// Log-softmax of raw logits at one id (for logprobs of the unprocessed model distribution).
float log_softmax_at(std::span<const float> logits, int32_t id);

}  // namespace saker
