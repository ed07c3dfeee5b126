#pragma once
// StepCost: what engine steps measurably cost by how many rows they feed, and whether a step's drafts pay.
//
// A verify step of R = D + drafts rows commits D + (accepted drafts) tokens; the plain step it replaces feeds
// D rows and commits D. Speculating pays when the first yields more tokens per millisecond:
//   (D + expected accepted) / t(R)  >=  D / t(D)
// with t() the measured wall time of steps of that many rows (moving averages, interpolated between measured
// row counts). On a GPU a 16-row step costs a few one-row steps, so drafts pay even at modest acceptance; on
// a CPU, or with many streams already filling the matmuls, they often do not.
//
// Both sides must stay measured as contexts grow, while the decision runs only one of them: a width whose
// figure is missing or older than its refresh interval (in recorded steps) is measured again (a plain step
// when t(D) is due, a drafting step when no drafting width is fresh). The interval starts at kRefreshSteps
// and doubles, up to kMaxRefreshSteps, each time a refresh finds the width's time where it was (within
// kSteadyChange); a refresh that finds it moved resets it. A drafting step at many streams costs several
// plain ones, so re-measuring a steady width every 64 steps cost 16 streams 14% (H100, 8B Q4_K_M, a width
// that never paid: 3 drafting steps of 125). The plain width D a decision compares against is re-measured
// after kRefreshSteps all the same: it is the cheap side, and contexts keep growing. Step times include the
// proposers' own work. The first kWarmupSamples of a width are not used: they include one-off costs (kernels
// loading, a CUDA graph's capture) that would price the width wrong for good.
//
// Measuring a drafting width that then does not pay is the policy's own cost: at 4 streams a probe (every
// sequence's whole block verified, the drafter catching up) cost about three plain steps, and a 128-token run
// that measured four times lost 9% (H200, 8B Q4_K_M, replay:2). So measurements get a budget: a drafting step
// taken only to measure is allowed while such steps' time is at most measure_share of every recorded step's
// (and always before any drafting width is known); otherwise the decision uses the latest figures, however
// old. A width that pays keeps itself fresh (its steps are drafting steps). What a measurement costs is its time
// beyond the plain step's; the first measurements, before any drafting width is known, are not optional and
// not counted (counting them, one slow first sample kept 16 streams from ever drafting again within a bench run:
// 0.98x plain where drafting paid 1.08x).
//
// Widths are row counts up to 16 and, above, buckets of an eighth of an octave (17-18, ..., 33-36, ...,
// 241-256): drafting steps rarely feed the same number of rows twice (each sequence's depth follows its
// acceptance), and with exact counts every drafting step was a first, unused sample, so the policy kept
// drafting to measure (measured: 16 streams 0.78x plain decoding). A bucket's figures are the averages of
// its steps' rows and times.
#include <cstdint>
#include <map>
#include <optional>

namespace saker {

class StepCost {
 public:
  static constexpr int kWarmupSamples = 2;
  static constexpr int64_t kRefreshSteps = 64;
  static constexpr int64_t kMaxRefreshSteps = 1024;
  static constexpr double kSteadyChange = 0.25;  // |refresh sample / average - 1| below this: steady
  static constexpr double kMeasureShare = 0.02;  // of all step time, at most this in measuring steps

  explicit StepCost(double measure_share = kMeasureShare) : measure_share_(measure_share) {}

  // A step of `rows` rows took `ms` (0 < ms). After drafting_pays said yes only to measure, the next step
  // recorded is that measurement (its time counts against the budget).
  void record(int64_t rows, double ms);
  // The expected time of a step of `rows` rows from the widths measured lately (past their warm-up, within
  // their refresh interval) at or above `floor`: the average at that count, else interpolated linearly
  // between the nearest counts below and above (the smallest's below them all); nullopt past the widest or
  // when none is.
  std::optional<double> estimate(int64_t rows, int64_t floor = 0) const;
  // Whether drafting `drafts` rows that are expected to commit `expected_accepted` extra tokens pays in a step
  // whose plain form feeds `plain_rows` rows (see the file comment): false while t(plain) is missing or due;
  // t(plain + drafts) from the fresh drafting widths (interpolated, or extrapolated past the widest: drafts
  // rarely come in the exact numbers predicted); while none is fresh, true to measure one when the budget
  // allows, else from the latest figures (false when there are none).
  bool drafting_pays(int64_t plain_rows, int64_t drafts, double expected_accepted);
  // A step that is not recorded (it carried a prefill chunk): a measurement asked for did not happen.
  void skip_step() { measuring_ = false; }
  // Time in recorded steps, and what steps taken to re-measure a drafting width cost beyond a plain step.
  double total_ms() const { return total_ms_; }
  double measure_ms() const { return measure_ms_; }

  // The bucket of a step of `rows` rows: its largest row count.
  static int64_t bucket(int64_t rows);

 private:
  struct Width {
    double rows = 0;        // moving average of the rows of the samples after the warm-up ones
    double ms = 0;          // moving average over the samples after the warm-up ones
    int samples = 0;        // every sample, warm-up included
    int64_t last_step = 0;  // steps_ when last sampled
    int64_t refresh = kRefreshSteps;  // steps after last_step that the figures stay fresh
  };
  static constexpr double kAlpha = 0.2;  // weight of the newest sample: follows contexts as they grow
  bool fresh(const Width& w) const { return fresh(w, w.refresh); }
  static bool measured(const Width& w) { return w.samples > kWarmupSamples; }
  // t(plain + drafts) as drafting_pays prices it, from fresh widths only or from every measured one.
  std::optional<double> spec_time(int64_t plain_rows, double plain_ms, int64_t drafts, bool stale_ok) const;
  std::optional<double> estimate_from(int64_t rows, int64_t floor, bool stale_ok) const;
  bool fresh(const Width& w, int64_t refresh) const {
    return w.samples > kWarmupSamples && steps_ - w.last_step <= refresh;
  }

  std::map<int64_t, Width> widths_;  // bucket(rows) -> its figures
  int64_t steps_ = 0;                // samples recorded
  double measure_share_;
  double total_ms_ = 0, measure_ms_ = 0;
  // drafting_pays said yes to re-measure (the next record is that step, costing it beyond measure_plain_ms_).
  bool measuring_ = false;
  double measure_plain_ms_ = 0;
};

}  // namespace saker
