#include "engine/step_cost.h"

#include <iterator>

namespace saker {

void StepCost::record(int64_t rows, double ms) {
  if (rows <= 0 || !(ms > 0)) return;
  Width& w = widths_[rows];
  ++steps_;
  w.last_step = steps_;
  ++w.samples;
  if (w.samples <= kWarmupSamples) return;
  w.ms = w.samples == kWarmupSamples + 1 ? ms : w.ms + kAlpha * (ms - w.ms);
}

std::optional<double> StepCost::estimate(int64_t rows) const {
  // Only widths past their warm-up count.
  auto usable = [](const auto& it) { return it->second.samples > kWarmupSamples; };
  auto hi = widths_.lower_bound(rows);
  while (hi != widths_.end() && !usable(hi)) ++hi;
  if (hi == widths_.end()) return std::nullopt;
  if (hi->first == rows) return hi->second.ms;
  auto lo = hi;
  while (lo != widths_.begin()) {
    --lo;
    if (usable(lo)) {
      const double f = static_cast<double>(rows - lo->first) / static_cast<double>(hi->first - lo->first);
      return lo->second.ms + f * (hi->second.ms - lo->second.ms);
    }
  }
  return hi->second.ms;  // below every measured count: the smallest's
}

std::optional<double> StepCost::fresh_estimate(int64_t rows, int64_t plain_rows, double plain_ms) const {
  // The nearest fresh widths at or below `rows` (the plain one at least) and at or above it.
  int64_t lo_rows = plain_rows;
  double lo_ms = plain_ms;
  std::optional<std::pair<int64_t, double>> hi, widest;
  for (auto it = widths_.upper_bound(plain_rows); it != widths_.end(); ++it) {
    if (!fresh(it->second)) continue;
    widest = std::make_pair(it->first, it->second.ms);
    if (it->first <= rows) {
      lo_rows = it->first;
      lo_ms = it->second.ms;
    } else if (!hi) {
      hi = widest;
    }
  }
  if (!widest) return std::nullopt;  // no drafting width measured lately
  if (lo_rows == rows) return lo_ms;
  // Between two fresh widths: interpolated; past the widest: extrapolated from the plain width through it.
  const auto [x0, y0] = hi ? std::make_pair(lo_rows, lo_ms) : std::make_pair(plain_rows, plain_ms);
  const auto [x1, y1] = hi ? *hi : *widest;
  return y0 + static_cast<double>(rows - x0) / static_cast<double>(x1 - x0) * (y1 - y0);
}

bool StepCost::drafting_pays(int64_t plain_rows, int64_t drafts, double expected_accepted) const {
  if (drafts <= 0 || plain_rows <= 0) return false;
  const auto plain = widths_.find(plain_rows);
  if (plain == widths_.end() || !fresh(plain->second)) return false;  // measure the plain step
  const std::optional<double> t_spec = fresh_estimate(plain_rows + drafts, plain_rows, plain->second.ms);
  if (!t_spec) return true;  // measure a drafting step
  return (static_cast<double>(plain_rows) + expected_accepted) / *t_spec >=
         static_cast<double>(plain_rows) / plain->second.ms;
}

}  // namespace saker
