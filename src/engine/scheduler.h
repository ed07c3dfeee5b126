#pragma once
// Scheduler: decides what each engine step runs.
//
//   admit     waiting sequences in arrival order (a preempted one goes back to the front), while fewer than
//             max_seqs run, the step has room for their first chunk and the pool has pages; a new sequence
//             first takes the longest cached prefix of its prompt from the pool
//   decode    every running sequence with one token pending contributes it (they come first in the batch); a
//             speculating sequence contributes its pending token plus its proposer's draft chain or tree
//   prefill   running sequences with more pending contribute their next chunk of at most prefill_chunk
//             tokens, counted from their first uncached token (so a sequence's chunks are the same whatever
//             else runs), while the step's token budget lasts
//   preempt   when a decode token finds no page, the most recently admitted sequence gives its pages back and
//             waits (by recompute: it is re-admitted later and prefills its tokens again, mostly from the
//             prefix cache); nothing it decided is lost
//
// Host-side bookkeeping only; validate() checks that the sequences' block tables and the pool agree.
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/batch.h"
#include "engine/kv_pool.h"
#include "engine/sequence.h"
#include "engine/step_cost.h"

namespace saker {

struct SchedulerOptions {
  int32_t max_seqs = 4;          // sequences running at once
  int64_t step_tokens = 0;       // tokens per step; 0: 4 x prefill_chunk + max_seqs
  int32_t prefill_chunk = 512;   // prompt tokens one sequence feeds per step
  bool cost_policy = false;      // speculating sequences draft only in steps where StepCost says it pays
  int64_t draft_rows = 0;        // most rows (decode tokens + drafts) of a drafting step; 0: step_tokens
};

class Scheduler {
 public:
  Scheduler(KvPool& pool, SchedulerOptions options);

  void add(std::unique_ptr<Sequence> seq);
  // Takes out the sequences whose cancel flag is set (their pages returned), then fills `batch` with the next
  // step (empty when nothing can run). finished receives the cancelled ones.
  Status schedule(Batch* batch, std::vector<std::unique_ptr<Sequence>>* finished);
  // Takes out every sequence, waiting or running (their pages returned): shutdown.
  void drain(std::vector<std::unique_ptr<Sequence>>* out);
  // Removes a running sequence that is over and returns its pages.
  std::unique_ptr<Sequence> retire(Sequence* seq);

  size_t n_waiting() const { return waiting_.size(); }
  size_t n_running() const { return running_.size(); }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  int64_t n_preemptions() const { return n_preemptions_; }
  const SchedulerOptions& options() const { return options_; }
  // Measured step times (the engine records every step's); with cost_policy, whether drafts ride in a step.
  StepCost& step_cost() { return step_cost_; }
  // Steps in which cost_policy held every speculating sequence's drafts back.
  int64_t n_undrafted_steps() const { return n_undrafted_steps_; }
  // Every running sequence holds pages for its cached tokens; the pool's counts equal the owners the tables
  // name (the prefix cache aside); waiting sequences hold none; the pool itself is consistent.
  Status validate() const;

 private:
  // Gives the newest running sequence's pages back and moves it to the front of the waiting queue.
  void preempt_newest();
  // The sequence's KV pages and its proposer's slot go back (it leaves, is preempted or waits again).
  void release_memory(Sequence& s);
  void append(Batch* batch, Sequence* seq, int64_t n);
  void append_tree(Batch* batch, Sequence* seq);
  bool admit_next(int64_t budget);

  KvPool& pool_;
  SchedulerOptions options_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
  int64_t next_admission_ = 0;
  int64_t n_preemptions_ = 0;
  StepCost step_cost_;
  int64_t n_undrafted_steps_ = 0;
  // Drafts each decoding sequence may bring this step: its even share of draft_rows, less its own token.
  int64_t draft_share() const;
  // Whether this step's speculating sequences draft (cost_policy), from their depths and acceptance, each
  // bringing at most `share` drafts.
  bool drafts_pay(int64_t budget, int64_t share);
  // This step's drafts of the decoding sequences that speculate, walked in the order and with the budget the
  // batch is built with: every request first, then each shared forward once (Proposer::request), so that
  // proposers sharing a drafter draft all their sequences in one forward. A proposer that fails costs its
  // sequence this step's draft, not the step.
  void draft(int64_t budget, int64_t share);
};

}  // namespace saker
