#include "engine/token_output.h"

#include "core/logits.h"

namespace saker {
namespace {

// The token's logprob and the n most likely tokens, all under the raw model distribution.
GeneratedToken token_logprobs(std::span<const float> logits, int32_t id, int32_t n_top) {
  GeneratedToken t;
  t.id = id;
  const float log_z = log_sum_exp(logits);
  t.logprob = logits[id] - log_z;
  if (n_top > 0) {
    for (int32_t i : top_ids(logits, n_top)) t.top.push_back({i, logits[i] - log_z});
  }
  return t;
}

}  // namespace

Status check_generate_request(std::span<const int32_t> prompt, const GenerateOptions& opt, int64_t n_vocab,
                              int64_t n_ctx) {
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt == 0) return make_error(StatusCode::kInvalidArgument, "the prompt is empty");
  if (n_prompt >= n_ctx) {
    return make_error(StatusCode::kOutOfRange,
                      "the prompt has {} tokens but the context holds {} (prompt + at least one new token); "
                      "raise the context size or shorten the prompt",
                      n_prompt, n_ctx);
  }
  for (int64_t i = 0; i < n_prompt; ++i) {
    if (prompt[i] < 0 || prompt[i] >= n_vocab) {
      return make_error(StatusCode::kInvalidArgument, "prompt token {} at index {} is outside the vocabulary (0..{})",
                        prompt[i], i, n_vocab - 1);
    }
  }
  SAKER_RETURN_IF_ERROR(opt.sampling.validate());
  if (opt.max_tokens < 0) return make_error(StatusCode::kInvalidArgument, "max tokens must be >= 0");
  return {};
}

TokenOutput::TokenOutput(const text::Tokenizer* tokenizer, const GenerateOptions& options, int64_t n_prompt,
                         int64_t n_ctx, const std::function<bool(std::string_view)>& on_text, GenerateResult* result)
    : tokenizer_(tokenizer),
      options_(options),
      n_prompt_(n_prompt),
      n_ctx_(n_ctx),
      on_text_(on_text),
      result_(result),
      stops_(options.stop) {
  if (tokenizer_) {
    text::DecodeOptions d;
    d.skip_special = true;
    d.strip_leading_space = false;  // a continuation of the prompt
    detok_.emplace(*tokenizer_, d);
  }
}

bool TokenOutput::emit(const std::string& s) {
  if (s.empty()) return true;
  result_->text += s;
  return on_text_ ? on_text_(s) : true;
}

bool TokenOutput::cancelled() {
  if (!options_.cancel || !options_.cancel->load(std::memory_order_relaxed)) return false;
  result_->finish = FinishReason::kCancelled;
  return true;
}

bool TokenOutput::push(int32_t id, std::span<const float> raw_logits) {
  GenerateResult& r = *result_;
  if (tokenizer_ && !options_.ignore_eos && tokenizer_->is_end_of_generation(id)) {
    r.finish = FinishReason::kEos;
    return false;
  }
  r.tokens.push_back(id);
  if (options_.on_token) {
    GeneratedToken t;
    if (options_.top_logprobs >= 0) {
      t = token_logprobs(raw_logits, id, options_.top_logprobs);
    } else {
      t.id = id;
    }
    if (!options_.on_token(t)) {
      r.finish = FinishReason::kCancelled;
      return false;
    }
  }
  if (detok_) {
    const std::string released = stops_.push(detok_->push(id));
    // A consumer that refuses text (a client that went away) cancels; only a stop string is a stop.
    if (!emit(released)) {
      r.finish = FinishReason::kCancelled;
      return false;
    }
    if (stops_.stopped()) {
      r.finish = FinishReason::kStop;
      r.stop_string = stops_.matched();
      return false;
    }
  }
  if (static_cast<int32_t>(r.tokens.size()) >= options_.max_tokens ||
      n_prompt_ + static_cast<int64_t>(r.tokens.size()) >= n_ctx_) {
    r.finish = FinishReason::kLength;
    return false;
  }
  return true;
}

void TokenOutput::finish() {
  GenerateResult& r = *result_;
  if (detok_ && r.finish != FinishReason::kStop && r.finish != FinishReason::kCancelled) {
    emit(stops_.push(detok_->flush()) + stops_.flush());
  }
}

}  // namespace saker
