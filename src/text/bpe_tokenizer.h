#pragma once
// Byte-level BPE (GGUF model "gpt2"): pre-tokenize, map each piece's bytes to the byte-level alphabet, then
// merge adjacent symbols by merge rank until no listed merge applies.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/pretokenizer.h"
#include "text/pretokenizer_presets.h"
#include "text/vocab.h"

namespace saker::text {

class BpeTokenizer {
 public:
  // `vocab` must outlive the tokenizer. Resolves the pre-tokenizer from vocab.pre() (warning when the name
  // is unknown and a family fallback is used).
  static Result<BpeTokenizer> create(const Vocab& vocab);

  // Encodes text that holds no special tokens (the caller splits those out) and appends the ids.
  // Invalid UTF-8 bytes become U+FFFD before pre-tokenization, as in llama.cpp.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

  const std::string& pretokenizer_name() const { return preset_name_; }

  // Encodes one pre-tokenized piece already in the byte-level alphabet (exposed for tests).
  void encode_piece(std::string_view byte_level, std::vector<int32_t>& out) const;

 private:
  const Vocab* vocab_ = nullptr;
  Pretokenizer pretokenizer_;
  std::string preset_name_;
  bool ignore_merges_ = false;
};

}  // namespace saker::text
