#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace saker {

Sampler::Sampler(SamplingParams params) : params_(std::move(params)), rng_(params_.seed) {}

void Sampler::apply_bias_and_penalties(std::span<float> logits, std::span<const int32_t> history) const {
  const int64_t n_vocab = static_cast<int64_t>(logits.size());
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && id < n_vocab) logits[id] += bias;
  }
  const bool any_penalty = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                           params_.frequency_penalty != 0.0f;
  if (!any_penalty || params_.penalty_last_n == 0 || history.empty()) return;
  size_t window = history.size();
  if (params_.penalty_last_n > 0) window = std::min(window, static_cast<size_t>(params_.penalty_last_n));
  std::unordered_map<int32_t, int> counts;
  for (size_t i = history.size() - window; i < history.size(); ++i) counts[history[i]]++;
  for (const auto& [id, count] : counts) {
    if (id < 0 || id >= n_vocab) continue;
    float& l = logits[id];
    // Repetition penalty as in CTRL: shrink the logit's magnitude towards "less likely" on either sign.
    if (params_.repetition_penalty != 1.0f) l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    l -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

std::vector<TokenProb> Sampler::distribution(std::span<float> logits, std::span<const int32_t> history) {
  apply_bias_and_penalties(logits, history);
  const int64_t n_vocab = static_cast<int64_t>(logits.size());
  if (n_vocab == 0) return {};
  if (params_.greedy()) {
    int32_t best = 0;
    for (int64_t i = 1; i < n_vocab; ++i) {
      if (logits[i] > logits[best]) best = static_cast<int32_t>(i);  // ties: lowest id, like argmax
    }
    return {{best, 1.0f}};
  }
  std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t keep = ids.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), by_logit);
    ids.resize(keep);
  } else {
    std::sort(ids.begin(), ids.end(), by_logit);
  }
  // Softmax at temperature over the kept tokens (max subtracted for stability; -inf logits get 0).
  const double max_l = logits[ids[0]];
  std::vector<TokenProb> out;
  out.reserve(ids.size());
  double sum = 0;
  for (int32_t id : ids) {
    const double p = std::isinf(logits[id]) && logits[id] < 0 ? 0.0 : std::exp((logits[id] - max_l) / params_.temperature);
    out.push_back({id, static_cast<float>(p)});
    sum += p;
  }
  for (auto& tp : out) tp.prob = static_cast<float>(tp.prob / sum);
  if (params_.top_p < 1.0f) {
    double cum = 0;
    size_t n = 0;
    while (n < out.size()) {
      cum += out[n].prob;
      ++n;
      if (cum >= params_.top_p) break;
    }
    out.resize(n);
  }
  if (params_.min_p > 0.0f) {
    const float threshold = params_.min_p * out[0].prob;
    size_t n = 1;
    while (n < out.size() && out[n].prob >= threshold) ++n;
    out.resize(n);
  }
  double kept = 0;
  for (const auto& tp : out) kept += tp.prob;
  for (auto& tp : out) tp.prob = static_cast<float>(tp.prob / kept);
  return out;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  const std::vector<TokenProb> dist = distribution(logits, history);
  if (dist.size() == 1) return dist[0].id;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double r = uniform(rng_);
  double cum = 0;
  for (const auto& tp : dist) {
    cum += tp.prob;
    if (r < cum) return tp.id;
  }
  return dist.back().id;  // rounding left r past the last bucket
}

float log_softmax_at(std::span<const float> logits, int32_t id) {
  float max_l = -std::numeric_limits<float>::infinity();
  for (float l : logits) max_l = std::max(max_l, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_l);
  return static_cast<float>(logits[id] - max_l - std::log(sum));
}

}  // namespace saker
