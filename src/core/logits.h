#pragma once
// Log-probabilities from a row of logits: the normaliser of log-softmax and the most likely ids. Shared by the
// logprobs plain and speculative decoding report, the draft tree's per-depth candidates and the backends' top-k
// outputs (OpBackend::emit_outputs), which must agree on them.
#include <cstdint>
#include <span>
#include <vector>

namespace saker {

// The most top tokens a backend step gives per output row (StepRequest::top_k): what a draft tree is built from.
inline constexpr int32_t kMaxTopK = 16;

// log(sum_i exp(logits[i])) = max + log(sum_i exp(logits[i] - max)), the sum in double.
float log_sum_exp(std::span<const float> logits);

// The ids of the n highest logits (n at most logits.size()), highest first, the lowest id among equals.
std::vector<int32_t> top_ids(std::span<const float> logits, int64_t n);

}  // namespace saker
