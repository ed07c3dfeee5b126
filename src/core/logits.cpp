#include "core/logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace saker {

float log_sum_exp(std::span<const float> logits) {
  float max_l = -std::numeric_limits<float>::infinity();
  for (float l : logits) max_l = std::max(max_l, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_l);
  return max_l + static_cast<float>(std::log(sum));
}

std::vector<int32_t> top_ids(std::span<const float> logits, int64_t n) {
  n = std::min<int64_t>(n, static_cast<int64_t>(logits.size()));
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  ids.resize(n);
  return ids;
}

}  // namespace saker
