#pragma once
// Finds special and added tokens written in input text, so that "<|im_start|>" becomes one token instead
// of being tokenized as characters. Control and unknown tokens are matched only when the caller asks
// (parse_special); user-defined (added) tokens are always matched, as in llama.cpp and HF tokenizers.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "text/byte_ranges.h"
#include "text/vocab.h"

namespace saker::text {

// A stretch of input: plain text to run through the tokenizer, or one special token.
struct TextFragment {
  std::string_view text;
  int32_t token = kNoToken;  // kNoToken: plain text
};

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher() = default;
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Scans left to right and takes the longest token that starts at each position (HF's leftmost-longest
  // rule; llama.cpp instead replaces longer tokens first over the whole text, which differs only when two
  // special tokens overlap). Plain-text fragments are never empty.
  std::vector<TextFragment> split(std::string_view text, bool parse_special) const;

  // split(text, true), except that a control or unknown token is taken only where its whole byte range lies
  // outside every `untrusted` range (well_formed for text, see byte_ranges.h): inside, those bytes stay plain
  // text, as split(text, false) would leave them. With no ranges this is exactly split(text, true), so a
  // prompt whose outside text holds no token text splits the same either way.
  std::vector<TextFragment> split(std::string_view text, std::span<const ByteRange> untrusted) const;

  size_t n_tokens() const { return n_tokens_; }

 private:
  std::vector<TextFragment> split_impl(std::string_view text, bool parse_special,
                                       std::span<const ByteRange> untrusted) const;

  struct Candidate {
    std::string_view text;  // points into the Vocab
    int32_t id;
    bool always;  // user-defined: matched even without parse_special
  };
  std::array<std::vector<Candidate>, 256> by_first_byte_;  // each sorted longest first, then by id
  size_t n_tokens_ = 0;
};

}  // namespace saker::text
