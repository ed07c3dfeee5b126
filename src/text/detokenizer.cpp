// Incremental detokenizer (see detokenizer.h).
#include "text/detokenizer.h"

#include "text/utf8.h"

namespace saker::text {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer), options_(options) {
  reset();
}

void IncrementalDetokenizer::reset() {
  pending_.clear();
  strip_pending_ = options_.strip_leading_space && tokenizer_->kind() == VocabKind::kSpm &&
                   tokenizer_->vocab().add_space_prefix();
}

std::string IncrementalDetokenizer::push(int32_t id) {
  pending_ += tokenizer_->decode_piece(id, options_, &strip_pending_);
  const size_t ready = utf8_complete_prefix(pending_);
  if (ready == 0) return {};
  // Invalid bytes inside the ready part (a stray continuation byte, a truncated sequence followed by
  // another character) can never be completed: replace them now.
  std::string out = utf8_sanitize(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace saker::text
