#pragma once
// The pair-merge loop shared by the byte-level BPE and the SentencePiece tokenizers (internal): a piece split
// into symbols (a linked list of byte runs), adjacent pairs queued with a priority, the best pair merged first
// (the leftmost among equals), and candidates gone stale (a neighbour merged first) skipped.
#include <cstddef>
#include <optional>
#include <queue>
#include <vector>

namespace saker::text {

// A run of bytes of the piece; merged-away symbols keep length 0.
struct MergeSymbol {
  size_t begin = 0;
  size_t length = 0;
  int prev = -1;
  int next = -1;
};

// Appends the symbol of bytes [pos, pos + n) of a piece of `total` bytes, linked to its neighbours.
inline void append_symbol(std::vector<MergeSymbol>& symbols, size_t pos, size_t n, size_t total) {
  MergeSymbol s;
  s.begin = pos;
  s.length = n;
  s.prev = static_cast<int>(symbols.size()) - 1;
  s.next = pos + n < total ? static_cast<int>(symbols.size()) + 1 : -1;
  symbols.push_back(s);
}

// Merges adjacent symbols while some pair is mergeable. key_of(left, right) gives a pair's priority
// (std::optional<Key>, nullopt: not mergeable); of two keys, ComesLater()(a, b) is true when a merges after b.
template <typename Key, typename ComesLater, typename KeyOf>
void merge_symbol_pairs(std::vector<MergeSymbol>& symbols, KeyOf&& key_of) {
  // `length` (the merged size when queued) detects a stale candidate: a symbol only grows, by absorbing its
  // right neighbour.
  struct Candidate {
    Key key;
    int left;
    int right;
    size_t length;
  };
  struct Order {
    bool operator()(const Candidate& a, const Candidate& b) const {
      return a.key != b.key ? ComesLater()(a.key, b.key) : a.left > b.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, Order> queue;
  const auto try_queue = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::optional<Key> key = key_of(symbols[left], symbols[right]);
    if (key) queue.push({*key, left, right, symbols[left].length + symbols[right].length});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_queue(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    MergeSymbol& left = symbols[c.left];
    MergeSymbol& right = symbols[c.right];
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
}

}  // namespace saker::text
