#pragma once
// What a request asks of the sampler. Defaults sample nothing away: temperature 1, no truncation.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace saker {

struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy (argmax)
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off; keeps tokens with p >= min_p * p_max
  uint64_t seed = 0;         // the sampler's RNG seed (a request without one gets a random seed)
  float repetition_penalty = 1.0f;  // 1: off; divides positive logits / multiplies negative ones of seen tokens
  float presence_penalty = 0.0f;    // subtracted once from every seen token
  float frequency_penalty = 0.0f;   // subtracted per occurrence
  int32_t penalty_last_n = 64;      // window of recent tokens the penalties look at; -1: all, 0: none
  std::unordered_map<int32_t, float> logit_bias;  // token id -> added to its logit

  bool greedy() const { return temperature <= 0.0f; }
  // Checks ranges; the message names the field, as an API error would.
  Status validate() const;
};

}  // namespace saker
