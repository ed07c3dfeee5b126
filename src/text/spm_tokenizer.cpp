// SentencePiece BPE encoding (see spm_tokenizer.h).
#include "text/spm_tokenizer.h"

#include <queue>

#include "text/utf8.h"

namespace saker::text {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581

struct Candidate {
  float score;
  int left;
  int right;
  size_t length;  // merged size when queued; a mismatch later means the candidate is stale
};

struct WorseFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    // Highest score first; among equal scores the leftmost pair.
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

// A run of bytes of the escaped text; merged-away symbols keep length 0.
struct Symbol {
  size_t begin = 0;
  size_t length = 0;
  int prev = -1;
  int next = -1;
};

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
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  uint32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t n = utf8_decode(text, pos, &cp);
    if (n == 0) n = 1;
    Symbol s;
    s.begin = pos;
    s.length = n;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = pos + n < text.size() ? static_cast<int>(symbols.size()) + 1 : -1;
    symbols.push_back(s);
    pos += n;
  }

  const std::string_view view(text);
  std::priority_queue<Candidate, std::vector<Candidate>, WorseFirst> queue;
  const auto try_queue = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t length = symbols[left].length + symbols[right].length;
    const int32_t id = vocab.find(view.substr(symbols[left].begin, length));
    if (id == kNoToken) return;
    queue.push({vocab.score(id), left, right, length});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_queue(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    if (left.length == 0 || right.length == 0 || left.next != c.right || left.length + right.length != c.length) {
      continue;  // stale
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    try_queue(left.prev, c.left);
    try_queue(c.left, left.next);
  }

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
