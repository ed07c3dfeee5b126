#pragma once
// Streams generated tokens as text. A token can end in the middle of a UTF-8 character (byte tokens,
// byte-level BPE pieces of an emoji), so push() holds back an unfinished character until the tokens that
// complete it arrive; every string it returns is valid UTF-8 and can be sent as an SSE chunk on its own.
#include <cstdint>
#include <string>

#include "text/tokenizer.h"

namespace saker::text {

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive the detokenizer. For a continuation of a prompt (the usual server case) pass
  // options with strip_leading_space = false: the dummy-space rule applies only to a sequence's start.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {});

  // Text that is complete after adding `id` (possibly empty).
  std::string push(int32_t id);
  // Whatever is still held back at the end of the stream; bytes that never formed a character become
  // U+FFFD so the output stays valid UTF-8.
  std::string flush();
  // Starts a new sequence.
  void reset();

  // Bytes currently held back (an unfinished character).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  bool strip_pending_ = false;
  std::string pending_;
};

}  // namespace saker::text
