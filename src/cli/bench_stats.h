#pragma once
// The summary statistics every saker bench test reports its runs with.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace saker::cli {

// The middle value (the mean of the middle two for an even count); 0 for no values.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Linear interpolation between the closest ranks (q in [0, 1]); 0 for no values.
inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Milliseconds a step; 0 for no steps.
inline double per_step(double ms, int64_t steps) { return steps > 0 ? ms / static_cast<double>(steps) : 0.0; }

// What the engine's speculation cost policy weighed over some runs (EngineStats counters, after minus before):
// decode-only steps without drafts and with them, their wall time, and the steps in which it held drafts back.
struct StepCosts {
  int64_t undrafted_steps = 0, plain_decode_steps = 0, drafting_steps = 0;
  double plain_decode_ms = 0, drafting_ms = 0;

  static StepCosts between(const EngineStats& before, const EngineStats& after) {
    return {after.undrafted_steps - before.undrafted_steps, after.plain_decode_steps - before.plain_decode_steps,
            after.drafting_steps - before.drafting_steps, after.plain_decode_ms - before.plain_decode_ms,
            after.drafting_ms - before.drafting_ms};
  }
  StepCosts& operator+=(const StepCosts& o) {
    undrafted_steps += o.undrafted_steps;
    plain_decode_steps += o.plain_decode_steps;
    drafting_steps += o.drafting_steps;
    plain_decode_ms += o.plain_decode_ms;
    drafting_ms += o.drafting_ms;
    return *this;
  }
  double plain_step_ms() const { return per_step(plain_decode_ms, plain_decode_steps); }
  double drafting_step_ms() const { return per_step(drafting_ms, drafting_steps); }
};

}  // namespace saker::cli
