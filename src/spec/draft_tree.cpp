#include "spec/draft_tree.h"

#include <queue>

namespace saker::spec {
namespace {

struct Candidate {
  float score;     // the path's sum of log-probabilities, this token included
  int32_t depth;   // 1..
  int32_t rank;    // index into that depth's candidates
  int32_t parent;  // node index, -1 for the root
  // Best first; among equal scores the shallower, then the lower rank, then the earlier parent: a fixed order.
  bool operator<(const Candidate& o) const {
    if (score != o.score) return score < o.score;
    if (depth != o.depth) return depth > o.depth;
    if (rank != o.rank) return rank > o.rank;
    return parent > o.parent;
  }
};

}  // namespace

DraftTree build_draft_tree(std::span<const DepthCandidates> depths, int32_t budget) {
  DraftTree t;
  if (budget <= 0 || depths.empty() || depths[0].ids.empty()) return t;
  std::priority_queue<Candidate> heap;
  heap.push({depths[0].logprobs[0], 1, 0, -1});
  while (!heap.empty() && t.size() < budget) {
    const Candidate c = heap.top();
    heap.pop();
    const int32_t node = static_cast<int32_t>(t.size());
    const DepthCandidates& here = depths[c.depth - 1];
    t.tokens.push_back(here.ids[c.rank]);
    t.depth.push_back(c.depth);
    t.parent.push_back(c.parent);
    t.score.push_back(c.score);
    const float parent_score = c.parent < 0 ? 0.0f : t.score[c.parent];
    if (c.rank + 1 < static_cast<int32_t>(here.ids.size())) {
      heap.push({parent_score + here.logprobs[c.rank + 1], c.depth, c.rank + 1, c.parent});
    }
    if (c.depth < static_cast<int32_t>(depths.size()) && !depths[c.depth].ids.empty()) {
      heap.push({c.score + depths[c.depth].logprobs[0], c.depth + 1, 0, node});
    }
  }
  return t;
}

}  // namespace saker::spec
