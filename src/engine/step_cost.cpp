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

bool StepCost::drafting_pays(int64_t plain_rows, int64_t drafts, double expected_accepted) const {
  if (drafts <= 0 || plain_rows <= 0) return false;
  const auto plain = widths_.find(plain_rows);
  if (plain == widths_.end() || !fresh(plain->second)) return false;  // measure the plain step
  const int64_t rows = plain_rows + drafts;
  const auto at = widths_.find(rows);
  if (at == widths_.end() || !fresh(at->second)) {
    // Not measured at this width (or due): draft to measure it, unless a fresh wider figure already says
    // the drafts cannot pay (a step of more rows does not cost less).
    const auto wider = widths_.upper_bound(rows);
    if (wider == widths_.end() || !fresh(wider->second)) return true;
  }
  const std::optional<double> t_spec = estimate(rows);
  if (!t_spec) return true;
  return (static_cast<double>(plain_rows) + expected_accepted) / *t_spec >=
         static_cast<double>(plain_rows) / plain->second.ms;
}

}  // namespace saker
