#include "engine/step_cost.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace saker {

int64_t StepCost::bucket(int64_t rows) {
  if (rows <= 16) return rows;
  int64_t octave = 16;  // rows in (octave, 2 octave]: steps of octave / 8
  while (rows > 2 * octave) octave *= 2;
  const int64_t step = octave / 8;
  return (rows + step - 1) / step * step;
}

void StepCost::record(int64_t rows, double ms) {
  if (rows <= 0 || !(ms > 0) || !std::isfinite(ms)) return;
  total_ms_ += ms;
  if (measuring_) measure_ms_ += std::max(0.0, ms - measure_plain_ms_);
  measuring_ = false;
  Width& w = widths_[bucket(rows)];
  const bool refreshing = w.samples > kWarmupSamples && !fresh(w);  // due: this sample is its refresh
  ++steps_;
  w.last_step = steps_;
  ++w.samples;
  if (w.samples <= kWarmupSamples) return;
  const bool first = w.samples == kWarmupSamples + 1;
  if (refreshing) {
    const bool steady = std::abs(ms / w.ms - 1.0) < kSteadyChange;
    w.refresh = steady ? std::min(2 * w.refresh, kMaxRefreshSteps) : kRefreshSteps;
  }
  w.ms = first ? ms : w.ms + kAlpha * (ms - w.ms);
  w.rows = first ? static_cast<double>(rows) : w.rows + kAlpha * (static_cast<double>(rows) - w.rows);
}

std::optional<double> StepCost::estimate(int64_t rows, int64_t floor) const {
  return estimate_from(rows, floor, false);
}

std::optional<double> StepCost::estimate_from(int64_t rows, int64_t floor, bool stale_ok) const {
  // The usable buckets of `rows` (used as it is), and the nearest below and above it, from floor's bucket up;
  // between two, interpolated by their average rows.
  const int64_t b = bucket(rows);
  std::optional<std::pair<double, double>> lo, hi;  // (rows, ms)
  for (auto it = widths_.lower_bound(bucket(floor)); it != widths_.end(); ++it) {
    if (!(stale_ok ? measured(it->second) : fresh(it->second))) continue;
    if (it->first == b) return it->second.ms;
    if (it->first > b) {
      hi = std::make_pair(it->second.rows, it->second.ms);
      break;
    }
    lo = std::make_pair(it->second.rows, it->second.ms);
  }
  if (!hi) return std::nullopt;                          // past the widest (or nothing usable)
  if (!lo || hi->first <= lo->first) return hi->second;  // below every measured count: the smallest's
  const double at = std::clamp(static_cast<double>(rows), lo->first, hi->first);
  return lo->second + (at - lo->first) / (hi->first - lo->first) * (hi->second - lo->second);
}

std::optional<double> StepCost::spec_time(int64_t plain_rows, double plain_ms, int64_t drafts, bool stale_ok) const {
  const int64_t rows = plain_rows + drafts;
  if (std::optional<double> t = estimate_from(rows, plain_rows, stale_ok)) return t;
  // Past the widest usable width: extrapolated from the plain width through it, if it is a drafting width.
  const auto widest = std::find_if(widths_.rbegin(), widths_.rend(),
                                   [&](const auto& w) { return stale_ok ? measured(w.second) : fresh(w.second); });
  if (widest == widths_.rend() || widest->first <= bucket(plain_rows)) return std::nullopt;
  const double span = widest->second.rows - static_cast<double>(plain_rows);
  if (!(span > 0)) return std::nullopt;
  // Never below the plain step: an old drafting figure against a plain one measured at a longer context can
  // slope down.
  return plain_ms + static_cast<double>(rows - plain_rows) / span * std::max(0.0, widest->second.ms - plain_ms);
}

bool StepCost::drafting_pays(int64_t plain_rows, int64_t drafts, double expected_accepted) {
  measuring_ = false;
  if (drafts <= 0 || plain_rows <= 0) return false;
  const auto plain = widths_.find(bucket(plain_rows));
  if (plain == widths_.end() || !fresh(plain->second, kRefreshSteps)) return false;  // measure the plain step
  const double plain_ms = plain->second.ms;
  std::optional<double> t_spec = spec_time(plain_rows, plain_ms, drafts, false);
  if (!t_spec) {
    // Nothing fresh to price the drafts with. Measure, within the budget; before any drafting width is known
    // there is nothing else to go by.
    const std::optional<double> latest = spec_time(plain_rows, plain_ms, drafts, true);
    if (!latest) return true;  // the first measurements: not optional, not counted
    if (measure_ms_ < measure_share_ * total_ms_) {
      measuring_ = true;
      measure_plain_ms_ = plain_ms;
      return true;
    }
    t_spec = latest;
  }
  t_spec = std::max(*t_spec, plain_ms);  // drafts never make a step cheaper (old figures, noise)
  return (static_cast<double>(plain_rows) + expected_accepted) / *t_spec >= static_cast<double>(plain_rows) / plain_ms;
}

}  // namespace saker
