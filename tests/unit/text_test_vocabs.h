#pragma once
// Tiny in-memory vocabularies for the text/ unit tests: small enough to reason about by hand, shaped like
// real ones (byte-level alphabet + merges for BPE; scores + <0xNN> byte tokens for SentencePiece).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "text/byte_level.h"
#include "text/vocab.h"

namespace saker::text::testing {

// Byte-level BPE: ids 0..255 are the bytes (in byte order), then merged tokens, then special tokens.
inline VocabSpec tiny_bpe_spec(const std::string& pre = "gpt-2") {
  VocabSpec spec;
  spec.kind = VocabKind::kBpe;
  spec.pre = pre;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
  spec.types.assign(256, TokenType::kNormal);
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"},
      {"Ġw", "or"}, {"l", "d"}, {"Ġwor", "ld"}, {"Ġ", "Ġ"},
  };
  for (const auto& [l, r] : merges) {
    spec.merges.push_back(l + " " + r);
    spec.tokens.push_back(l + r);
    spec.types.push_back(TokenType::kNormal);
  }
  // A token no merge produces: only reachable when the pre-tokenizer ignores merges (tiktoken style).
  spec.tokens.push_back("hellx");
  spec.types.push_back(TokenType::kNormal);
  const std::vector<std::pair<std::string, TokenType>> specials = {
      {"<|endoftext|>", TokenType::kControl},
      {"<|im_start|>", TokenType::kControl},
      {"<|im_start|>x", TokenType::kControl},  // overlaps the one above: the longer one wins
      {"<tool>", TokenType::kUserDefined},
  };
  for (const auto& [text, type] : specials) {
    spec.tokens.push_back(text);
    spec.types.push_back(type);
  }
  spec.bos_id = spec.eos_id = static_cast<int32_t>(spec.tokens.size()) - 4;  // <|endoftext|>
  return spec;
}

// SentencePiece: <unk>, <s>, </s>, then <0x00>..<0xFF>, then scored pieces.
inline VocabSpec tiny_spm_spec() {
  VocabSpec spec;
  spec.kind = VocabKind::kSpm;
  spec.pre = "default";
  const auto add = [&](const std::string& text, float score, TokenType type) {
    spec.tokens.push_back(text);
    spec.scores.push_back(score);
    spec.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    add(name, 0, TokenType::kByte);
  }
  const std::vector<std::pair<std::string, float>> pieces = {
      {"▁hello", -1}, {"▁world", -1}, {"▁hel", -2}, {"▁wor", -2}, {"▁h", -3}, {"▁w", -3}, {"el", -4},
      {"or", -4},     {"lo", -5},     {"ld", -5},   {"▁", -6},    {"h", -10}, {"e", -10}, {"l", -10},
      {"o", -10},     {"w", -10},     {"r", -10},   {"d", -10},   {"!", -10},
  };
  for (const auto& [text, score] : pieces) add(text, score, TokenType::kNormal);
  add("<tool>", 0, TokenType::kUserDefined);
  spec.unk_id = 0;
  spec.bos_id = 1;
  spec.eos_id = 2;
  spec.add_bos = true;
  spec.add_space_prefix = true;
  return spec;
}

}  // namespace saker::text::testing
