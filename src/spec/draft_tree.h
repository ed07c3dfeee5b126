#pragma once
// DraftTree: the tree of draft tokens one verify step checks (DDTree, speculative-decoding notes section 3).
//
// A block drafter gives, for each depth d = 1..D below the pending token (the root), a distribution over the
// token at that depth, independent of the path above it. A path's score is the sum of the log-probabilities
// of its tokens. The tree is grown best-first: start from (depth 1, rank 0); repeatedly take the best
// candidate, make it a node, and offer its next sibling (same parent, next rank at that depth) and its first
// child (depth + 1, rank 0), until `budget` nodes. Siblings carry distinct tokens (distinct ranks), and a node
// always comes after its parent, so node order is a valid batch order for the verify forward.
#include <cstdint>
#include <span>
#include <vector>

namespace saker::spec {

struct DepthCandidates {
  std::span<const int32_t> ids;     // [k] most likely tokens at this depth, best first, distinct
  std::span<const float> logprobs;  // [k] their log-probabilities, non-increasing
};

struct DraftTree {
  std::vector<int32_t> tokens;  // [n_nodes] (the root, the pending token, is not a node)
  std::vector<int32_t> depth;   // [n_nodes] 1.. (a node's position = the root's + depth)
  std::vector<int32_t> parent;  // [n_nodes] index of the parent node, -1 for the root
  std::vector<float> score;     // [n_nodes] sum of log-probabilities along the path

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

// depths[d - 1] holds depth d's candidates; at most `budget` nodes, depth at most depths.size().
DraftTree build_draft_tree(std::span<const DepthCandidates> depths, int32_t budget);

}  // namespace saker::spec
