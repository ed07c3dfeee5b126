#pragma once
// DraftPolicy: how deep a speculating sequence drafts in its next step, from how much of its last draft the
// target accepted. Drafts the target keeps rejecting cost verify rows (and the proposer's own work) for
// nothing, while a proposer that is right every time should get room to be right for longer. The rule is
// additive: all of the last draft accepted -> two deeper than the depth or the draft, whichever is longer (up
// to the proposer's most), any rejected -> the accepted length plus one (at least one). It changes only how many tokens are proposed, never which tokens
// are decided, so output stays exactly plain decoding's.
#include <algorithm>
#include <cstdint>

namespace saker {

class DraftPolicy {
 public:
  // max_depth: the deepest draft the proposer makes (Proposer::max_nodes for a chain). adaptive false: always
  // max_depth. prior_accepted: what a draft is expected to get accepted before this sequence's first verify
  // (the engine's recent average; negative: half the most). A fixed optimistic prior made every new sequence
  // draft a few times at a loss where drafting did not pay (H100, 8B Q4_K_M, replay:2: about four verify steps a
  // request, 4% of the run).
  DraftPolicy(int64_t max_depth, bool adaptive, double prior_accepted = -1.0)
      : max_(std::max<int64_t>(1, max_depth)),
        depth_(max_),
        adaptive_(adaptive),
        accepted_(prior_accepted >= 0 ? std::min(prior_accepted, static_cast<double>(max_))
                                      : 0.5 * static_cast<double>(max_)) {}

  int64_t depth() const { return depth_; }
  // Drafts a verify step is expected to get accepted: a moving average of the recent ones (half the most
  // before any), what StepCost weighs a draft's rows against.
  double expected_accepted() const { return accepted_; }
  // Draft nodes a step is expected to bring: a moving average of what the proposer returned (an n-gram
  // lookup often finds nothing), so the policy prices the rows that come, not the most that could.
  double expected_drafts() const { return drafted_; }
  void note_drafted(int64_t nodes) { drafted_ += 0.3 * (static_cast<double>(nodes) - drafted_); }

  // After a verify: the draft was `proposed` deep and the target accepted `accepted` of its tokens in a row.
  void record(int64_t proposed, int64_t accepted) {
    if (proposed <= 0) return;
    accepted_ += 0.3 * (static_cast<double>(accepted) - accepted_);
    if (!adaptive_) return;
    // A draft shorter than the depth (a proposer that ran out, a step with little room) that was accepted
    // whole says nothing against the depth: grow from the larger of the two.
    depth_ = accepted >= proposed ? std::min(max_, std::max(depth_, proposed) + 2)
                                  : std::clamp<int64_t>(accepted + 1, 1, max_);
  }

 private:
  int64_t max_;
  int64_t depth_;
  bool adaptive_;
  double accepted_;
  double drafted_ = static_cast<double>(max_);
};

}  // namespace saker
