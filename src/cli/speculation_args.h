#pragma once
// The speculative-decoding flags `saker run` and `saker serve` share, one spelling for every proposer:
//   --drafter DIR [--draft-tree N]       the DFlash block drafter (reads the target's hidden states)
//   --draft-model FILE [--draft-max N]   a smaller model of the same tokenizer, its greedy chain
//   --spec ngram [--draft-max N] [--ngram-min A --ngram-max B]   prompt lookup from the sequence's own tokens
// --spec ngram with --drafter or --draft-model chains them: prompt lookup first, the model when it finds nothing.
// and what turns them into the engine's per-sequence proposer factory.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "engine/proposer.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace saker::cli {

struct SpeculationArgs {
  std::string drafter;      // DFlash drafter folder
  int32_t draft_tree = 0;   // with --drafter: tree budget (0: chain)
  std::string draft_model;  // a model file or folder of the target's tokenizer
  std::string spec;         // "ngram"
  int32_t draft_max = 0;    // with --spec ngram or --draft-model: most tokens drafted per step (0: 8)
  int32_t ngram_min = 2, ngram_max = 4;
  bool fixed_draft = false;  // always draft the most (no DraftPolicy)
  bool always_speculate = false;  // draft in every step (no StepCost policy)

  static constexpr int32_t kDefaultDraftMax = 8;
  int32_t draft_len() const { return draft_max > 0 ? draft_max : kDefaultDraftMax; }
  int proposers() const { return !drafter.empty() + !spec.empty() + !draft_model.empty(); }
  bool any() const { return proposers() > 0; }
  // The DFlash drafter reads the target's hidden states.
  bool needs_taps() const { return !drafter.empty(); }
};

// Adds the flags to a subcommand; `what` ends the --drafter help ("every request inside the batched step").
void add_speculation_options(CLI::App* app, SpeculationArgs* a, const std::string& what);

// Refuses combinations speculation cannot honour, naming the flag: a tree without a drafter, a drafter and a
// draft model at once, an unknown --spec, --draft-max without a proposer that takes it.
Status check_speculation_args(const SpeculationArgs& a);

// The target a proposer serves: its weights (a DFlash drafter borrows the embedding and head), forward and
// tokenizer (a draft model must share it).
struct SpeculationTarget {
  std::shared_ptr<const ModelWeights> weights;
  const Model* model = nullptr;
  const text::Tokenizer* tokenizer = nullptr;
};

// The engine's proposer factory (EngineOptions::proposer) for max_seqs sequences of up to n_ctx tokens at
// once; null when no speculation was asked for. Loads a drafter's or draft model's weights once (errors name
// the file; a draft model on the target's device); a draft model's vocabulary must be the target's. A DFlash
// drafter is prepared once per engine, with a slot for each of its sequences. Warns when the target's backend
// rounds some weight differently at different batch widths (Model::width_dependent_weight).
using ProposerMaker = std::function<Result<ProposerFactory>(int64_t n_ctx, int32_t max_seqs)>;
Result<ProposerMaker> make_proposer_maker(const SpeculationArgs& a, const SpeculationTarget& target,
                                          const OpsOptions& ops);

// One line for stderr after a speculative generation: what drafted and how much was accepted.
std::string describe_speculation(const SpeculationArgs& a);

}  // namespace saker::cli
