// StepCost: measured step times by row count, and the decision whether a step's drafts pay.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "engine/step_cost.h"

namespace saker {
namespace {

// Past the warm-up samples: `n` samples of `ms` at `rows`.
void measure(StepCost& c, int64_t rows, double ms, int n = StepCost::kWarmupSamples + 1) {
  for (int i = 0; i < n; ++i) c.record(rows, ms);
}

TEST(StepCost, AveragesAndInterpolatesMeasuredWidths) {
  StepCost c;
  EXPECT_FALSE(c.estimate(1).has_value());
  c.record(1, 500.0);  // warm-up samples (a graph's capture, kernels loading) are not used
  c.record(1, 400.0);
  EXPECT_FALSE(c.estimate(1).has_value());
  c.record(1, 10.0);
  measure(c, 17, 26.0);
  EXPECT_DOUBLE_EQ(*c.estimate(1), 10.0);
  EXPECT_DOUBLE_EQ(*c.estimate(9), 18.0);    // halfway
  EXPECT_FALSE(c.estimate(19).has_value());  // wider than anything measured (18: 17's bucket)
  c.record(1, 20.0);                         // a moving average, not the last sample
  EXPECT_GT(*c.estimate(1), 10.0);
  EXPECT_LT(*c.estimate(1), 20.0);
  c.record(0, 5.0);  // ignored
  c.record(4, -1.0);
  EXPECT_DOUBLE_EQ(*c.estimate(0), *c.estimate(1));  // below every measured width: the smallest's
}

TEST(StepCost, DraftsPayWhenTheyCommitMoreTokensPerMillisecond) {
  StepCost gpu;  // a 16-row step costs 2.6 one-row steps
  measure(gpu, 1, 3.3);
  measure(gpu, 16, 8.6);
  EXPECT_TRUE(gpu.drafting_pays(1, 15, 5.0));   // 6 tokens in 8.6 ms against 1 in 3.3
  EXPECT_FALSE(gpu.drafting_pays(1, 15, 1.0));  // 2 tokens in 8.6 ms
  StepCost cpu;  // a 16-row step costs nine one-row steps
  measure(cpu, 1, 10.0);
  measure(cpu, 16, 90.0);
  EXPECT_FALSE(cpu.drafting_pays(1, 15, 5.0));
  EXPECT_TRUE(cpu.drafting_pays(1, 15, 8.5));
  EXPECT_FALSE(cpu.drafting_pays(1, 0, 3.0));  // nothing to draft
}

// Refreshes without a measuring budget (share 1: every measurement allowed), as the tests below of the
// refresh intervals want.
constexpr double kUnbounded = 1.0;

TEST(StepCost, MeasuresTheWidthsItLacksAndRefreshesOldOnes) {
  StepCost c(kUnbounded);
  EXPECT_FALSE(c.drafting_pays(4, 28, 10.0));  // nothing measured: a plain step first
  measure(c, 4, 10.0);
  EXPECT_TRUE(c.drafting_pays(4, 28, 3.0));    // the verify width is unknown: draft to measure it
  measure(c, 32, 30.0);
  EXPECT_TRUE(c.drafting_pays(4, 28, 10.0));   // 14 tokens in 30 ms against 4 in 10
  EXPECT_FALSE(c.drafting_pays(4, 28, 3.0));   // 7 in 30 against 4 in 10
  // Standing down, only plain steps are measured: after kRefreshSteps of them the verify width is due.
  measure(c, 4, 10.0, static_cast<int>(StepCost::kRefreshSteps) + 1);
  EXPECT_TRUE(c.drafting_pays(4, 28, 3.0));
  c.record(32, 30.0);
  EXPECT_FALSE(c.drafting_pays(4, 28, 3.0));
  // Speculating, only verify steps are measured: then the plain width is due.
  measure(c, 32, 30.0, static_cast<int>(StepCost::kRefreshSteps) + 1);
  EXPECT_FALSE(c.drafting_pays(4, 28, 10.0));
  c.record(4, 10.0);
  EXPECT_TRUE(c.drafting_pays(4, 28, 10.0));
}

TEST(StepCost, ASteadyWidthIsRefreshedLessAndLessOften) {
  StepCost c(kUnbounded);
  measure(c, 4, 10.0);
  measure(c, 32, 60.0);  // drafting never pays: 7 tokens in 60 ms against 4 in 10
  // Steps of only plain decoding until the verify width is due again (a width stays fresh for its interval of
  // steps after its last sample, so the next one is due); returns how many it took.
  auto plain_steps_until_due = [&] {
    int64_t n = 0;
    while (!c.drafting_pays(4, 28, 3.0)) {
      c.record(4, 10.0);
      if (++n > 10 * StepCost::kMaxRefreshSteps) break;
    }
    return n;
  };
  EXPECT_EQ(plain_steps_until_due(), StepCost::kRefreshSteps + 1);
  c.record(32, 61.0);  // the refresh finds it where it was: twice as long until the next
  EXPECT_EQ(plain_steps_until_due(), 2 * StepCost::kRefreshSteps + 1);
  c.record(32, 59.0);
  EXPECT_EQ(plain_steps_until_due(), 4 * StepCost::kRefreshSteps + 1);
  for (int i = 0; i < 8; ++i) {
    c.record(32, 60.0);
    plain_steps_until_due();
  }
  c.record(32, 60.0);
  EXPECT_EQ(plain_steps_until_due(), StepCost::kMaxRefreshSteps + 1);  // capped
  c.record(32, 40.0);  // it moved (7 tokens in 40 ms against 4 in 10: still no): back to the start
  EXPECT_FALSE(c.drafting_pays(4, 28, 3.0));
  EXPECT_EQ(plain_steps_until_due(), StepCost::kRefreshSteps + 1);
  c.record(4, INFINITY);  // a broken clock's sample is dropped
  EXPECT_TRUE(std::isfinite(*c.estimate(4)));
}

TEST(StepCost, ThePlainWidthIsReMeasuredEvery64StepsWhileSpeculating) {
  StepCost c(kUnbounded);
  measure(c, 4, 10.0);
  measure(c, 32, 20.0);  // drafting pays: 14 tokens in 20 ms against 4 in 10
  // The plain width's own refreshes find it steady, so its interval grows...
  for (int r = 0; r < 4; ++r) {
    measure(c, 32, 20.0, static_cast<int>(StepCost::kRefreshSteps) + 1);
    c.record(4, 10.0);
  }
  // ...but a decision still wants it measured within kRefreshSteps: contexts grow while only verify steps run.
  measure(c, 32, 20.0, static_cast<int>(StepCost::kRefreshSteps));
  EXPECT_TRUE(c.drafting_pays(4, 28, 10.0));
  c.record(32, 20.0);
  EXPECT_FALSE(c.drafting_pays(4, 28, 10.0));
  c.record(4, 10.0);
  EXPECT_TRUE(c.drafting_pays(4, 28, 10.0));
}

TEST(StepCost, PricesDraftingWidthsItHasNotSeenFromTheOnesItHas) {
  // Drafts rarely come in the predicted number: a width between two measured ones is interpolated, one past
  // the widest is extrapolated from the plain width through it.
  StepCost c;
  measure(c, 1, 3.3);
  measure(c, 8, 5.0);
  EXPECT_TRUE(c.drafting_pays(1, 15, 5.0));   // t(16) ~ 3.3 + 15/7 x 1.7 = 6.9 ms: 6 tokens against 1 in 3.3
  EXPECT_FALSE(c.drafting_pays(1, 15, 0.5));  // 1.5 tokens in 6.9 ms
  measure(c, 32, 9.0);
  EXPECT_TRUE(c.drafting_pays(1, 15, 3.0));   // between 8 and 32: 6.6 ms for 4 tokens
}

TEST(StepCost, BucketsAreExactUpTo16ThenEighthsOfAnOctave) {
  for (int64_t r = 1; r <= 16; ++r) EXPECT_EQ(StepCost::bucket(r), r);
  EXPECT_EQ(StepCost::bucket(17), 18);
  EXPECT_EQ(StepCost::bucket(18), 18);
  EXPECT_EQ(StepCost::bucket(32), 32);
  EXPECT_EQ(StepCost::bucket(33), 36);
  EXPECT_EQ(StepCost::bucket(61), 64);
  EXPECT_EQ(StepCost::bucket(65), 72);
  EXPECT_EQ(StepCost::bucket(241), 256);
  EXPECT_EQ(StepCost::bucket(257), 288);
  for (int64_t r = 17; r <= 4096; ++r) {  // every bucket holds its rows and spans at most an eighth of them
    const int64_t b = StepCost::bucket(r);
    EXPECT_GE(b, r);
    EXPECT_LE(8 * (b - r), r);
    EXPECT_EQ(StepCost::bucket(b), b);
  }
}

// Drafting steps of 16 streams feed a different number of rows nearly every time (each sequence's depth
// follows its acceptance). With one figure per exact count every such step was a warm-up sample, so the policy
// kept drafting to measure (0.78x plain decoding, measured); now three steps of one bucket price it.
TEST(StepCost, VaryingDraftingWidthsArePricedAfterAFewSteps) {
  StepCost c(kUnbounded);
  measure(c, 16, 7.5);
  EXPECT_TRUE(c.drafting_pays(16, 34, 5.0));  // nothing known wider than the plain step: measure
  c.record(49, 30.0);
  c.record(51, 30.0);
  EXPECT_TRUE(c.drafting_pays(16, 34, 5.0));  // still warm-up samples of their bucket
  c.record(50, 30.0);
  EXPECT_FALSE(c.drafting_pays(16, 34, 5.0));  // 21 tokens in 30 ms against 16 in 7.5
  EXPECT_FALSE(c.drafting_pays(16, 48, 5.0));  // extrapolated from 16 rows through 50: no better
  EXPECT_TRUE(c.drafting_pays(16, 34, 60.0));  // with acceptance that high it would
}

// A drafting width that never pays and whose time keeps moving (so its refresh interval stays at 64 steps):
// without a budget the policy re-measures it every 65 steps, with the default one it spends at most its share
// of the time on re-measuring (what those steps cost beyond a plain step; plus one such step), and still
// measures now and then.
TEST(StepCost, MeasuringStaysWithinItsShareOfTheTime) {
  auto run = [](StepCost& c) {
    measure(c, 16, 7.0);
    int64_t measurements = 0;
    for (int i = 0; i < 20000; ++i) {
      if (c.drafting_pays(16, 240, 2.0)) {  // 18 tokens in 30-50 ms against 16 in 7: never pays
        c.record(256, measurements % 2 == 0 ? 30.0 : 50.0);
        ++measurements;
      } else {
        c.record(16, 7.0);
      }
    }
    return measurements;
  };
  StepCost unbounded(kUnbounded), bounded;
  const int64_t all = run(unbounded), some = run(bounded);
  std::printf("measuring steps: %lld without a budget (%.1f%% of the time beyond plain steps), %lld with it (%.1f%%)\n",
              static_cast<long long>(all), 100.0 * unbounded.measure_ms() / unbounded.total_ms(),
              static_cast<long long>(some), 100.0 * bounded.measure_ms() / bounded.total_ms());
  EXPECT_GT(unbounded.measure_ms(), 0.05 * unbounded.total_ms()) << all << " measurements";
  EXPECT_LE(bounded.measure_ms(), StepCost::kMeasureShare * bounded.total_ms() + 50.0) << some << " measurements";
  EXPECT_GT(some, 10) << "the budget must still let it measure now and then";
  EXPECT_LT(some, all);
}

// Out of budget, a decision uses the latest figures, however old: drafts that paid when last measured are
// drafted (which measures them again, as any drafting step does), drafts that did not are not.
TEST(StepCost, OutOfBudgetItDecidesOnTheLatestFigures) {
  StepCost c(0.0);  // no re-measuring once a drafting width is known
  measure(c, 4, 10.0);
  EXPECT_TRUE(c.drafting_pays(4, 28, 10.0));  // nothing known yet: measure regardless
  measure(c, 32, 20.0);
  const double startup = c.measure_ms();
  EXPECT_DOUBLE_EQ(startup, 0.0);                                      // the first measurements are not counted
  measure(c, 4, 10.0, static_cast<int>(StepCost::kRefreshSteps) + 1);  // the verify width is stale now
  EXPECT_FALSE(c.estimate(32).has_value());
  EXPECT_TRUE(c.drafting_pays(4, 28, 10.0));  // 14 tokens in 20 ms against 4 in 10, when last measured
  EXPECT_FALSE(c.drafting_pays(4, 28, 1.0));  // 5 tokens in 20 ms
  c.record(32, 20.0);
  EXPECT_DOUBLE_EQ(c.measure_ms(), startup);  // a decision on old figures is not a measurement
  EXPECT_TRUE(c.estimate(32).has_value());    // but its step refreshed the width
}

}  // namespace
}  // namespace saker
