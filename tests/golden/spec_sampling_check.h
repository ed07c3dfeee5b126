#pragma once
// Speculative sampling against plain sampling, statistically: one prompt sampled under many seeds by an engine
// that speculates and by one that does not. The chi-square test on the token at each generated position
// (position 0 comes from the prompt pass; later ones from verify rows when speculating) compares plain sampling
// under seeds 1..n with speculative sampling under seeds n+1..2n: independent samples, as the test assumes.
// Speculating under seeds 1..n too counts the seeds whose tokens are the same both ways: all of them where a
// backend rounds verify rows as it rounds decode rows; where it does not (a near-tie can fall either way), only
// the distributions must agree.
#include <cstdio>
#include <string>
#include <vector>

#include "chi_square.h"
#include "engine_test_util.h"

namespace saker::testing {

struct SamplingComparison {
  std::vector<ChiSquare> positions;  // [n_tokens]
  int64_t identical = 0;             // seeds whose whole continuation is the same both ways
  int64_t seeds = 0;
  DraftStats drafts;                 // summed over the speculating requests (both seed ranges)
};

// n_seeds requests of `prompt`, seeds 1..n_seeds, `sampling` otherwise; max_seqs sequences at a time.
inline SamplingComparison compare_sampling(Model& model, const std::vector<int32_t>& prompt, int64_t n_seeds,
                                           int32_t n_tokens, SamplingParams sampling, EngineOptions eo,
                                           ProposerFactory proposer) {
  SamplingComparison out;
  const std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(n_seeds), prompt);
  // The tokens of every request, sampled under seeds first_seed.. (speculating or not).
  const auto sample = [&](uint64_t first_seed, bool speculate, std::vector<std::vector<int32_t>>* tokens) {
    std::vector<GenerateOptions> opts;
    for (int64_t s = 0; s < n_seeds; ++s) {
      GenerateOptions o;
      o.max_tokens = n_tokens;
      o.ignore_eos = true;
      o.sampling = sampling;
      o.sampling.seed = first_seed + static_cast<uint64_t>(s);
      opts.push_back(o);
    }
    EngineOptions e = eo;
    if (speculate) e.proposer = proposer;
    auto engine = make_engine(model, e);
    if (!engine) return false;
    for (const Outcome& g : run_batched(*engine, prompts, opts)) {
      if (!g.result.ok()) {
        ADD_FAILURE() << (speculate ? "speculating" : "plain") << ": " << g.result.status().to_string();
        return false;
      }
      tokens->push_back(g.result->tokens);
      if (speculate && g.result->draft) out.drafts.merge(*g.result->draft);
    }
    return true;
  };
  std::vector<std::vector<int32_t>> plain, same_seeds, other_seeds;
  const uint64_t n = static_cast<uint64_t>(n_seeds);
  if (!sample(1, false, &plain) || !sample(1, true, &same_seeds) || !sample(n + 1, true, &other_seeds)) return out;
  out.seeds = n_seeds;
  for (int64_t s = 0; s < n_seeds; ++s) out.identical += plain[s] == same_seeds[s];
  for (int32_t p = 0; p < n_tokens; ++p) {
    std::vector<int32_t> a, b;
    for (int64_t s = 0; s < n_seeds; ++s) {
      if (static_cast<int32_t>(plain[s].size()) > p) a.push_back(plain[s][p]);
      if (static_cast<int32_t>(other_seeds[s].size()) > p) b.push_back(other_seeds[s][p]);
    }
    const ChiSquare c = chi_square_two_samples(a, b);
    std::printf("position %d: chi-square %.2f, %lld degrees of freedom, p = %.4f\n", p, c.statistic,
                static_cast<long long>(c.df), c.p_value);
    out.positions.push_back(c);
  }
  std::printf("%lld of %lld seeds gave the same tokens speculating and not; %.3f tokens per verify step over "
              "%lld verify steps\n", static_cast<long long>(out.identical), static_cast<long long>(n_seeds),
              out.drafts.mean_accepted_length(), static_cast<long long>(out.drafts.verify_steps));
  return out;
}

}  // namespace saker::testing
