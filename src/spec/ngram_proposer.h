#pragma once
// NgramProposer: prompt-lookup drafting. The sequence's own tokens are the draft source: the longest recent
// n-gram (max_ngram down to min_ngram tokens, ending with the pending token) that occurred earlier in the
// sequence proposes, as a chain, the tokens that followed its most recent earlier occurrence. It needs no
// model and no hidden states, so it works with the prefix cache, and pays off where the output repeats its
// input (code edits, quoting, structured text). Nothing found: no draft, the step decodes one token.
#include <cstdint>
#include <memory>
#include <span>

#include "engine/proposer.h"

namespace saker::spec {

struct NgramOptions {
  int32_t min_ngram = 2;  // shortest suffix that may match (1 drafts from any repeated token: noisy)
  int32_t max_ngram = 4;  // longest suffix tried first
  int32_t max_draft = 8;  // most tokens proposed per step
};

class NgramProposer : public Proposer {
 public:
  // Refuses min_ngram < 1, max_ngram < min_ngram or max_draft < 1 (the message names the field).
  static Result<std::unique_ptr<NgramProposer>> create(const NgramOptions& options);

  std::span<const int32_t> tap_layers() const override { return {}; }
  void reset() override {}
  Status add_context(int64_t, const FloatRows&) override { return {}; }
  Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) override;
  int64_t max_nodes() const override { return options_.max_draft; }

  // The drafted tokens alone (what propose() puts in a chain): exposed for tests and tools.
  static void lookup(std::span<const int32_t> tokens, const NgramOptions& options, int64_t max_tokens,
                     std::vector<int32_t>* out);

 private:
  explicit NgramProposer(const NgramOptions& options) : options_(options) {}
  NgramOptions options_;
  std::vector<int32_t> found_;
};

}  // namespace saker::spec
