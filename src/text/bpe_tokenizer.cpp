// Byte-level BPE encoding (see bpe_tokenizer.h).
#include "text/bpe_tokenizer.h"

#include <functional>
#include <optional>

#include "core/log.h"
#include "text/byte_level.h"
#include "text/symbol_merge.h"
#include "text/utf8.h"

namespace saker::text {

Result<BpeTokenizer> BpeTokenizer::create(const Vocab& vocab) {
  PretokenizerPreset preset;
  if (!vocab.pre_regexes().empty()) {
    // A tokenizer.json spelled its regexes out: use them as given.
    preset.name = vocab.pre().empty() ? "custom" : vocab.pre();
    preset.regexes = vocab.pre_regexes();
    preset.ignore_merges = vocab.ignore_merges();
  } else {
    bool exact = true;
    preset = resolve_pretokenizer(vocab.pre(), &exact);
    if (vocab.pre().empty()) {
      SAKER_LOG_WARN("tokenizer: no tokenizer.ggml.pre in the file; using the \"default\" pre-tokenizer");
    } else if (!exact) {
      SAKER_LOG_WARN("tokenizer: unknown pre-tokenizer \"{}\"; using \"{}\" (tokenization may differ slightly)",
                     vocab.pre(), preset.name);
    }
  }
  BpeTokenizer t;
  t.vocab_ = &vocab;
  SAKER_ASSIGN_OR_RETURN(t.pretokenizer_, Pretokenizer::create(preset.regexes));
  t.preset_name_ = preset.name;
  t.ignore_merges_ = preset.ignore_merges;
  return t;
}

void BpeTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::string sanitized;
  if (!utf8_is_valid(text)) {
    sanitized = utf8_sanitize(text);
    text = sanitized;
  }
  std::string byte_level;
  for (std::string_view piece : pretokenizer_.split(text)) {
    byte_level.clear();
    for (char c : piece) byte_level += byte_to_unicode(static_cast<uint8_t>(c));
    encode_piece(byte_level, out);
  }
}

void BpeTokenizer::encode_piece(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const Vocab& vocab = *vocab_;
  if (ignore_merges_) {
    const int32_t id = vocab.find(word);
    if (id != kNoToken) {
      out.push_back(id);
      return;
    }
  }

  // One symbol per character of the byte-level text.
  std::vector<MergeSymbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    size_t n = utf8_sequence_length(static_cast<uint8_t>(word[pos]));
    if (n == 0 || pos + n > word.size()) n = 1;
    append_symbol(symbols, pos, n, word.size());
    pos += n;
  }

  const auto text_of = [&](int i) { return word.substr(symbols[i].begin, symbols[i].length); };
  // Lowest merge rank first (the order the merges were learnt in).
  merge_symbol_pairs<int32_t, std::greater<int32_t>>(
      symbols, [&](const MergeSymbol& l, const MergeSymbol& r) -> std::optional<int32_t> {
        const int32_t rank = vocab.merge_rank(word.substr(l.begin, l.length), word.substr(r.begin, r.length));
        if (rank < 0) return std::nullopt;
        return rank;
      });

  for (int i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view text = text_of(i);
    const int32_t id = vocab.find(text);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    // A merge result that is not itself a token (a malformed vocabulary): fall back to its characters.
    for (size_t pos = 0; pos < text.size();) {
      size_t n = utf8_sequence_length(static_cast<uint8_t>(text[pos]));
      if (n == 0 || pos + n > text.size()) n = 1;
      const int32_t char_id = vocab.find(text.substr(pos, n));
      if (char_id != kNoToken) {
        out.push_back(char_id);
      } else if (vocab.unk_id() != kNoToken) {
        out.push_back(vocab.unk_id());
      }
      pos += n;
    }
  }
}

}  // namespace saker::text
