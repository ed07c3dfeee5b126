#include "spec/speculative_generator.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "sample/sampler.h"

namespace saker::spec {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

SpeculativeGenerator::SpeculativeGenerator(Model& target, DFlashDrafter& drafter, int64_t n_ctx, KvCache kv)
    : target_(target), drafter_(drafter), n_ctx_(n_ctx), kv_(std::move(kv)) {}

Result<std::unique_ptr<SpeculativeGenerator>> SpeculativeGenerator::create(Model& target, DFlashDrafter& drafter,
                                                                           int64_t n_ctx) {
  if (n_ctx <= 0) return make_error(StatusCode::kInvalidArgument, "context size must be positive (got {})", n_ctx);
  if (target.device() != Device::kCpu) {
    return make_error(StatusCode::kUnsupported,
                      "speculative decoding runs on the CPU backend only for now (the target's hidden states are "
                      "tapped there): use --device cpu");
  }
  SAKER_RETURN_IF_ERROR(drafter.config().check_target(target.hparams()));
  const int64_t block = drafter.config().block_size;
  if (drafter.n_ctx() < n_ctx + block) {
    return make_error(StatusCode::kInvalidArgument, "the drafter holds {} positions; {} + a block of {} are needed",
                      drafter.n_ctx(), n_ctx, block);
  }
  // The verify step writes a whole block past the committed length, so the cache holds n_ctx + block slots.
  const KvCacheConfig c = kv_cache_config_for(target, n_ctx + block, DType::kF32);
  SAKER_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(c));
  std::unique_ptr<SpeculativeGenerator> g(new SpeculativeGenerator(target, drafter, n_ctx, std::move(kv)));
  g->block_table_.resize(c.n_blocks);
  std::iota(g->block_table_.begin(), g->block_table_.end(), 0);
  return g;
}

Status SpeculativeGenerator::forward(std::span<const int32_t> tokens, int64_t first, std::vector<float>* logits,
                                     std::vector<float>* taps, bool all_logits) {
  const ModelHParams& h = target_.hparams();
  const int64_t n = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> seq(n, 0), slot(n), outputs(all_logits ? n : 1);
  std::iota(slot.begin(), slot.end(), static_cast<int32_t>(first));
  if (all_logits) {
    std::iota(outputs.begin(), outputs.end(), 0);
  } else {
    outputs[0] = static_cast<int32_t>(n - 1);
  }
  AttentionSequence s;
  s.block_table = block_table_;
  s.n_ctx = static_cast<int32_t>(first + n);
  s.mask = AttentionMask::kCausal;
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.attn.sequences = std::span<const AttentionSequence>(&s, 1);
  batch.attn.token_seq = seq;
  batch.attn.token_slot = slot;
  batch.attn.token_pos = slot;  // a chain: position == slot
  batch.output_rows = outputs;
  const std::span<const int32_t> layers = drafter_.target_layers();
  taps->resize(n * static_cast<int64_t>(layers.size()) * h.n_embd);
  batch.taps.layers = layers;
  batch.taps.out = taps->data();
  logits->resize(outputs.size() * h.n_vocab);
  SAKER_RETURN_IF_ERROR(batch.attn.validate(kv_.config().n_blocks, kv_.config().block_size));
  return target_.forward(batch, kv_.layers(), logits->data());
}

Result<SpeculativeResult> SpeculativeGenerator::generate(std::span<const int32_t> prompt,
                                                         const SpeculativeOptions& opt) {
  const ModelHParams& h = target_.hparams();
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt == 0) return make_error(StatusCode::kInvalidArgument, "the prompt is empty");
  if (n_prompt >= n_ctx_) {
    return make_error(StatusCode::kOutOfRange,
                      "the prompt has {} tokens but the context holds {} (prompt + at least one new token)", n_prompt,
                      n_ctx_);
  }
  for (int64_t i = 0; i < n_prompt; ++i) {
    if (prompt[i] < 0 || prompt[i] >= h.n_vocab) {
      return make_error(StatusCode::kInvalidArgument, "prompt token {} at index {} is outside the vocabulary (0..{})",
                        prompt[i], i, h.n_vocab - 1);
    }
  }
  if (opt.max_tokens < 0) return make_error(StatusCode::kInvalidArgument, "max tokens must be >= 0");
  SAKER_RETURN_IF_ERROR(opt.sampling.validate());
  Sampler sampler(opt.sampling);
  // Prompt + every token decided so far: the penalties' history, exactly as plain decoding keeps it.
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  const int64_t block = drafter_.config().block_size;
  SpeculativeResult r;
  r.stats.tokens_per_step.assign(block, 0);
  drafter_.reset();

  // Prefill: the prompt's K/V and its hidden states, fused into the drafter's context as each chunk finishes.
  const auto t0 = Clock::now();
  std::vector<float> logits, taps;
  const int64_t chunk = std::max<int32_t>(1, opt.prefill_chunk);
  for (int64_t begin = 0; begin < n_prompt; begin += chunk) {
    const int64_t end = std::min(n_prompt, begin + chunk);
    SAKER_RETURN_IF_ERROR(forward(prompt.subspan(begin, end - begin), begin, &logits, &taps, false));
    SAKER_RETURN_IF_ERROR(drafter_.add_context(begin, end - begin, taps.data()));
  }
  int32_t pending = sampler.sample(std::span<float>(logits.data(), h.n_vocab), history);
  r.prompt_ms = ms_since(t0);

  const auto t1 = Clock::now();
  int64_t s = n_prompt;  // committed positions; the pending token sits at s
  std::vector<int32_t> drafts, cand;
  auto emit = [&](int32_t id) {  // false: generation ends here
    if (opt.is_end && opt.is_end(id)) {
      r.finish = FinishReason::kEos;
      return false;
    }
    r.tokens.push_back(id);
    if (opt.on_token && !opt.on_token(id)) {
      r.finish = FinishReason::kCancelled;
      return false;
    }
    if (static_cast<int32_t>(r.tokens.size()) >= opt.max_tokens ||
        n_prompt + static_cast<int64_t>(r.tokens.size()) >= n_ctx_) {
      r.finish = FinishReason::kLength;
      return false;
    }
    return true;
  };
  bool going = opt.max_tokens > 0;
  while (going) {
    // The block shrinks near the end of the context: never past n_ctx committed positions.
    const int64_t width = std::min<int64_t>(block, n_ctx_ - s);
    SAKER_RETURN_IF_ERROR(drafter_.propose(pending, &drafts));
    cand.assign(1, pending);
    cand.insert(cand.end(), drafts.begin(), drafts.begin() + (width - 1));
    SAKER_RETURN_IF_ERROR(forward(cand, s, &logits, &taps, true));
    // Row i decides the token after cand[i]: one sampler call per row, in order, each with the history
    // through cand[i]; drafts are accepted while they equal that token.
    int64_t n_acc = 0;
    int32_t next = 0;
    for (int64_t i = 0;; ++i) {
      history.push_back(cand[i]);
      next = sampler.sample(std::span<float>(logits.data() + i * h.n_vocab, h.n_vocab), history);
      if (i + 1 < width && next == cand[i + 1]) {
        ++n_acc;
        continue;
      }
      break;
    }
    const int64_t n_commit = n_acc + 1;
    ++r.stats.verify_steps;
    r.stats.committed_tokens += n_commit;
    ++r.stats.tokens_per_step[n_commit - 1];
    SAKER_RETURN_IF_ERROR(drafter_.add_context(s, n_commit, taps.data()));
    for (int64_t i = 0; i < n_commit && going; ++i) going = emit(cand[i]);
    s += n_commit;
    pending = next;
  }
  r.generate_ms = ms_since(t1);
  return r;
}

}  // namespace saker::spec
