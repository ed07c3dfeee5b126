#pragma once
// Log-probabilities from a row of logits: the normaliser of log-softmax and the most likely ids. Shared by the
// logprobs plain and speculative decoding report and by the draft tree's per-depth candidates.
#include <cstdint>
#include <span>
#include <vector>

namespace saker {

// log(sum_i exp(logits[i])) = max + log(sum_i exp(logits[i] - max)), the sum in double.
float log_sum_exp(std::span<const float> logits);

// The ids of the n highest logits (n at most logits.size()), highest first, the lowest id among equals.
std::vector<int32_t> top_ids(std::span<const float> logits, int64_t n);

}  // namespace saker
