#pragma once
// SentencePiece BPE (GGUF model "llama"): spaces become U+2581, then adjacent symbols are merged greedily,
// always taking the pair whose merged text is the highest-scoring token. A merge is only made when its
// text is a token, so only single characters can be left outside the vocabulary: they become <0xNN> byte
// tokens (or the unknown token when the vocabulary has no byte tokens).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace saker::text {

class SpmTokenizer {
 public:
  explicit SpmTokenizer(const Vocab& vocab) : vocab_(&vocab) {}  // vocab must outlive the tokenizer

  // Encodes raw text (special tokens already split out) and appends the ids. `add_space_prefix` puts the
  // dummy leading space SentencePiece adds at the start of a text (llama.cpp convention: also after each
  // special token). Bytes that are not valid UTF-8 are kept as single-byte symbols and end as byte tokens.
  void encode(std::string_view text, bool add_space_prefix, std::vector<int32_t>& out) const;

 private:
  // Appends the token for one final symbol, or its bytes as byte tokens.
  void emit(std::string_view symbol, std::vector<int32_t>& out) const;

  const Vocab* vocab_;
};

// " " -> U+2581 (SentencePiece's visible space), and back.
std::string spm_escape_spaces(std::string_view text);
std::string spm_unescape_spaces(std::string_view text);

}  // namespace saker::text
