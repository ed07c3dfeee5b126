#pragma once
// `saker bench --concurrency 1,4,16,64`: throughput of the batching engine, in the manner of llama.cpp's
// batched-bench. For each concurrency N an Engine with N sequence slots takes N requests at once, each with its
// own P random prompt tokens and G greedy tokens to generate (end-of-generation ignored, prefix cache off, so
// every prompt is prefilled in full), and the calling thread steps it until all are done.
//
// Per timed run (times measured on the stepping thread, inside the engine's token callbacks):
//   wall            first submit to the last request's end
//   TTFT            per request: its first generated token minus its submit time (p50 / p99 over the requests
//                   of every timed run)
//   prefill tok/s   N*P / time from the first submit to the end of the step in which the last request got its
//                   first token (decode tokens of early requests may ride along in those steps)
//   decode tok/s    tokens decided after that step / time from its end to the end of the run: the throughput
//                   with every request in its decode phase (N*(G-1) tokens when all prompts land in one step)
//   total tok/s     N*G / wall
//   tokens/step     tokens fed per forward (EngineStats: step_tokens / steps)
// Wall time, the tok/s figures and tokens/step are medians over the timed runs.
//
// With `replay` (saker bench --spec replay:L,...), each level then runs its last timed run's prompts again
// with every sequence speculating through a ReplayProposer (spec/replay_proposer.h): the target's own greedy
// continuation drafted max_draft tokens at a time and corrupted so that a verify step commits L tokens on
// average. Reported per L: decode tok/s, its ratio to plain decoding's, the measured tokens per verify step,
// and whether every request's tokens equal the plain run's (they must wherever a row's numbers do not depend
// on the batch width). With a replay drafter (by default a random one of a real drafter's size, see
// cmd_bench), every speculating sequence also runs that drafter each step, so the figures include its cost.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "models/model.h"
#include "spec/dflash_weights.h"
#include "text/tokenizer.h"

namespace saker::cli {

struct EngineBenchArgs {
  std::vector<int64_t> concurrency;  // N per level
  int64_t prompt_tokens = 512;       // P per request
  int64_t gen_tokens = 128;          // G per request
  int32_t kv_block = 16;             // tokens per KV page
  int32_t prefill_chunk = 512;       // prompt tokens one sequence feeds per step
  int64_t step_tokens = 0;           // tokens per engine step; 0: 4 x prefill_chunk + N (saker serve's default)
  int reps = 5;                      // timed runs per level (median reported)
  int warmup = 1;                    // untimed full-size runs per level (after one short N=1 run for the model)
  uint64_t seed = 1234;              // prompt token ids
  std::vector<double> replay;        // mean tokens committed per verify step (L) to replay at; empty: none
  int32_t max_draft = 15;            // drafts per replay verify step (a block of max_draft + 1 rows)
  bool always_speculate = false;     // replay runs without EngineOptions::speculation_cost_policy
  // A drafter whose cost the replay runs carry (spec::ShadowedProposer): fed the target's taps and asked for a
  // block every verify step, beside the replayed drafts; null: the drafts cost nothing. Runs with drafter_ops
  // (the target's device), one slot per sequence.
  std::shared_ptr<const spec::DFlashWeights> replay_drafter;
  std::string replay_drafter_name;   // how the table and JSON name it
  OpsOptions drafter_ops;
};

// Prefix cache: time to first token of a request whose first `prefix_tokens` tokens an earlier request already
// computed (warm) against the same request on a fresh engine (cold), median of `reps` pairs. Each pair: a fresh
// engine (prefix cache on) runs [prefix, suffix A] (cold TTFT), then [prefix, suffix B] (warm TTFT).
Result<nlohmann::json> run_prefix_cache_bench(Model& model, const text::Tokenizer* tokenizer, int64_t prefix_tokens,
                                              int64_t suffix_tokens, int32_t prefill_chunk, int reps);

// Refuses values that cannot be measured (N < 1, P < 1, G < 1, ...) with an error naming the flag.
Status check_engine_bench_args(const EngineBenchArgs& args);

// Runs every level, prints progress to stderr and the table to stdout, and returns one JSON object per level
// (the figures above plus every timed run).
Result<nlohmann::json> run_engine_bench(Model& model, const text::Tokenizer* tokenizer, const EngineBenchArgs& args);

}  // namespace saker::cli
