// Byte-level BPE encoding (see bpe_tokenizer.h).
#include "text/bpe_tokenizer.h"

#include <queue>

#include "core/log.h"
#include "text/byte_level.h"
#include "text/utf8.h"

namespace saker::text {
namespace {

// A run of bytes of the piece; merged-away symbols keep length 0.
struct Symbol {
  size_t begin = 0;
  size_t length = 0;
  int prev = -1;
  int next = -1;
};

// A merge candidate. Candidates go stale when a neighbour merges first; `length` (the merged size at the
// time it was queued) detects that, since a symbol only ever grows by absorbing its right neighbour.
struct Candidate {
  int32_t rank;
  int left;
  int right;
  size_t length;
};

struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    // Lowest rank first; among equal ranks (the same pair twice) the leftmost, as reference BPE does.
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

}  // namespace

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
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    size_t n = utf8_sequence_length(static_cast<uint8_t>(word[pos]));
    if (n == 0 || pos + n > word.size()) n = 1;
    Symbol s;
    s.begin = pos;
    s.length = n;
    s.prev = static_cast<int>(symbols.size()) - 1;
    s.next = pos + n < word.size() ? static_cast<int>(symbols.size()) + 1 : -1;
    symbols.push_back(s);
    pos += n;
  }

  const auto text_of = [&](int i) { return word.substr(symbols[i].begin, symbols[i].length); };
  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> queue;
  const auto try_queue = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t rank = vocab.merge_rank(text_of(left), text_of(right));
    if (rank >= 0) queue.push({rank, left, right, symbols[left].length + symbols[right].length});
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
