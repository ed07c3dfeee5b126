#include "engine/step_cost.h"

#include <algorithm>
#include <utility>

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

std::optional<double> StepCost::estimate(int64_t rows, int64_t floor) const {
  // The nearest fresh widths at or below `rows` and above it, from `floor` up.
  std::optional<std::pair<int64_t, double>> lo, hi;
  for (auto it = widths_.lower_bound(floor); it != widths_.end(); ++it) {
    if (!fresh(it->second)) continue;
    if (it->first > rows) {
      hi = std::make_pair(it->first, it->second.ms);
      break;
    }
    lo = std::make_pair(it->first, it->second.ms);
  }
  if (lo && lo->first == rows) return lo->second;
  if (!hi) return std::nullopt;  // past the widest (or nothing fresh)
  if (!lo) return hi->second;    // below every measured count: the smallest's
  return lo->second + static_cast<double>(rows - lo->first) / static_cast<double>(hi->first - lo->first) *
                          (hi->second - lo->second);
}

bool StepCost::drafting_pays(int64_t plain_rows, int64_t drafts, double expected_accepted) const {
  if (drafts <= 0 || plain_rows <= 0) return false;
  const auto plain = widths_.find(plain_rows);
  if (plain == widths_.end() || !fresh(plain->second)) return false;  // measure the plain step
  const double plain_ms = plain->second.ms;
  const int64_t rows = plain_rows + drafts;
  std::optional<double> t_spec = estimate(rows, plain_rows);
  if (!t_spec) {
    // Past the widest fresh width: extrapolated from the plain width through it, if it is a drafting width.
    const auto widest = std::find_if(widths_.rbegin(), widths_.rend(), [&](const auto& w) { return fresh(w.second); });
    if (widest == widths_.rend() || widest->first <= plain_rows) return true;  // measure a drafting step
    t_spec = plain_ms + static_cast<double>(rows - plain_rows) / static_cast<double>(widest->first - plain_rows) *
                            (widest->second.ms - plain_ms);
  }
  return (static_cast<double>(plain_rows) + expected_accepted) / *t_spec >= static_cast<double>(plain_rows) / plain_ms;
}

}  // namespace saker
