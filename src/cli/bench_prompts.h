#pragma once
// `saker bench --prompts FILE [--drafter DIR [--draft-tree N] | --draft-model FILE | --spec ngram]`: real
// prompts through the batching engine, plain and then speculating with the proposer the flags name (the same
// flags and defaults as run and serve), at each --concurrency (default 1: the prompts one after another).
//
// FILE is JSON: a list of prompts, each a string, or an object with "ids" (token ids, used as they are) or
// "text" (encoded with the model's tokenizer). Every prompt generates --gen-tokens greedy tokens (end of
// generation ignored); an engine with N sequence slots takes all of them at once. Per run:
//   wall            first submit to the last request's end
//   tok/s           tokens generated / wall (prefill included)
//   stream tok/s    per request: its tokens after the first / the time from its first token to its last; the
//                   median over the requests (what one user sees while their request decodes)
// and for the speculating run the mean tokens committed per verify step and how many requests gave exactly
// plain decoding's tokens (all of them, wherever a row's numbers do not depend on the batch width). Medians
// over -r runs, after one short warm-up request each way.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/model_loading.h"
#include "cli/speculation_args.h"
#include "core/status.h"

namespace saker::cli {

struct PromptBenchArgs {
  std::string prompts_file;
  std::vector<int64_t> concurrency = {1};
  int64_t gen_tokens = 256;
  int reps = 1;
  int32_t kv_block = 16;
  int32_t prefill_chunk = 512;
  SpeculationArgs spec;  // the proposer of the speculating runs (none: plain runs only)
};

// The prompts of a --prompts file as token ids; errors name the file and the entry.
Result<std::vector<std::vector<int32_t>>> read_bench_prompts(const std::string& path, const text::Tokenizer* tokenizer);

// Runs every level, prints progress to stderr and the table to stdout; returns one JSON object per level.
Result<nlohmann::json> run_prompt_bench(const LoadedModel& lm, const OpsOptions& ops, const PromptBenchArgs& args);

}  // namespace saker::cli
