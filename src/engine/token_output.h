#pragma once
// TokenOutput: what happens to each token a generation loop decides, in order, whatever decided it (plain
// decoding or a speculative verifier): the end-of-generation check, logprobs and on_token, detokenization,
// stop strings, the length limit. One place, so speculation changes how tokens are found and nothing else.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "engine/generator_types.h"
#include "engine/stop_matcher.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace saker {

// The checks every generation loop makes before it starts: a non-empty prompt that leaves room for one new
// token in n_ctx, token ids inside the vocabulary, valid sampling parameters, max_tokens >= 0.
Status check_generate_request(std::span<const int32_t> prompt, const GenerateOptions& options, int64_t n_vocab,
                              int64_t n_ctx);

class TokenOutput {
 public:
  // The referenced objects must outlive this one; `result` receives tokens, text and the finish reason.
  TokenOutput(const text::Tokenizer* tokenizer, const GenerateOptions& options, int64_t n_prompt, int64_t n_ctx,
              const std::function<bool(std::string_view)>& on_text, GenerateResult* result);

  // The next token. raw_logits: the row it was chosen from before the sampler's processors (read only when
  // logprobs are asked for). Returns false when generation is over (result->finish says why: kEos, kStop for a
  // stop string, kLength, or kCancelled when on_token or on_text returned false).
  bool push(int32_t id, std::span<const float> raw_logits);
  // True when the request was cancelled from another thread (result->finish is set to kCancelled).
  bool cancelled();
  // Releases held-back text at the end (not after a stop string or a cancel).
  void finish();

 private:
  bool emit(const std::string& text);

  const text::Tokenizer* tokenizer_;
  const GenerateOptions& options_;
  int64_t n_prompt_;
  int64_t n_ctx_;
  const std::function<bool(std::string_view)>& on_text_;
  GenerateResult* result_;
  StopMatcher stops_;
  std::optional<text::IncrementalDetokenizer> detok_;
};

}  // namespace saker
