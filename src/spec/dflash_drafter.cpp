#include "spec/dflash_drafter.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "engine/sequence_batch.h"
#include "models/registry.h"
#include "sample/logprobs.h"

namespace saker::spec {

Result<std::unique_ptr<DFlashDrafter>> DFlashDrafter::create(std::shared_ptr<const DFlashWeights> weights,
                                                             int64_t n_ctx, const OpsOptions& ops) {
  if (!weights) return make_error(StatusCode::kInvalidArgument, "a drafter needs its weights");
  if (n_ctx <= 0) return make_error(StatusCode::kInvalidArgument, "drafter context must be positive (got {})", n_ctx);
  std::unique_ptr<DFlashDrafter> d(new DFlashDrafter());
  d->w_ = std::move(weights);
  SAKER_ASSIGN_OR_RETURN(d->backend_, create_backend(ops));
  SAKER_RETURN_IF_ERROR(d->bind_weights());
  const DFlashConfig& c = d->w_->config;
  const KvCacheConfig kc = kv_cache_config(c.n_layer, c.n_head_kv, c.head_dim, n_ctx, d->backend_->kv_dtype());
  SAKER_ASSIGN_OR_RETURN(d->kv_, allocate_kv_storage(d->backend_->device(), kc));
  d->block_table_.resize(kc.n_blocks);
  std::iota(d->block_table_.begin(), d->block_table_.end(), 0);
  d->n_ctx_ = kc.n_blocks * kc.block_size;
  return d;
}

Result<std::unique_ptr<DFlashDrafter>> DFlashDrafter::load(const std::string& dir,
                                                           std::shared_ptr<const ModelWeights> target, int64_t n_ctx,
                                                           const OpsOptions& ops) {
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<const DFlashWeights> w, DFlashWeights::load(dir, std::move(target)));
  return create(std::move(w), n_ctx, ops);
}

Status DFlashDrafter::bind_weights() {
  const DFlashConfig& c = w_->config;
  OpBackend& b = *backend_;
  const auto matrix = [&](std::initializer_list<TensorView> parts, const std::string& name) {
    return b.prepare_matrix(std::span<const TensorView>(parts.begin(), parts.size()), name);
  };
  const auto vector = [&](const TensorView& t) { return b.prepare_vector(std::span<const TensorView>(&t, 1)); };
  SAKER_ASSIGN_OR_RETURN(token_embd_, matrix({w_->token_embd}, "token_embd.weight (target)"));
  SAKER_ASSIGN_OR_RETURN(output_, matrix({w_->output}, "output.weight (target)"));
  SAKER_ASSIGN_OR_RETURN(fc_, matrix({w_->fc}, "fc.weight"));
  SAKER_ASSIGN_OR_RETURN(hidden_norm_, vector(w_->hidden_norm));
  SAKER_ASSIGN_OR_RETURN(norm_, vector(w_->norm));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const DFlashWeights::Layer& W = w_->layers[l];
    const std::string p = fmt::format("layers.{}.", l);
    Layer L;
    SAKER_ASSIGN_OR_RETURN(L.input_norm, vector(W.input_norm));
    SAKER_ASSIGN_OR_RETURN(L.post_attn_norm, vector(W.post_attn_norm));
    SAKER_ASSIGN_OR_RETURN(L.q_norm, vector(W.q_norm));
    SAKER_ASSIGN_OR_RETURN(L.k_norm, vector(W.k_norm));
    SAKER_ASSIGN_OR_RETURN(L.qkv, matrix({W.wq, W.wk, W.wv}, p + "self_attn.q|k|v_proj"));
    SAKER_ASSIGN_OR_RETURN(L.kv, matrix({W.wk, W.wv}, p + "self_attn.k|v_proj"));
    SAKER_ASSIGN_OR_RETURN(L.wo, matrix({W.wo}, p + "self_attn.o_proj"));
    SAKER_ASSIGN_OR_RETURN(L.gate_up, matrix({W.w_gate, W.w_up}, p + "mlp.gate|up_proj"));
    SAKER_ASSIGN_OR_RETURN(L.down, matrix({W.w_down}, p + "mlp.down_proj"));
    layers_.push_back(L);
  }
  attn_.n_head = c.n_head;
  attn_.n_head_kv = c.n_head_kv;
  attn_.head_dim = c.head_dim;  // scale 0: 1 / sqrt(head_dim)
  attn_kv_only_ = attn_;
  attn_kv_only_.n_head = 0;
  rope_.theta_base = c.rope_theta;
  const int64_t n_taps = static_cast<int64_t>(c.target_layers.size());
  std::vector<ActivationSpec> buffers(kNumBuffers);
  buffers[kH] = {c.n_embd};                             // [T, n_embd] hidden state (block) / fused context
  buffers[kHn] = {c.n_embd};                            // [T, n_embd] normed input of a matmul
  buffers[kQkv] = {c.q_dim() + 2 * c.kv_dim()};         // [T, q_dim + 2 kv_dim] (context rows: k|v first)
  buffers[kAttn] = {c.q_dim()};                         // [T, n_head * head_dim]
  buffers[kGateUp] = {2 * c.n_ff};                      // [T, 2 n_ff]
  buffers[kAct] = {c.n_ff};                             // [T, n_ff]
  buffers[kTaps] = {n_taps * c.n_embd};                 // [T, n_taps * n_embd] the target's taps
  buffers[kXo] = {c.n_embd, /*per_output=*/true};       // [n_out, n_embd] block rows that reach the head
  return b.reserve(buffers, c.n_vocab, attn_);
}

Status DFlashDrafter::context_body() {
  const DFlashConfig& c = w_->config;
  OpBackend& b = *backend_;
  const int64_t T = b.step_tokens();
  const float eps = static_cast<float>(c.rms_eps);
  const Act taps = b.buffer(kTaps, T), ctx = b.buffer(kH, T), kv = b.buffer(kQkv, T).columns(0, 2 * c.kv_dim());
  SAKER_RETURN_IF_ERROR(b.load_input(taps));
  // ctx = hidden_norm(fc(taps)), then every layer's k|v rows of it into that layer's KV pages.
  SAKER_RETURN_IF_ERROR(b.matmul(*fc_, taps, ctx, false));
  SAKER_RETURN_IF_ERROR(b.rms_norm(ctx, *hidden_norm_, eps, ctx));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers_[l];
    SAKER_RETURN_IF_ERROR(b.matmul(*L.kv, ctx, kv, false));
    SAKER_RETURN_IF_ERROR(
        b.qk_norm_rope_kv_write(kv, attn_kv_only_, nullptr, L.k_norm, eps, rope_, static_cast<int>(l)));
  }
  return {};
}

Status DFlashDrafter::block_body() {
  const DFlashConfig& c = w_->config;
  OpBackend& b = *backend_;
  const int64_t T = b.step_tokens();
  const float eps = static_cast<float>(c.rms_eps);
  const Act h = b.buffer(kH, T), hn = b.buffer(kHn, T), qkv = b.buffer(kQkv, T), attn = b.buffer(kAttn, T);
  const Act gu = b.buffer(kGateUp, T), act = b.buffer(kAct, T);
  SAKER_RETURN_IF_ERROR(b.embedding(*token_embd_, 1.0f, h));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = layers_[l];
    const int li = static_cast<int>(l);
    // h += o_proj(attention(q, [context K/V, the block's own K/V])), all from norm(h); the block's K/V land in
    // its slots first, so every row sees the whole block.
    SAKER_RETURN_IF_ERROR(b.norm_matmul(h, *L.input_norm, eps, hn, *L.qkv, qkv, false));
    SAKER_RETURN_IF_ERROR(b.qk_norm_rope_kv_write(qkv, attn_, L.q_norm, L.k_norm, eps, rope_, li));
    SAKER_RETURN_IF_ERROR(b.attention(qkv.columns(0, c.q_dim()), li, attn_, attn));
    SAKER_RETURN_IF_ERROR(b.matmul(*L.wo, attn, h, /*accumulate=*/true));
    // h += down(silu(gate) * up), from post_attn_norm(h).
    SAKER_RETURN_IF_ERROR(b.norm_matmul(h, *L.post_attn_norm, eps, hn, *L.gate_up, gu, false));
    SAKER_RETURN_IF_ERROR(b.swiglu(gu.columns(0, c.n_ff), gu.columns(c.n_ff, c.n_ff), act));
    SAKER_RETURN_IF_ERROR(b.matmul(*L.down, act, h, /*accumulate=*/true));
  }
  return {};
}

// Rows 1..B-1 through the final norm and the target's head.
Status DFlashDrafter::block_head(int64_t first, int64_t n) {
  OpBackend& b = *backend_;
  const Act xo = b.buffer(kXo, n);
  SAKER_RETURN_IF_ERROR(b.gather_outputs(b.buffer(kH, b.step_tokens()), first, xo));
  const Act logits = b.logits(first, n);
  SAKER_RETURN_IF_ERROR(b.norm_matmul(xo, *norm_, static_cast<float>(w_->config.rms_eps), xo, *output_, logits, false));
  return b.emit_outputs(logits, first);
}

Status DFlashDrafter::add_context(int64_t first, int64_t n, const float* taps) {
  const DFlashConfig& c = w_->config;
  if (first < 0 || first > n_context_) {
    return make_error(StatusCode::kInvalidArgument, "drafter context: positions from {} given, {} held", first,
                      n_context_);
  }
  if (n <= 0) return {};
  if (first + n > n_ctx_) {
    return make_error(StatusCode::kOutOfRange, "drafter context: position {} beyond its {} slots", first + n - 1, n_ctx_);
  }
  const std::vector<int32_t> tokens(static_cast<size_t>(n), 0);  // read by no op: the input rows stand for them
  const SequenceBatch batch(block_table_, first, n, AttentionMask::kCausal);
  StepRequest r;
  r.tokens = tokens;
  r.attn = &batch.attn;
  r.kv = kv_->layers();
  r.n_vocab = c.n_vocab;
  r.input = taps;  // [n, n_taps, n_embd] is [n, n_taps * n_embd]: the taps concatenated per position
  r.input_stride = static_cast<int64_t>(c.target_layers.size()) * c.n_embd;
  StepProgram program;
  program.body = [&] { return context_body(); };
  program.head = [](int64_t, int64_t) { return Status{}; };
  SAKER_RETURN_IF_ERROR(backend_->run_step(r, program));
  n_context_ = first + n;
  return {};
}

Status DFlashDrafter::run_block(int32_t pending, std::vector<float>* logits, std::vector<int32_t>* ids) {
  const DFlashConfig& c = w_->config;
  const int64_t B = c.block_size, s = n_context_;
  if (s + B > n_ctx_) {
    return make_error(StatusCode::kOutOfRange, "drafter: a block at position {} does not fit its {} slots", s, n_ctx_);
  }
  std::vector<int32_t> block(static_cast<size_t>(B), c.mask_token);
  block[0] = pending;
  std::vector<int32_t> rows(static_cast<size_t>(B - 1));
  std::iota(rows.begin(), rows.end(), 1);
  const SequenceBatch batch(block_table_, s, B, AttentionMask::kFull);  // every context slot and the whole block
  if (logits) logits->resize(static_cast<size_t>((B - 1) * c.n_vocab));  // [B - 1, n_vocab]
  if (ids) ids->resize(static_cast<size_t>(B - 1));
  StepRequest r;
  r.tokens = block;
  r.attn = &batch.attn;
  r.output_rows = rows;
  r.kv = kv_->layers();
  r.n_vocab = c.n_vocab;
  r.logits = logits ? logits->data() : nullptr;
  r.argmax = ids ? ids->data() : nullptr;
  StepProgram program;
  program.body = [&] { return block_body(); };
  program.head = [&](int64_t first, int64_t n) { return block_head(first, n); };
  return backend_->run_step(r, program);
}

Status DFlashDrafter::propose(int32_t pending, std::vector<int32_t>* drafts) {
  return run_block(pending, nullptr, drafts);  // argmax ids, ties: the lowest id
}

Status DFlashDrafter::propose_top(int32_t pending, int32_t k, std::vector<TopTokens>* out) {
  if (k <= 0) return make_error(StatusCode::kInvalidArgument, "drafter: top-{} asked for", k);
  std::vector<float> logits;
  SAKER_RETURN_IF_ERROR(run_block(pending, &logits, nullptr));
  const int64_t V = w_->config.n_vocab, rows = w_->config.block_size - 1;
  out->resize(rows);
  for (int64_t i = 0; i < rows; ++i) {
    const std::span<const float> r(logits.data() + i * V, V);
    const float log_z = log_sum_exp(r);
    TopTokens& t = (*out)[i];
    t.ids = top_ids(r, k);
    t.logprobs.clear();
    for (int32_t id : t.ids) t.logprobs.push_back(r[id] - log_z);
  }
  return {};
}

}  // namespace saker::spec
