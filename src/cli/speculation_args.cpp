#include "cli/speculation_args.h"

#include <fmt/format.h>

#include "cli/model_loading.h"
#include "core/log.h"
#include "spec/chained_proposer.h"
#include "spec/dflash_proposer.h"
#include "spec/draft_model_proposer.h"
#include "spec/dflash_weights.h"
#include "spec/ngram_proposer.h"
#include "spec/speculative_generator.h"

namespace saker::cli {

void add_speculation_options(CLI::App* app, SpeculationArgs* a, const std::string& what) {
  app->add_option("--drafter", a->drafter,
                  "DFlash drafter folder (config.json + model.safetensors): speculative decoding of " + what +
                      ", the same output as without it (on the model's device)");
  app->add_option("--draft-tree", a->draft_tree,
                  "With --drafter: verify a tree of up to N draft tokens grown from the drafter's top tokens per "
                  "position (0: its single best chain)")
      ->check(CLI::Range(0, spec::SpeculativeGenerator::kMaxTreeNodes))
      ->capture_default_str();
  CLI::Option* spec_opt = app->add_option("--spec", a->spec,
                  "Speculative decoding without a draft model: 'ngram' drafts the tokens that followed the latest "
                  "earlier occurrence of the sequence's last n-gram (prompt lookup); the same output as without "
                  "it")
      ->check(CLI::IsMember({"ngram"}));
  app->add_option("--draft-model", a->draft_model,
                  "A smaller model of the same tokenizer (.gguf or HF folder) whose greedy tokens are drafted and "
                  "verified: the same output as without it");
  // At most kMaxTreeNodes, as a drafter's tree: a verify stays on the row-independent CPU paths.
  app->add_option("--draft-max", a->draft_max,
                  "With --spec ngram or --draft-model: most tokens drafted per step (default 8)")
      ->check(CLI::Range(1, spec::SpeculativeGenerator::kMaxTreeNodes));
  app->add_flag("--fixed-draft", a->fixed_draft,
                "Always draft the longest chain (--draft-max, the drafter's block); by default each request's chain "
                "is as long as its recent acceptance earns: two longer after a fully accepted draft, the accepted "
                "length plus one after a rejection (trees, --draft-tree, keep their depth)");
  app->add_flag("--always-speculate", a->always_speculate,
                "Draft in every step; by default a step drafts only where the measured step times say the drafts "
                "commit more tokens per second than a plain step (at high concurrency or low acceptance "
                "speculation stands down; the output is the same either way)");
  app->add_option("--ngram-min", a->ngram_min, "With --spec ngram: shortest n-gram that may match")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->needs(spec_opt);
  app->add_option("--ngram-max", a->ngram_max, "With --spec ngram: longest n-gram, tried first")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->needs(spec_opt);
}

Status check_speculation_args(const SpeculationArgs& a) {
  if (a.draft_tree > 0 && a.drafter.empty()) return make_error(StatusCode::kInvalidArgument, "--draft-tree needs --drafter");
  if (!a.drafter.empty() && !a.draft_model.empty()) {
    return make_error(StatusCode::kInvalidArgument, "give one of --drafter and --draft-model, not both");
  }
  if (a.draft_max > 0 && a.spec.empty() && a.draft_model.empty()) {
    return make_error(StatusCode::kInvalidArgument, "--draft-max needs --spec ngram or --draft-model");
  }
  if (!a.spec.empty() && a.spec != "ngram") {
    return make_error(StatusCode::kInvalidArgument, "--spec: unknown proposer '{}' (known: ngram)", a.spec);
  }
  if (a.ngram_max < a.ngram_min) {
    return make_error(StatusCode::kInvalidArgument, "--ngram-max ({}) must be >= --ngram-min ({})", a.ngram_max,
                      a.ngram_min);
  }
  return {};
}

namespace {

// The proposers that read a model (a DFlash drafter or a draft model); null when none was asked for.
Result<ProposerMaker> model_proposer_maker(const SpeculationArgs& a, const SpeculationTarget& target,
                                           const OpsOptions& target_ops) {
  OpsOptions ops = target_ops;
  ops.tensor_parallel = 1;  // a drafter or draft model is small: it runs whole, beside a split target
  if (target.model) ops.device = target.model->device();  // the drafter beside the target
  if (!a.drafter.empty()) {
    SAKER_ASSIGN_OR_RETURN(std::shared_ptr<const spec::DFlashWeights> drafter,
                           spec::DFlashWeights::load(a.drafter, target.weights));
    // One drafter per engine: its weights prepared once, every sequence a slot of it, drafted in one forward.
    return ProposerMaker([drafter, tree = a.draft_tree, ops](int64_t n_ctx, int32_t max_seqs) {
      return spec::DFlashProposer::factory(drafter, max_seqs, n_ctx, tree, ops);
    });
  }
  if (!a.draft_model.empty()) {
    // One draft model for every sequence, kept alive by the factory: a slot of its KV cache each, every
    // sequence's drafts in one forward per drafted position.
    // On the target's device: a draft model's one-row steps cost little next to the target's.
    const std::string device = target.model ? device_name(target.model->device()) : "cpu";
    SAKER_ASSIGN_OR_RETURN(LoadedModel loaded, load_model_on(a.draft_model, ops, device));
    auto draft = std::make_shared<LoadedModel>(std::move(loaded));
    if (target.model != nullptr) {
      SAKER_RETURN_IF_ERROR(spec::check_draft_vocab(*target.model, target.tokenizer, *draft->model,
                                                    draft->tokenizer.get()));
    }
    return ProposerMaker([draft, k = a.draft_len()](int64_t n_ctx, int32_t max_seqs) -> Result<ProposerFactory> {
      SAKER_ASSIGN_OR_RETURN(ProposerFactory f, spec::DraftModelProposer::factory(*draft->model, max_seqs, n_ctx, k));
      // The factory keeps the loaded draft model alive as long as any proposer of it.
      return ProposerFactory([draft, f]() { return f(); });
    });
  }
  return ProposerMaker();
}

}  // namespace

Result<ProposerMaker> make_proposer_maker(const SpeculationArgs& a, const SpeculationTarget& target,
                                          const OpsOptions& ops) {
  if (a.any() && target.model != nullptr) {
    if (const std::string w = target.model->width_dependent_weight(); !w.empty()) {
      SAKER_LOG_WARN("speculative decoding on {}: {} is rounded differently at different batch widths here, so a "
                     "verified token can part from plain decoding's where its top two logits nearly tie (Q4_K, "
                     "Q5_K and Q6_K weights, as in Q4_K_M files, and most other types with --batch-invariant give "
                     "the same tokens exactly in steps of up to 64 rows)",
                     device_name(target.model->device()), w);
    }
  }
  SAKER_ASSIGN_OR_RETURN(ProposerMaker model_maker, model_proposer_maker(a, target, ops));
  if (a.spec != "ngram") return model_maker;
  const spec::NgramOptions o{a.ngram_min, a.ngram_max, a.draft_len()};
  SAKER_RETURN_IF_ERROR(spec::NgramProposer::create(o).status());  // the options, checked once
  return ProposerMaker([o, model_maker](int64_t n_ctx, int32_t max_seqs) -> Result<ProposerFactory> {
    ProposerFactory model_factory;
    if (model_maker) {
      SAKER_ASSIGN_OR_RETURN(model_factory, model_maker(n_ctx, max_seqs));
    }
    return ProposerFactory([o, model_factory]() -> Result<std::unique_ptr<Proposer>> {
      SAKER_ASSIGN_OR_RETURN(auto ngram, spec::NgramProposer::create(o));
      if (!model_factory) return std::unique_ptr<Proposer>(std::move(ngram));
      // Both: prompt lookup first, the model for steps where it finds nothing.
      SAKER_ASSIGN_OR_RETURN(std::unique_ptr<Proposer> model, model_factory());
      std::vector<std::unique_ptr<Proposer>> chain;
      chain.push_back(std::move(ngram));
      chain.push_back(std::move(model));
      SAKER_ASSIGN_OR_RETURN(auto p, spec::ChainedProposer::create(std::move(chain)));
      return std::unique_ptr<Proposer>(std::move(p));
    });
  });
}

std::string describe_speculation(const SpeculationArgs& a) {
  if (a.spec == "ngram" && a.proposers() > 1) {
    SpeculationArgs model = a;
    model.spec.clear();
    SpeculationArgs ngram = a;
    ngram.drafter.clear();
    ngram.draft_model.clear();
    return describe_speculation(ngram) + ", then " + describe_speculation(model);
  }
  if (!a.drafter.empty()) {
    return fmt::format("DFlash drafter {}, {}", a.drafter,
                       a.draft_tree > 0 ? fmt::format("tree of {} nodes", a.draft_tree) : std::string("chain"));
  }
  if (!a.draft_model.empty()) return fmt::format("draft model {}, up to {} drafted", a.draft_model, a.draft_len());
  if (a.spec == "ngram") {
    return fmt::format("n-gram prompt lookup ({}..{} tokens, up to {} drafted)", a.ngram_min, a.ngram_max,
                       a.draft_len());
  }
  return "none";
}

}  // namespace saker::cli
