#include "spec/speculative_generator.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/clock.h"
#include "engine/sequence_batch.h"
#include "engine/token_output.h"
#include "sample/sampler.h"
#include "spec/draft_tree.h"

namespace saker::spec {
namespace {

using Clock = SteadyClock;

constexpr int32_t kSlot = 0;  // one sequence: the drafter's first slot

}  // namespace

SpeculativeGenerator::SpeculativeGenerator(Model& target, std::unique_ptr<DFlashDrafter> drafter,
                                           const text::Tokenizer* tokenizer, int64_t n_ctx, int32_t tree_budget,
                                           std::unique_ptr<KvStorage> kv)
    : target_(target),
      drafter_(std::move(drafter)),
      tokenizer_(tokenizer),
      n_ctx_(n_ctx),
      tree_budget_(tree_budget),
      kv_(std::move(kv)) {}

Result<std::unique_ptr<SpeculativeGenerator>> SpeculativeGenerator::create(Model& target,
                                                                           std::unique_ptr<DFlashDrafter> drafter,
                                                                           const text::Tokenizer* tokenizer,
                                                                           int64_t n_ctx, int32_t tree_budget) {
  if (!drafter) return make_error(StatusCode::kInvalidArgument, "speculative decoding needs a drafter");
  if (n_ctx <= 0) return make_error(StatusCode::kInvalidArgument, "context size must be positive (got {})", n_ctx);
  if (tree_budget < 0 || tree_budget > kMaxTreeNodes) {
    return make_error(StatusCode::kInvalidArgument, "draft tree budget {} outside 0..{}", tree_budget, kMaxTreeNodes);
  }
  if (target.device() != Device::kCpu) {
    return make_error(StatusCode::kUnsupported,
                      "speculative decoding with a DFlash drafter runs on the CPU backend only for now (the "
                      "drafter's forward is not yet written for the GPU): use --device cpu");
  }
  SAKER_RETURN_IF_ERROR(drafter->config().check_target(target.hparams()));
  const int64_t block = drafter->config().block_size;
  if (drafter->n_ctx() < n_ctx + block) {
    return make_error(StatusCode::kInvalidArgument, "the drafter holds {} positions; {} + a block of {} are needed",
                      drafter->n_ctx(), n_ctx, block);
  }
  // A verify step writes its root and nodes past the committed length: n_ctx plus the larger of a block and a
  // full tree.
  const int64_t extra = std::max<int64_t>(block, kMaxTreeNodes + 1);
  const KvCacheConfig c = kv_cache_config_for(target, n_ctx + extra);
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvStorage> kv, target.allocate_kv(c));
  std::unique_ptr<SpeculativeGenerator> g(
      new SpeculativeGenerator(target, std::move(drafter), tokenizer, n_ctx, tree_budget, std::move(kv)));
  g->block_table_.resize(c.n_blocks);
  std::iota(g->block_table_.begin(), g->block_table_.end(), 0);
  return g;
}

Result<std::unique_ptr<SpeculativeGenerator>> SpeculativeGenerator::load(
    Model& target, std::shared_ptr<const ModelWeights> target_weights, const std::string& drafter_dir,
    const text::Tokenizer* tokenizer, int64_t n_ctx, int32_t tree_budget, const OpsOptions& ops) {
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<const DFlashWeights> w,
                         DFlashWeights::load(drafter_dir, std::move(target_weights)));
  return create(target, std::move(w), tokenizer, n_ctx, tree_budget, ops);
}

Result<std::unique_ptr<SpeculativeGenerator>> SpeculativeGenerator::create(
    Model& target, std::shared_ptr<const DFlashWeights> drafter_weights, const text::Tokenizer* tokenizer,
    int64_t n_ctx, int32_t tree_budget, const OpsOptions& ops) {
  if (!drafter_weights) return make_error(StatusCode::kInvalidArgument, "speculative decoding needs a drafter");
  const int64_t drafter_ctx = n_ctx + drafter_weights->config.block_size;  // the context plus one block
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<DFlashDrafter> drafter,
                         DFlashDrafter::create(std::move(drafter_weights), drafter_ctx, ops));
  return create(target, std::move(drafter), tokenizer, n_ctx, tree_budget);
}

Status SpeculativeGenerator::forward(std::span<const int32_t> tokens, int64_t first, std::span<const int32_t> parents,
                                     std::span<const int32_t> positions, std::vector<float>* logits,
                                     std::vector<float>* taps) {
  const ModelHParams& h = target_.hparams();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const bool tree = !parents.empty();
  SequenceBatch sb(block_table_, first, n, tree ? AttentionMask::kTree : AttentionMask::kCausal);
  if (tree) {
    sb.sequence.tree_start = static_cast<int32_t>(first);
    sb.attn.token_pos = positions;
    sb.attn.token_parent = parents;
  }
  std::vector<int32_t> outputs(tree ? n : 1);
  if (tree) {
    std::iota(outputs.begin(), outputs.end(), 0);
  } else {
    outputs[0] = static_cast<int32_t>(n - 1);
  }
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.attn = sb.attn;
  batch.output_rows = outputs;
  const std::span<const int32_t> layers = drafter_->target_layers();
  taps->resize(n * static_cast<int64_t>(layers.size()) * h.n_embd);
  batch.taps.layers = layers;
  batch.taps.out = taps->data();
  logits->resize(outputs.size() * h.n_vocab);
  SAKER_RETURN_IF_ERROR(batch.attn.validate(kv_->config().n_blocks, kv_->config().block_size));
  return target_.forward(batch, kv_->layers(), logits->data());
}

Result<GenerateResult> SpeculativeGenerator::generate(std::span<const int32_t> prompt, const GenerateOptions& opt,
                                                      const std::function<bool(std::string_view)>& on_text) {
  const ModelHParams& h = target_.hparams();
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  SAKER_RETURN_IF_ERROR(check_generate_request(prompt, opt, h.n_vocab, n_ctx_));
  const int64_t block = drafter_->config().block_size;
  GenerateResult r;
  r.n_prompt = n_prompt;
  r.draft.emplace();
  DraftStats& stats = *r.draft;
  stats.tokens_per_step.assign(block, 0);
  drafter_->reset(kSlot);
  Sampler sampler(opt.sampling);
  TokenOutput out(tokenizer_, opt, n_prompt, n_ctx_, on_text, &r);
  // Prompt + every token decided so far: the penalties' history, exactly as plain decoding keeps it.
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  const bool want_raw = opt.top_logprobs >= 0;  // logprobs read the rows before the sampler edits them

  // Prefill: the prompt's K/V and its hidden states, fused into the drafter's context as each chunk finishes.
  const auto t0 = Clock::now();
  std::vector<float> logits, taps;
  const int64_t chunk = std::max<int32_t>(1, opt.prefill_chunk);
  for (int64_t begin = 0; begin < n_prompt; begin += chunk) {
    if (out.cancelled()) {
      r.prompt_ms = ms_since(t0);
      return r;
    }
    const int64_t end = std::min(n_prompt, begin + chunk);
    SAKER_RETURN_IF_ERROR(forward(prompt.subspan(begin, end - begin), begin, {}, {}, &logits, &taps));
    SAKER_RETURN_IF_ERROR(drafter_->add_context(kSlot, begin, end - begin, taps.data()));
  }
  std::vector<float> pending_raw;  // the row the pending token was chosen from
  if (want_raw) pending_raw.assign(logits.begin(), logits.begin() + h.n_vocab);
  int32_t pending = sampler.sample(std::span<float>(logits.data(), h.n_vocab), history);
  r.prompt_ms = ms_since(t0);

  const auto t1 = Clock::now();
  int64_t s = n_prompt;  // committed positions; the pending token sits at s
  bool going = opt.max_tokens > 0;
  const int64_t n_taps = static_cast<int64_t>(drafter_->target_layers().size()) * h.n_embd;
  std::vector<int32_t> drafts, cand, parents, positions, path, from, to;
  std::vector<DFlashDrafter::TopTokens> top;
  std::vector<DepthCandidates> depths;
  std::vector<float> path_taps, raw_rows;
  DraftTree tree;
  while (going && !out.cancelled()) {
    // Never deeper than the context allows: at most n_ctx committed positions.
    const int64_t max_depth = std::min<int64_t>(block - 1, n_ctx_ - s - 1);
    tree = DraftTree{};
    if (tree_budget_ > 0) {
      SAKER_RETURN_IF_ERROR(drafter_->propose_top(kSlot, pending, std::min(tree_budget_, kMaxTopK), &top));
      depths.clear();
      for (int64_t d = 0; d < max_depth; ++d) depths.push_back({top[d].ids, top[d].logprobs});
      tree = build_draft_tree(depths, tree_budget_);
    } else {
      SAKER_RETURN_IF_ERROR(drafter_->propose(kSlot, pending, &drafts));
      for (int64_t d = 0; d < max_depth; ++d) {
        tree.tokens.push_back(drafts[d]);
        tree.depth.push_back(static_cast<int32_t>(d + 1));
        tree.parent.push_back(static_cast<int32_t>(d - 1));
      }
    }
    // Batch: the root (the pending token) then the nodes; batch index = node index + 1.
    const int64_t n = 1 + tree.size();
    cand.assign(1, pending);
    cand.insert(cand.end(), tree.tokens.begin(), tree.tokens.end());
    parents.assign(1, -1);
    positions.assign(1, static_cast<int32_t>(s));
    std::vector<std::vector<int32_t>> children(n);
    for (int64_t j = 0; j < tree.size(); ++j) {
      parents.push_back(tree.parent[j] + 1);
      positions.push_back(static_cast<int32_t>(s + tree.depth[j]));
      children[tree.parent[j] + 1].push_back(static_cast<int32_t>(j + 1));
    }
    SAKER_RETURN_IF_ERROR(forward(cand, s, parents, positions, &logits, &taps));
    // The walk: one sampler call per row on the accepted path, each with the history through that node.
    path.assign(1, 0);
    raw_rows.clear();
    int32_t next = 0;
    for (;;) {
      const int32_t cur = path.back();
      history.push_back(cand[cur]);
      float* row = logits.data() + cur * h.n_vocab;
      if (want_raw) raw_rows.insert(raw_rows.end(), row, row + h.n_vocab);
      next = sampler.sample(std::span<float>(row, h.n_vocab), history);
      const auto& kids = children[cur];
      const auto child = std::find_if(kids.begin(), kids.end(), [&](int32_t c) { return cand[c] == next; });
      if (child == kids.end()) break;
      path.push_back(*child);
    }
    const int64_t n_commit = static_cast<int64_t>(path.size());
    ++stats.verify_steps;
    stats.committed_tokens += n_commit;
    stats.drafted_tokens += tree.size();
    ++stats.tokens_per_step[n_commit - 1];
    // The accepted nodes' K/V rows to consecutive slots s, s+1, ... (a node's slot s+index >= s+depth, and a
    // deeper node's index is larger, so copying in path order never overwrites a row still to be read).
    from.clear();
    to.clear();
    path_taps.resize(n_commit * n_taps);
    for (int64_t k = 0; k < n_commit; ++k) {
      from.push_back(static_cast<int32_t>(s + path[k]));
      to.push_back(static_cast<int32_t>(s + k));
      std::copy_n(taps.data() + path[k] * n_taps, n_taps, path_taps.data() + k * n_taps);
    }
    SAKER_RETURN_IF_ERROR(kv_->copy_slots(block_table_, from, to));
    SAKER_RETURN_IF_ERROR(drafter_->add_context(kSlot, s, n_commit, path_taps.data()));
    // Output: the root was chosen from the previous row (pending_raw), path[k] from the row of path[k - 1].
    for (int64_t k = 0; k < n_commit && going; ++k) {
      std::span<const float> raw;
      if (want_raw) raw = k == 0 ? std::span<const float>(pending_raw)
                                 : std::span<const float>(raw_rows.data() + (k - 1) * h.n_vocab, h.n_vocab);
      going = out.push(cand[path[k]], raw);
    }
    if (want_raw) pending_raw.assign(raw_rows.end() - h.n_vocab, raw_rows.end());
    s += n_commit;
    pending = next;
  }
  out.finish();
  r.generate_ms = ms_since(t1);
  return r;
}

}  // namespace saker::spec
