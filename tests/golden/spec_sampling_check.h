#pragma once
// Speculative sampling against plain sampling, statistically: the same prompt sampled under many seeds by an
// engine that speculates and by one that does not, and a two-sample chi-square test on the token at each
// generated position (position 0 comes from the prompt pass; later ones from verify rows when speculating).
// Where a backend rounds verify rows as it rounds decode rows, every seed gives the same tokens both ways;
// where it does not (a near-tie can fall either way), the distributions must still agree.
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
  DraftStats drafts;                 // summed over the speculating requests
};

// n_seeds requests of `prompt`, seeds 1..n_seeds, `sampling` otherwise; max_seqs sequences at a time.
inline SamplingComparison compare_sampling(Model& model, const std::vector<int32_t>& prompt, int64_t n_seeds,
                                           int32_t n_tokens, SamplingParams sampling, EngineOptions eo,
                                           ProposerFactory proposer) {
  SamplingComparison out;
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(n_seeds), prompt);
  std::vector<GenerateOptions> opts;
  for (int64_t s = 0; s < n_seeds; ++s) {
    GenerateOptions o;
    o.max_tokens = n_tokens;
    o.ignore_eos = true;
    o.sampling = sampling;
    o.sampling.seed = static_cast<uint64_t>(s + 1);
    opts.push_back(o);
  }
  std::vector<std::vector<int32_t>> tokens[2];
  for (int k = 0; k < 2; ++k) {
    EngineOptions e = eo;
    if (k == 1) e.proposer = proposer;
    auto engine = make_engine(model, e);
    if (!engine) return out;
    const std::vector<Outcome> got = run_batched(*engine, prompts, opts);
    for (const Outcome& g : got) {
      if (!g.result.ok()) {
        ADD_FAILURE() << (k ? "speculating" : "plain") << ": " << g.result.status().to_string();
        return out;
      }
      tokens[k].push_back(g.result->tokens);
      if (k == 1 && g.result->draft) out.drafts.merge(*g.result->draft);
    }
  }
  out.seeds = n_seeds;
  for (int64_t s = 0; s < n_seeds; ++s) out.identical += tokens[0][s] == tokens[1][s];
  for (int32_t p = 0; p < n_tokens; ++p) {
    std::vector<int32_t> a, b;
    for (int64_t s = 0; s < n_seeds; ++s) {
      if (static_cast<int32_t>(tokens[0][s].size()) > p) a.push_back(tokens[0][s][p]);
      if (static_cast<int32_t>(tokens[1][s].size()) > p) b.push_back(tokens[1][s][p]);
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
