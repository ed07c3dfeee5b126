// SentencePiece BPE encoding (see spm_tokenizer.h).
#include "text/spm_tokenizer.h"

#include <functional>
#include <optional>

#include "text/symbol_merge.h"
#include "text/utf8.h"

namespace saker::text {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581

}  // namespace

std::string spm_escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out += kSpaceMark;
    } else {
      out += c;
    }
  }
  return out;
}

std::string spm_unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
      out += ' ';
      pos += kSpaceMark.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

void SpmTokenizer::encode(std::string_view raw, bool add_space_prefix, std::vector<int32_t>& out) const {
  if (raw.empty() && !add_space_prefix) return;
  std::string prefixed;
  prefixed.reserve(raw.size() + 1);
  if (add_space_prefix) prefixed += ' ';
  prefixed.append(raw);
  const std::string text = spm_escape_spaces(prefixed);
  const Vocab& vocab = *vocab_;

  // One symbol per UTF-8 character; a byte that starts no valid sequence is a symbol of its own.
  std::vector<MergeSymbol> symbols;
  symbols.reserve(text.size());
  uint32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t n = utf8_decode(text, pos, &cp);
    if (n == 0) n = 1;
    append_symbol(symbols, pos, n, text.size());
    pos += n;
  }

  const std::string_view view(text);
  // Highest score first: a pair merges when the merged text is a token.
  merge_symbol_pairs<float, std::less<float>>(
      symbols, [&](const MergeSymbol& l, const MergeSymbol& r) -> std::optional<float> {
        const int32_t id = vocab.find(view.substr(l.begin, l.length + r.length));
        if (id == kNoToken) return std::nullopt;
        return vocab.score(id);
      });

  for (int i = 0; i >= 0; i = symbols[i].next) emit(view.substr(symbols[i].begin, symbols[i].length), out);
}

void SpmTokenizer::emit(std::string_view symbol, std::vector<int32_t>& out) const {
  const Vocab& vocab = *vocab_;
  const int32_t id = vocab.find(symbol);
  if (id != kNoToken) {
    out.push_back(id);
    return;
  }
  for (char c : symbol) {
    const auto byte = static_cast<uint8_t>(c);
    int32_t byte_id = vocab.byte_token(byte);
    if (byte_id == kNoToken) byte_id = vocab.find(std::string_view(&c, 1));  // vocabularies without <0xNN>
    if (byte_id == kNoToken) byte_id = vocab.unk_id();
    if (byte_id != kNoToken) out.push_back(byte_id);
  }
}

}  // namespace saker::text
