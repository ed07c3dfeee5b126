#include "engine/generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/clock.h"
#include "engine/sequence_batch.h"
#include "engine/token_output.h"

namespace saker {

namespace {
using Clock = SteadyClock;

// True when the sampler would pick the plain argmax of the model's logits (greedy, nothing that edits them)
// and no logprobs are asked for: the model then hands back ids and no [n_vocab] logits cross to the host.
bool ids_only(const GenerateOptions& opt) {
  const SamplingParams& p = opt.sampling;
  const bool penalties = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  return p.greedy() && p.logit_bias.empty() && !penalties && opt.top_logprobs < 0;
}

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kEos: return "eos";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kShutdown: return "shutdown";
  }
  return "?";
}

Generator::Generator(Model& model, const text::Tokenizer* tokenizer, int64_t n_ctx, std::unique_ptr<KvStorage> kv)
    : model_(model),
      tokenizer_(tokenizer),
      n_ctx_(n_ctx),
      kv_(std::move(kv)),
      allocator_(static_cast<int32_t>(kv_->config().n_blocks)) {}

Result<std::unique_ptr<Generator>> Generator::create(Model& model, const text::Tokenizer* tokenizer, int64_t n_ctx) {
  if (n_ctx <= 0) return make_error(StatusCode::kInvalidArgument, "context size must be positive (got {})", n_ctx);
  const KvCacheConfig c = kv_cache_config_for(model, n_ctx);
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvStorage> kv, model.allocate_kv(c));
  std::unique_ptr<Generator> g(new Generator(model, tokenizer, n_ctx, std::move(kv)));
  // One sequence owns the whole cache: its block table is every block, in allocation order.
  SAKER_RETURN_IF_ERROR(g->allocator_.allocate(static_cast<int32_t>(c.n_blocks), &g->block_table_));
  return g;
}

Status Generator::step(std::span<const int32_t> tokens, int64_t begin, int64_t end, std::span<const int32_t> outputs,
                       float* logits, int32_t* argmax) {
  const int64_t n = end - begin;
  const SequenceBatch sb(block_table_, begin, n, AttentionMask::kCausal);
  ForwardBatch batch;
  batch.tokens = tokens.subspan(begin, n);
  batch.attn = sb.attn;
  batch.output_rows = outputs;
  batch.argmax = argmax;
  SAKER_RETURN_IF_ERROR(batch.attn.validate(kv_->config().n_blocks, kv_->config().block_size));
  return model_.forward(batch, kv_->layers(), logits);
}

Result<int32_t> Generator::extend_argmax(std::span<const int32_t> tokens, int64_t begin, int64_t chunk) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (begin < 0 || begin >= n || chunk <= 0) {
    return make_error(StatusCode::kInvalidArgument, "extend: nothing to run ({} tokens from {})", n, begin);
  }
  if (n > n_ctx_) return make_error(StatusCode::kOutOfRange, "{} tokens exceed the context size {}", n, n_ctx_);
  int32_t next = -1;
  for (int64_t b = begin; b < n; b += chunk) {
    const int64_t e = std::min(n, b + chunk);
    const int32_t last = static_cast<int32_t>(e - b - 1);
    SAKER_RETURN_IF_ERROR(step(tokens, b, e, e == n ? std::span<const int32_t>(&last, 1) : std::span<const int32_t>(),
                               nullptr, &next));
  }
  return next;
}

Result<std::vector<float>> Generator::prompt_logits(std::span<const int32_t> tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n > n_ctx_) {
    return make_error(StatusCode::kOutOfRange, "{} tokens exceed the context size {}", n, n_ctx_);
  }
  const int64_t n_vocab = model_.hparams().n_vocab;
  std::vector<float> logits(n * n_vocab);
  std::vector<int32_t> outputs(n);
  for (int64_t i = 0; i < n; ++i) outputs[i] = static_cast<int32_t>(i);
  SAKER_RETURN_IF_ERROR(step(tokens, 0, n, outputs, logits.data()));
  return logits;
}

Status Generator::prompt_logits(std::span<const int32_t> tokens, int64_t chunk,
                                const std::function<void(int64_t first, std::span<const float> logits)>& on_rows) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n > n_ctx_) return make_error(StatusCode::kOutOfRange, "{} tokens exceed the context size {}", n, n_ctx_);
  if (chunk <= 0) return make_error(StatusCode::kInvalidArgument, "chunk size must be positive");
  const int64_t n_vocab = model_.hparams().n_vocab;
  std::vector<float> logits;
  std::vector<int32_t> outputs;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    outputs.resize(end - begin);
    for (int64_t i = 0; i < end - begin; ++i) outputs[i] = static_cast<int32_t>(i);
    logits.resize((end - begin) * n_vocab);
    SAKER_RETURN_IF_ERROR(step(tokens, begin, end, outputs, logits.data()));
    on_rows(begin, logits);
  }
  return {};
}

Result<GenerateResult> Generator::generate(std::span<const int32_t> prompt, const GenerateOptions& opt,
                                           const std::function<bool(std::string_view)>& on_text) {
  const ModelHParams& h = model_.hparams();
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  SAKER_RETURN_IF_ERROR(check_generate_request(prompt, opt, h.n_vocab, n_ctx_));

  GenerateResult r;
  r.n_prompt = n_prompt;
  std::vector<int32_t> all(prompt.begin(), prompt.end());  // prompt + generated, for penalties
  std::vector<float> logits(h.n_vocab);
  const int32_t last_row = 0;
  // Greedy without processors: the model's argmax is the sampler's pick, so steps bring back one id.
  const bool greedy_ids = ids_only(opt);
  int32_t next_id = -1;
  float* step_logits = greedy_ids ? nullptr : logits.data();
  int32_t* step_argmax = greedy_ids ? &next_id : nullptr;

  auto cancelled = [&] { return opt.cancel && opt.cancel->load(std::memory_order_relaxed); };
  const auto t0 = Clock::now();
  const int64_t chunk = std::max<int32_t>(1, opt.prefill_chunk);
  for (int64_t begin = 0; begin < n_prompt; begin += chunk) {
    const int64_t end = std::min(n_prompt, begin + chunk);
    const int32_t out_row = static_cast<int32_t>(end - begin - 1);
    const bool last = end == n_prompt;
    if (cancelled()) {
      r.finish = FinishReason::kCancelled;
      r.prompt_ms = ms_since(t0);
      return r;
    }
    SAKER_RETURN_IF_ERROR(step(prompt, begin, end, last ? std::span<const int32_t>(&out_row, 1)
                                                        : std::span<const int32_t>(), step_logits, step_argmax));
  }
  r.prompt_ms = ms_since(t0);
  const auto t1 = Clock::now();

  Sampler sampler(opt.sampling);
  TokenOutput out(tokenizer_, opt, n_prompt, n_ctx_, on_text, &r);
  bool keep_going = opt.max_tokens > 0;
  std::vector<float> raw_logits;
  while (keep_going) {
    if (out.cancelled()) break;
    if (opt.top_logprobs >= 0) raw_logits = logits;  // the sampler edits logits in place
    const int32_t id = greedy_ids ? next_id : sampler.sample(logits, all);
    if (!out.push(id, raw_logits)) break;
    all.push_back(id);
    const int64_t pos = static_cast<int64_t>(all.size()) - 1;
    SAKER_RETURN_IF_ERROR(step(all, pos, pos + 1, std::span<const int32_t>(&last_row, 1), step_logits, step_argmax));
  }
  out.finish();
  r.generate_ms = ms_since(t1);
  return r;
}

}  // namespace saker
