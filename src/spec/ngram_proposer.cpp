#include "spec/ngram_proposer.h"

#include <algorithm>

namespace saker::spec {

Result<std::unique_ptr<NgramProposer>> NgramProposer::create(const NgramOptions& options) {
  if (options.min_ngram < 1) return make_error(StatusCode::kInvalidArgument, "ngram: min_ngram must be >= 1");
  if (options.max_ngram < options.min_ngram) {
    return make_error(StatusCode::kInvalidArgument, "ngram: max_ngram must be >= min_ngram");
  }
  if (options.max_draft < 1) return make_error(StatusCode::kInvalidArgument, "ngram: max_draft must be >= 1");
  return std::unique_ptr<NgramProposer>(new NgramProposer(options));
}

void NgramProposer::lookup(std::span<const int32_t> tokens, const NgramOptions& options, int64_t max_tokens,
                           std::vector<int32_t>* out) {
  out->clear();
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (max_tokens <= 0) return;
  for (int64_t n = std::min<int64_t>(options.max_ngram, len - 1); n >= options.min_ngram; --n) {
    const int32_t* suffix = tokens.data() + len - n;
    // The most recent earlier occurrence first: it is likeliest to continue the same way. An occurrence at
    // i < len - n is followed by tokens [i + n, len), at least one; it may overlap the suffix (a run like
    // "a b a b a b" continues itself).
    for (int64_t i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix, suffix + n, tokens.data() + i)) continue;
      const int64_t from = i + n, k = std::min<int64_t>({max_tokens, options.max_draft, len - from});
      out->assign(tokens.begin() + from, tokens.begin() + from + k);
      return;
    }
  }
}

Status NgramProposer::propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) {
  out->clear();
  lookup(tokens, options_, max_depth, &found_);
  for (size_t d = 0; d < found_.size(); ++d) {
    out->tokens.push_back(found_[d]);
    out->parent.push_back(static_cast<int32_t>(d) - 1);
    out->depth.push_back(static_cast<int32_t>(d) + 1);
  }
  return {};
}

}  // namespace saker::spec
