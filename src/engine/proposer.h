#pragma once
// Proposer: what a speculating sequence drafts from, inside the engine step. The engine feeds it the target's
// tapped hidden states of every committed position (add_context) and asks it for a chain or tree of draft
// tokens after the pending one (propose); the verify walk through the sequence's own Sampler keeps the output
// exactly plain decoding's. spec/ implements it (the DFlash block drafter, n-gram prompt lookup).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/float_rows.h"
#include "core/status.h"

namespace saker {

// Draft tokens below the root (the pending token): node i has token tokens[i], parent node parent[i] (-1: the
// root) and depth depth[i] >= 1; a node comes after its parent. A chain is the tree whose node i is the parent
// of node i + 1.
struct DraftNodes {
  std::vector<int32_t> tokens;  // [n_nodes]
  std::vector<int32_t> parent;  // [n_nodes]
  std::vector<int32_t> depth;   // [n_nodes]
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  // Whether node i is node i - 1's child for every i (node 0 the root's): a chain, in order.
  bool is_chain() const {
    for (int64_t i = 0; i < size(); ++i) {
      if (parent[i] != static_cast<int32_t>(i) - 1 || depth[i] != static_cast<int32_t>(i) + 1) return false;
    }
    return true;
  }
  void clear() {
    tokens.clear();
    parent.clear();
    depth.clear();
  }
};

// A forward that many proposers share (one drafter for every sequence of an engine). A step asks for its
// drafts in three calls (see Proposer::request), so that it runs once for all of them.
class DraftBatch {
 public:
  virtual ~DraftBatch() = default;
  // Runs every request made since the last run(); each proposer's take() then reads its own part.
  virtual Status run() = 0;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // The target's decoder layers whose outputs add_context reads (HiddenTaps::layers); empty: none.
  virtual std::span<const int32_t> tap_layers() const = 0;
  // A proposer that reads taps needs every position fed through the target, except those whose context it
  // holds already (match_prefix: prefix-cache pages keep K/V, not hidden states); one that reads only tokens
  // needs none.
  bool needs_taps() const { return !tap_layers().empty(); }
  // Forgets every context position (the sequence restarts: preempted and recomputed).
  virtual void reset() = 0;
  // Prefix caching, asked only where the engine's prefix cache is on. match_prefix: at admission, before any
  // context, adopts what a cache of the proposer's own holds for the longest prefix of tokens[0, max_tokens) and
  // returns its length (0: nothing, the default). For a proposer that reads taps the engine then takes at most
  // that much of the prompt from its own cache, so every other position's hidden states still come; context
  // added later from an earlier position replaces what was adopted. commit_context: after every step, tokens
  // (the sequence so far) own the context the proposer holds: its cache may key it for later sequences.
  virtual Result<int64_t> match_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
    (void)tokens;
    (void)max_tokens;
    return int64_t{0};
  }
  virtual void commit_context(std::span<const int32_t> tokens) { (void)tokens; }
  // The target's taps of positions [first, first + taps.n): rows of [n_taps, n_embd] (HiddenTaps layout), on
  // the host or, where reads_device_taps(), in the target's GPU memory; positions from `first` on replace what
  // was there. A proposer that reads no taps gets only the count (taps.data null).
  virtual Status add_context(int64_t first, const FloatRows& taps) = 0;
  // Whether add_context can read taps in the target's GPU memory (a drafter on that GPU): the engine then leaves
  // them there instead of copying every tapped row to the host and back.
  virtual bool reads_device_taps() const { return false; }
  // After a step's add_context calls: waits until the proposer has read the taps it was given (the target's
  // next step writes those rows again).
  virtual Status settle_context() { return {}; }
  // Draft nodes after the pending token, at most max_depth deep. tokens: the sequence so far (prompt and
  // generated); its last token is the pending one, at position tokens.size() - 1.
  virtual Status propose(std::span<const int32_t> tokens, int64_t max_depth, DraftNodes* out) = 0;
  // The most nodes propose() returns (sizes the verify segment).
  virtual int64_t max_nodes() const = 0;
  // The most nodes a draft at most max_depth deep brings: a chain's depth, a tree's budget.
  int64_t max_nodes_at(int64_t max_depth) const {
    return drafts_trees() ? max_nodes() : std::min(max_depth, max_nodes());
  }

  // Drafting in three calls, so that proposers sharing one forward batch it: request() on every sequence that
  // drafts this step, then run() once on each distinct batch() (the DraftBatch the last request() joined;
  // null: none), then take() on each, which gives the nodes propose() would have. By default request()
  // proposes at once and take() hands its nodes over.
  virtual Status request(std::span<const int32_t> tokens, int64_t max_depth) {
    return propose(tokens, max_depth, &requested_);
  }
  virtual DraftBatch* batch() { return nullptr; }
  virtual Status take(DraftNodes* out) {
    std::swap(*out, requested_);
    requested_.clear();
    return {};
  }
  // Whether propose() returns trees rather than chains. The engine adapts only a chain's length to its
  // acceptance (DraftPolicy): a tree hedges by width, and cutting its depth measured slower.
  virtual bool drafts_trees() const { return false; }

 private:
  DraftNodes requested_;  // request() to take(), for proposers that draft at once
};

using ProposerFactory = std::function<Result<std::unique_ptr<Proposer>>()>;

}  // namespace saker
