#include "spec/dflash_drafter.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "engine/sequence_batch.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/matmul.h"
#include "ops/ref/add.h"
#include "ops/ref/attention.h"
#include "ops/ref/embedding.h"
#include "ops/ref/kv_write.h"
#include "ops/ref/matmul.h"
#include "ops/ref/rms_norm.h"
#include "ops/ref/rope.h"
#include "ops/ref/swiglu.h"
#include "sample/logprobs.h"

namespace saker::spec {
namespace {

TensorView f32(float* p, std::initializer_list<int64_t> shape) { return TensorView::contiguous(p, DType::kF32, shape); }

}  // namespace

Result<std::unique_ptr<DFlashDrafter>> DFlashDrafter::create(std::shared_ptr<const DFlashWeights> weights,
                                                             int64_t n_ctx, const OpsOptions& ops) {
  if (!weights) return make_error(StatusCode::kInvalidArgument, "a drafter needs its weights");
  if (n_ctx <= 0) return make_error(StatusCode::kInvalidArgument, "drafter context must be positive (got {})", n_ctx);
  std::unique_ptr<DFlashDrafter> d(new DFlashDrafter());
  d->w_ = std::move(weights);
  d->ops_ = ops;
  const DFlashConfig& c = d->w_->config;
  const KvCacheConfig kc = kv_cache_config(c.n_layer, c.n_head_kv, c.head_dim, n_ctx, DType::kF32);
  SAKER_ASSIGN_OR_RETURN(d->kv_, KvCache::create(kc));
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

Status DFlashDrafter::matmul(const TensorView& x, const TensorView& w, const TensorView& out) const {
  if (ops_.fast_matmul) return cpu::matmul(x, w, out, ops_.matmul);
  return ref::matmul(x, w, out);
}

Status DFlashDrafter::write_kv(int64_t l, const TensorView& x, int64_t first, std::vector<float>* k,
                               std::vector<float>* v) {
  const DFlashConfig& c = w_->config;
  const Layer& L = w_->layers[l];
  const int64_t n = x.shape[0];
  k->resize(n * c.kv_dim());
  v->resize(n * c.kv_dim());
  SAKER_RETURN_IF_ERROR(matmul(x, L.wk, f32(k->data(), {n, c.kv_dim()})));
  SAKER_RETURN_IF_ERROR(matmul(x, L.wv, f32(v->data(), {n, c.kv_dim()})));
  const TensorView kh = f32(k->data(), {n * c.n_head_kv, c.head_dim});
  SAKER_RETURN_IF_ERROR(ref::rms_norm(kh, L.k_norm, kh, static_cast<float>(c.rms_eps)));
  const SequenceBatch b(block_table_, first, n, AttentionMask::kCausal);
  ref::RopeParams rope;
  rope.theta_base = c.rope_theta;
  const TensorView k3 = f32(k->data(), {n, c.n_head_kv, c.head_dim});
  SAKER_RETURN_IF_ERROR(ref::rope(k3, b.attn.token_pos, rope));
  const LayerKv& cache = kv_->layers()[l];
  return ref::kv_write(k3, f32(v->data(), {n, c.n_head_kv, c.head_dim}), cache.k, cache.v, b.attn);
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
  const int64_t H = c.n_embd, n_taps = static_cast<int64_t>(c.target_layers.size());
  std::vector<float> ctx(n * H), k, v;  // ctx [n, n_embd]
  const TensorView cv = f32(ctx.data(), {n, H});
  // [n, n_taps, n_embd] is [n, n_taps * n_embd]: the taps concatenated per position
  SAKER_RETURN_IF_ERROR(matmul(f32(const_cast<float*>(taps), {n, n_taps * H}), w_->fc, cv));
  SAKER_RETURN_IF_ERROR(ref::rms_norm(cv, w_->hidden_norm, cv, static_cast<float>(c.rms_eps)));
  for (int64_t l = 0; l < c.n_layer; ++l) SAKER_RETURN_IF_ERROR(write_kv(l, cv, first, &k, &v));
  n_context_ = first + n;
  return {};
}

Status DFlashDrafter::block_logits(int32_t pending, std::vector<float>* logits_out) {
  const DFlashConfig& c = w_->config;
  const int64_t B = c.block_size, H = c.n_embd, s = n_context_;
  if (s + B > n_ctx_) {
    return make_error(StatusCode::kOutOfRange, "drafter: a block at position {} does not fit its {} slots", s, n_ctx_);
  }
  std::vector<int32_t> block(B, c.mask_token);
  block[0] = pending;
  std::vector<float> h(B * H), hn(B * H), q(B * c.q_dim()), attn(B * c.q_dim());  // [B, ...]
  std::vector<float> gate(B * c.n_ff), up(B * c.n_ff), k, v;
  const TensorView hv = f32(h.data(), {B, H}), hnv = f32(hn.data(), {B, H});
  SAKER_RETURN_IF_ERROR(ref::embedding(w_->token_embd, block, hv));
  const SequenceBatch b(block_table_, s, B, AttentionMask::kFull);  // every context slot and the whole block
  ref::RopeParams rope;
  rope.theta_base = c.rope_theta;
  ref::AttentionParams ap;  // scale 1 / sqrt(head_dim)
  const float eps = static_cast<float>(c.rms_eps);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Layer& L = w_->layers[l];
    SAKER_RETURN_IF_ERROR(ref::rms_norm(hv, L.input_norm, hnv, eps));
    SAKER_RETURN_IF_ERROR(write_kv(l, hnv, s, &k, &v));  // the block's own K/V: slots s..s+B-1
    SAKER_RETURN_IF_ERROR(matmul(hnv, L.wq, f32(q.data(), {B, c.q_dim()})));
    const TensorView qh = f32(q.data(), {B * c.n_head, c.head_dim});
    SAKER_RETURN_IF_ERROR(ref::rms_norm(qh, L.q_norm, qh, eps));
    const TensorView q3 = f32(q.data(), {B, c.n_head, c.head_dim});
    SAKER_RETURN_IF_ERROR(ref::rope(q3, b.attn.token_pos, rope));
    const LayerKv& cache = kv_->layers()[l];
    const TensorView a3 = f32(attn.data(), {B, c.n_head, c.head_dim});
    SAKER_RETURN_IF_ERROR(ops_.fast_attention ? cpu::attention(q3, cache.k, cache.v, b.attn, ap, a3)
                                              : ref::attention(q3, cache.k, cache.v, b.attn, ap, a3));
    SAKER_RETURN_IF_ERROR(matmul(f32(attn.data(), {B, c.q_dim()}), L.wo, hnv));
    ref::add_f32(h.data(), hn.data(), h.data(), B * H);
    SAKER_RETURN_IF_ERROR(ref::rms_norm(hv, L.post_attn_norm, hnv, eps));
    const TensorView gv = f32(gate.data(), {B, c.n_ff}), uv = f32(up.data(), {B, c.n_ff});
    SAKER_RETURN_IF_ERROR(matmul(hnv, L.w_gate, gv));
    SAKER_RETURN_IF_ERROR(matmul(hnv, L.w_up, uv));
    SAKER_RETURN_IF_ERROR(ref::swiglu(gv, uv, gv));
    SAKER_RETURN_IF_ERROR(matmul(gv, L.w_down, hnv));
    ref::add_f32(h.data(), hn.data(), h.data(), B * H);
  }
  // Rows 1..B-1 through the final norm and the target's head.
  const TensorView rows = f32(h.data() + H, {B - 1, H});
  SAKER_RETURN_IF_ERROR(ref::rms_norm(rows, w_->norm, rows, eps));
  logits_out->resize((B - 1) * c.n_vocab);  // [B - 1, n_vocab]
  return matmul(rows, w_->output, f32(logits_out->data(), {B - 1, c.n_vocab}));
}

Status DFlashDrafter::propose(int32_t pending, std::vector<int32_t>* drafts) {
  std::vector<float> logits;
  SAKER_RETURN_IF_ERROR(block_logits(pending, &logits));
  const int64_t V = w_->config.n_vocab, rows = w_->config.block_size - 1;
  drafts->resize(rows);
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = logits.data() + i * V;
    (*drafts)[i] = static_cast<int32_t>(std::max_element(r, r + V) - r);  // ties: lowest id
  }
  return {};
}

Status DFlashDrafter::propose_top(int32_t pending, int32_t k, std::vector<TopTokens>* out) {
  if (k <= 0) return make_error(StatusCode::kInvalidArgument, "drafter: top-{} asked for", k);
  std::vector<float> logits;
  SAKER_RETURN_IF_ERROR(block_logits(pending, &logits));
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
