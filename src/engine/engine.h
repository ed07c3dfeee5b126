#pragma once
// Engine: continuous batching over one model. Requests go into an inbox from any thread; each step()
//
//   schedule  the Scheduler picks decode tokens, prefill chunks and admissions into one flat Batch
//   run       one Model::forward over the Batch (ModelRunner), token ids from the device when every deciding
//             row is plain greedy, logits rows otherwise
//   sample    each deciding row goes through its sequence's own Sampler (plain decoding's, so one seed gives
//             one request's tokens whatever else runs)
//   commit    the fed tokens' K/V are now cached; their full pages join the prefix cache
//   emit      each decided token through the sequence's TokenOutput (callbacks: on_token, on_text), and
//             on_done when a sequence is over
//
// The engine thread (start()) runs steps while there is work; tests and `saker run` may call step() or
// generate() on their own thread instead. The engine owns the KV memory (KvPool) for every sequence.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/batch.h"
#include "engine/kv_pool.h"
#include "engine/model_runner.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace saker {

struct EngineOptions {
  int32_t max_seqs = 4;            // sequences running at once
  int64_t n_ctx = 4096;            // the longest prompt + generation of one sequence
  int64_t kv_tokens = 0;           // KV pool slots; 0: max_seqs * n_ctx
  int32_t kv_block = 16;           // tokens per KV page
  int64_t step_tokens = 0;         // tokens per step; 0: 4 x prefill_chunk + max_seqs
  int32_t prefill_chunk = 512;     // prompt tokens one sequence feeds per step
  bool prefix_cache = true;
  uint64_t cache_ram_bytes = 0;    // host-RAM tier for evicted prefix pages
  bool device_argmax = true;       // greedy steps copy token ids, not logits
  // Speculative decoding: each sequence gets a proposer from this factory and verifies its drafts inside the
  // step (null: plain decoding).
  ProposerFactory proposer;
  // Each speculating sequence drafts a chain as long as its recent acceptance earns (DraftPolicy; trees keep
  // their depth); false: always the proposer's most.
  bool adaptive_drafts = true;
  // Drafts ride in a step only where the measured step times say they commit more tokens per millisecond
  // than the plain step would (StepCost: speculation stands down at high concurrency or low acceptance).
  // It decides only what is drafted, never a token: the output is what the same engine decides without it.
  // Off by default here (tests pin what drafts); the CLI turns it on.
  bool speculation_cost_policy = false;
  // The most rows (decode tokens + drafts) of a step in which sequences draft, shared out evenly among the
  // decoding sequences. 0: the model's invariant_rows() (64 on CUDA, where wider steps leave the width-invariant
  // matmuls and verify rows could part from plain decoding's at a near-tie, and cost a library GEMM), or
  // step_tokens where the model has no such limit (the CPU).
  int64_t draft_rows = 0;
};

struct EngineStats {
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t steps = 0;
  int64_t step_tokens = 0;         // tokens fed over all steps
  int64_t preemptions = 0;
  int64_t undrafted_steps = 0;     // steps in which the cost policy held speculating sequences' drafts back
  // Steps that only decode, without drafts and with (verify steps), and their wall time (proposers' work, the
  // verify walk and host bookkeeping included): what speculation costs a step, measured.
  int64_t plain_decode_steps = 0, drafting_steps = 0;
  double plain_decode_ms = 0, drafting_ms = 0;
  // Drafts accepted a verify step, a moving average over every sequence's (negative: none yet): where a new
  // sequence's DraftPolicy starts.
  double accepted_drafts = -1.0;
  // Accepted draft-tree rows moved to their sequence's next slots (rows a chain accepts are in place already).
  int64_t moved_draft_rows = 0;
  KvPoolStats pool;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(Model& model, const text::Tokenizer* tokenizer,
                                                const EngineOptions& options);
  ~Engine();  // stops the engine thread; sequences still inside end with FinishReason::kShutdown

  // Thread-safe. The prompt and options are checked first (an error goes to on_done at once). Callbacks run on
  // the thread that steps the engine: on_token / on_text (in GenerateOptions and here) as tokens are decided,
  // on_done exactly once. options.cancel (if set) is read every step.
  void submit(std::vector<int32_t> prompt, GenerateOptions options, std::function<bool(std::string_view)> on_text,
              DoneCallback on_done);
  // Blocking: one request from prompt to finish (waits for the engine thread, or steps on this thread when
  // none runs).
  Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<bool(std::string_view)>& on_text = nullptr);

  // One step (what the engine thread runs). Returns false when there was nothing to do.
  Result<bool> step();
  void start();
  void stop();
  // Ends every queued and running request, now and later, with FinishReason::kShutdown (at its next step).
  void cancel_all();

  EngineStats stats() const;
  Status validate() const;
  const EngineOptions& options() const { return options_; }
  int64_t n_ctx() const { return options_.n_ctx; }
  KvPool& pool() { return *pool_; }

 private:
  Engine(Model& model, const text::Tokenizer* tokenizer, const EngineOptions& options, std::unique_ptr<KvPool> pool);
  void take_inbox();
  void loop();
  // After a forward: advance, commit and decide every segment's sequence; retire the finished.
  void postprocess(StepOutput& out);
  // The sequence's next token from a logits row, through its own Sampler; *raw: the row before the sampler
  // edited it when logprobs are asked for, else empty.
  int32_t sample_row(Sequence& s, std::span<float> row, std::span<const float>* raw);
  // A decided token through the sequence's output stage; it joins the history unless the generation is over
  // (then false).
  bool accept_token(Sequence& s, int32_t id, std::span<const float> raw, Sequence::Clock::time_point now);
  // A speculative segment: walks the draft tree with the sequence's sampler, queues the accepted rows' K/V
  // moves to consecutive slots (tree_moves_) and feeds their taps to the proposer. Returns false when the
  // sequence is over.
  Result<bool> verify(const BatchSegment& g, StepOutput& out);
  // Every verified sequence's K/V moves of the step in one KvStorage::copy_slots call (one launch on the
  // GPU); a failure ends the sequences whose rows it was to move (added to *over).
  void move_accepted_rows(std::vector<Sequence*>* over);
  void finish(std::unique_ptr<Sequence> seq, Result<GenerateResult> r);
  // Copies the step thread's counters where stats() (any thread) reads them.
  void publish_stats();

  Model& model_;
  const text::Tokenizer* tokenizer_;
  EngineOptions options_;
  std::unique_ptr<KvPool> pool_;
  Scheduler scheduler_;
  ModelRunner runner_;
  Batch batch_;
  std::vector<float> raw_;  // one logits row before the sampler edits it (logprobs)
  // The step's accepted tree rows still to move: slot from[i] to slot to[i] of seq, in order.
  struct TreeMoves {
    Sequence* seq;
    std::vector<int32_t> from, to;
    bool going = true;  // false: the step ended the generation (a failed move then only skips the cache)
  };
  std::vector<TreeMoves> tree_moves_;

  int64_t steps_ = 0, step_tokens_ = 0;  // the stepping thread's counters
  int64_t plain_decode_steps_ = 0, drafting_steps_ = 0;
  double accepted_ = -1.0;  // EngineStats::accepted_drafts, the stepping thread's copy
  int64_t moved_draft_rows_ = 0;
  double plain_decode_ms_ = 0, drafting_ms_ = 0;

  mutable std::mutex mutex_;  // inbox, published stats, stop flag
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Sequence>> inbox_;
  std::atomic<bool> cancel_all_{false};
  uint64_t next_id_ = 1;
  bool stop_ = false;
  std::thread thread_;
  EngineStats stats_;  // as of the last step
};

}  // namespace saker
