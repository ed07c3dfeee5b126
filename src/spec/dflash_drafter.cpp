#include "spec/dflash_drafter.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/clock.h"
#include "engine/sequence_batch.h"
#include "models/registry.h"

namespace saker::spec {

Result<std::unique_ptr<DFlashDrafter>> DFlashDrafter::create(std::shared_ptr<const DFlashWeights> weights,
                                                             int64_t n_ctx, const OpsOptions& ops, int32_t n_slots) {
  if (!weights) return make_error(StatusCode::kInvalidArgument, "a drafter needs its weights");
  if (n_ctx <= 0) return make_error(StatusCode::kInvalidArgument, "drafter context must be positive (got {})", n_ctx);
  if (n_slots <= 0) return make_error(StatusCode::kInvalidArgument, "a drafter needs at least one slot (got {})", n_slots);
  std::unique_ptr<DFlashDrafter> d(new DFlashDrafter());
  d->w_ = std::move(weights);
  SAKER_ASSIGN_OR_RETURN(d->backend_, create_backend(ops));
  SAKER_RETURN_IF_ERROR(d->bind_weights());
  const DFlashConfig& c = d->w_->config;
  const KvCacheConfig one = kv_cache_config(c.n_layer, c.n_head_kv, c.head_dim, n_ctx, d->backend_->kv_dtype());
  KvCacheConfig all = one;
  // Every slot's whole context, and a spare page each: a slot replacing context inside a shared page copies it
  // into one, so a pool of full slots never runs out.
  all.n_blocks = (one.n_blocks + 1) * n_slots;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvStorage> storage, allocate_kv_storage(d->backend_->device(), all));
  d->pool_ = std::make_unique<KvPool>(std::move(storage), KvPoolOptions{});
  d->n_ctx_ = one.n_blocks * one.block_size;
  // What one forward may carry: the CUDA backend splits a longer causal batch but not a full-mask one.
  d->max_rows_ = std::max<int64_t>({64, ops.max_batch_tokens, c.block_size});
  d->slots_.resize(static_cast<size_t>(n_slots));
  return d;
}

Result<std::unique_ptr<DFlashDrafter>> DFlashDrafter::load(const std::string& dir,
                                                           std::shared_ptr<const ModelWeights> target, int64_t n_ctx,
                                                           const OpsOptions& ops, int32_t n_slots) {
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<const DFlashWeights> w, DFlashWeights::load(dir, std::move(target)));
  return create(std::move(w), n_ctx, ops, n_slots);
}

Result<int32_t> DFlashDrafter::acquire() {
  std::lock_guard lock(slots_mutex_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].held) continue;
    slots_[i].held = true;
    return static_cast<int32_t>(i);
  }
  return make_error(StatusCode::kOutOfRange, "drafter: all {} slots are held by running sequences",
                    slots_.size());
}

void DFlashDrafter::release(int32_t slot) {
  if (slot < 0 || slot >= n_slots()) return;
  Slot& s = slots_[slot];
  // Context still queued when the sequence ends (a prompt pass, steps that drafted nothing) is fused now, so the
  // prefix its tokens name is kept for later sequences; only where tokens were committed (prefix caching on).
  if (!s.queued.empty() && static_cast<int64_t>(s.tokens.size()) >= n_context(slot) && fuse_context().ok()) {
    pool_->commit(s.block_table, s.tokens, s.fused);
  }
  reset(slot);
  std::lock_guard lock(slots_mutex_);
  slots_[slot].held = false;
}

Status DFlashDrafter::check_slot(int32_t slot) const {
  if (slot >= 0 && slot < n_slots()) return {};
  return make_error(StatusCode::kInvalidArgument, "drafter: slot {} of {}", slot, n_slots());
}

int64_t DFlashDrafter::n_context(int32_t slot) const {
  const Slot& s = slots_[slot];
  return s.fused + static_cast<int64_t>(s.queued.size());
}

void DFlashDrafter::reset(int32_t slot) {
  Slot& s = slots_[slot];
  pool_->release(&s.block_table);
  s.tokens.clear();
  s.fused = 0;
  s.queued.clear();
  s.pending = -1;
}

Result<int64_t> DFlashDrafter::match_prefix(int32_t slot, std::span<const int32_t> tokens, int64_t max_tokens) {
  SAKER_RETURN_IF_ERROR(check_slot(slot));
  Slot& s = slots_[slot];
  if (n_context(slot) != 0 || !s.block_table.empty()) {
    return make_error(StatusCode::kInvalidArgument, "drafter: slot {} already holds {} positions of context", slot,
                      n_context(slot));
  }
  max_tokens = std::min({max_tokens, static_cast<int64_t>(tokens.size()), n_ctx_});
  s.fused = pool_->match_prefix(tokens, max_tokens, &s.block_table);
  stats_.cached_positions += s.fused;
  return s.fused;
}

void DFlashDrafter::commit(int32_t slot, std::span<const int32_t> tokens) {
  if (!check_slot(slot).ok()) return;
  Slot& s = slots_[slot];
  // The tokens of the slot's context, for keying what is fused later (release()). Its positions hold the
  // sequence's tokens, which never change, so only the new ones are copied (every step: not the whole history).
  const int64_t known = std::min(n_context(slot), static_cast<int64_t>(tokens.size()));
  if (known < static_cast<int64_t>(s.tokens.size())) {
    s.tokens.resize(static_cast<size_t>(known));  // context replaced from an earlier position
  } else {
    s.tokens.insert(s.tokens.end(), tokens.begin() + static_cast<int64_t>(s.tokens.size()), tokens.begin() + known);
  }
  pool_->commit(s.block_table, tokens, std::min(s.fused, static_cast<int64_t>(tokens.size())));
}

// Pages for the slot's first `positions` positions; positions before `keep` stay, later ones will be written.
// A page some other sequence may read (a cached prefix page) is never written: the slot first trades the pages
// from the one holding `keep` on for a copy of that page's first part.
Status DFlashDrafter::make_room(Slot& s, int64_t keep, int64_t positions) {
  const int64_t pt = pool_->page_tokens();
  const int64_t first_page = keep / pt;
  bool shared = false;
  for (size_t i = static_cast<size_t>(first_page); i < s.block_table.size(); ++i) {
    shared |= pool_->ref_count(s.block_table[i]) > 1 || pool_->is_keyed(s.block_table[i]);
  }
  if (shared) {
    std::vector<int32_t> own;
    SAKER_RETURN_IF_ERROR(pool_->fork(s.block_table, keep, &own));
    pool_->release(&s.block_table);
    s.block_table = std::move(own);
  }
  Status st = pool_->reserve(&s.block_table, positions);
  if (!st.ok()) return make_error(StatusCode::kOutOfRange, "drafter: no KV pages left for {} positions", positions);
  return {};
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
        b.qk_norm_rope_kv_write(kv, nullptr, attn_kv_only_, nullptr, L.k_norm, eps, rope_, static_cast<int>(l)));
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
    SAKER_RETURN_IF_ERROR(b.qk_norm_rope_kv_write(qkv, nullptr, attn_, L.q_norm, L.k_norm, eps, rope_, li));
    SAKER_RETURN_IF_ERROR(b.attention_matmul(qkv.columns(0, c.q_dim()), li, attn_, attn, *L.wo, h,
                                             /*accumulate=*/true));
    // h += down(silu(gate) * up), from post_attn_norm(h).
    SAKER_RETURN_IF_ERROR(b.norm_matmul(h, *L.post_attn_norm, eps, hn, *L.gate_up, gu, false));
    SAKER_RETURN_IF_ERROR(b.gated_matmul(GatedAct::kSilu, gu.columns(0, c.n_ff), gu.columns(c.n_ff, c.n_ff), act,
                                         *L.down, h, /*accumulate=*/true));
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

Status DFlashDrafter::add_context(int32_t slot, int64_t first, int64_t n, const float* taps) {
  return add_context(slot, first, FloatRows{.data = taps, .stride = tap_width(), .n = n});
}

Status DFlashDrafter::add_context(int32_t slot, int64_t first, const FloatRows& taps) {
  SAKER_RETURN_IF_ERROR(check_slot(slot));
  const int64_t n = taps.n;
  Slot& s = slots_[slot];
  const int64_t held = n_context(slot);
  if (first < 0 || first > held) {
    return make_error(StatusCode::kInvalidArgument, "drafter context: positions from {} given, {} held", first, held);
  }
  if (n <= 0) return {};
  if (first + n > n_ctx_) {
    return make_error(StatusCode::kOutOfRange, "drafter context: position {} beyond its {} slots", first + n - 1, n_ctx_);
  }
  if (taps.data == nullptr || taps.stride < tap_width()) {
    return make_error(StatusCode::kInvalidArgument, "drafter context: tap rows of {} floats given, {} read",
                      taps.stride, tap_width());
  }
  // The rows wait in the backend's kept rows (on the GPU for a CUDA drafter, copied there from the target's
  // device taps) until the next forward reads them; replaced ones stay there unread until it clears them all.
  // Kept first: a failure leaves the slot as it was.
  SAKER_ASSIGN_OR_RETURN(const int64_t at, backend_->keep_rows(taps, tap_width()));
  if (first < s.fused) {  // fused positions replaced: their pages are rewritten from the queue
    s.fused = first;
    s.queued.clear();
  } else {
    s.queued.resize(static_cast<size_t>(first - s.fused));
  }
  for (int64_t i = 0; i < n; ++i) s.queued.push_back(static_cast<int32_t>(at + i));
  // Steps that draft nothing (prefill, a cost policy standing drafts down) run no forward of the drafter: fuse
  // here once the kept rows hold a forward's worth, so the memory they take stays bounded.
  if (backend_->n_kept_rows() >= max_rows_) return fuse_context();
  return {};
}

Status DFlashDrafter::request(int32_t slot, int32_t pending, int32_t top_k) {
  SAKER_RETURN_IF_ERROR(check_slot(slot));
  const DFlashConfig& c = w_->config;
  const int64_t at = n_context(slot);
  if (at + c.block_size > n_ctx_) {
    return make_error(StatusCode::kOutOfRange, "drafter: a block at position {} does not fit its {} slots", at, n_ctx_);
  }
  if (pending < 0 || pending >= c.n_vocab) {
    return make_error(StatusCode::kInvalidArgument, "drafter: pending token {} outside the vocabulary", pending);
  }
  if (top_k < 0 || top_k > kMaxTopK || top_k > c.n_vocab) {
    return make_error(StatusCode::kInvalidArgument, "drafter: top-{} asked for (at most {})", top_k, kMaxTopK);
  }
  Slot& s = slots_[slot];
  s.pending = pending;
  s.top_k = top_k;
  s.ids.clear();  // a forward that fails leaves no stale drafts
  s.top.clear();
  return {};
}

Status DFlashDrafter::run() {
  ++stats_.runs;
  Status st = fuse_context();
  const auto t0 = SteadyClock::now();
  if (st.ok()) st = run_blocks();
  stats_.block_ms += ms_since(t0);
  // A request a failed forward did not serve is dropped, not drafted later at another position.
  for (Slot& s : slots_) s.pending = -1;
  return st;
}

// Every slot's queued rows, back to back, in one forward (no attention: the rows only write K/V).
Status DFlashDrafter::fuse_context() {
  const auto t0 = SteadyClock::now();
  batch_.clear();
  seq_slot_.clear();
  input_rows_.clear();
  for (int32_t i = 0; i < n_slots(); ++i) {
    const Slot& s = slots_[i];
    const int64_t q = static_cast<int64_t>(s.queued.size());
    if (q == 0) continue;
    SAKER_RETURN_IF_ERROR(make_room(slots_[i], s.fused, s.fused + q));
    batch_.add(s.block_table, s.fused, q, AttentionMask::kCausal);
    seq_slot_.push_back(i);
    input_rows_.insert(input_rows_.end(), s.queued.begin(), s.queued.end());
  }
  if (batch_.n_tokens() == 0) {
    backend_->clear_kept_rows();  // only replaced rows, if any
    return {};
  }
  tokens_.assign(static_cast<size_t>(batch_.n_tokens()), 0);  // read by no op: the input rows stand for them
  const AttentionBatch attn = batch_.attn();
  StepRequest r;
  r.tokens = tokens_;
  r.attn = &attn;
  r.kv = pool_->layers();
  r.n_vocab = w_->config.n_vocab;
  r.input_rows = input_rows_;  // kept rows of [n_taps, n_embd] = [n_taps * n_embd]: the taps concatenated
  r.one_off = true;  // the rows follow each step's acceptance: capturing every count would cost more than it saves
  StepProgram program;
  program.body = [&] { return context_body(); };
  program.head = [](int64_t, int64_t) { return Status{}; };
  SAKER_RETURN_IF_ERROR(backend_->run_step(r, program));
  ++stats_.context_forwards;
  stats_.context_rows += batch_.n_tokens();
  for (int32_t i : seq_slot_) {
    Slot& s = slots_[i];
    s.fused += static_cast<int64_t>(s.queued.size());
    s.queued.clear();
  }
  backend_->clear_kept_rows();  // every queue was fused: what is left was replaced
  stats_.context_ms += ms_since(t0);
  return {};
}

// Every requested block (B rows at the slot's next positions, kFull) in as few forwards as the backend's batch
// size allows (a full mask cannot be split, so whole blocks); rows 1..B-1 of each reach the head.
Status DFlashDrafter::run_blocks() {
  const int64_t B = w_->config.block_size;
  std::vector<int32_t> group;
  for (int32_t i = 0; i < n_slots(); ++i) {
    Slot& s = slots_[i];
    if (s.pending < 0) continue;
    // Context added since the request may leave no room for the block; no pages left drafts nothing either.
    if (s.fused + B > n_ctx_ || !make_room(s, s.fused, s.fused + B).ok()) {
      s.pending = -1;
      continue;
    }
    if (static_cast<int64_t>(group.size() + 1) * B > max_rows_) {
      SAKER_RETURN_IF_ERROR(run_block_group(group));
      group.clear();
    }
    group.push_back(i);
  }
  return group.empty() ? Status{} : run_block_group(group);
}

Status DFlashDrafter::run_block_group(std::span<const int32_t> group) {
  const DFlashConfig& c = w_->config;
  const int64_t B = c.block_size, V = c.n_vocab;
  batch_.clear();
  tokens_.clear();
  output_rows_.clear();
  bool any_top = false;
  for (int32_t i : group) {
    Slot& s = slots_[i];
    // Every context slot and the whole block.
    const int64_t at = batch_.add(s.block_table, s.fused, B, AttentionMask::kFull);
    for (int64_t k = 0; k < B; ++k) {
      if (k > 0) output_rows_.push_back(static_cast<int32_t>(at + k));
      tokens_.push_back(k == 0 ? s.pending : c.mask_token);
    }
    any_top |= s.top_k > 0;
    s.pending = -1;
  }
  const int64_t n_out = static_cast<int64_t>(output_rows_.size());
  // Every row's top tokens where some slot wants them (the backend picks them: k ids and log-probabilities a row
  // cross from the GPU, not the vocabulary's logits; a chain slot beside them takes the first); otherwise the
  // backend's argmax ids.
  int32_t k = 0;
  for (int32_t i : group) k = std::max(k, slots_[i].top_k);
  top_ids_.resize(static_cast<size_t>(n_out * k));
  top_logprobs_.resize(static_cast<size_t>(n_out * k));
  ids_.resize(k > 0 ? 0 : static_cast<size_t>(n_out));
  const AttentionBatch attn = batch_.attn();
  StepRequest r;
  r.tokens = tokens_;
  r.attn = &attn;
  r.output_rows = output_rows_;
  r.kv = pool_->layers();
  r.n_vocab = V;
  r.argmax = k > 0 ? nullptr : ids_.data();
  r.top_k = k;
  r.top_ids = k > 0 ? top_ids_.data() : nullptr;
  r.top_logprobs = k > 0 ? top_logprobs_.data() : nullptr;
  StepProgram program;
  program.body = [&] { return block_body(); };
  program.head = [&](int64_t first, int64_t n) { return block_head(first, n); };
  SAKER_RETURN_IF_ERROR(backend_->run_step(r, program));
  ++stats_.block_forwards;
  stats_.blocks += static_cast<int64_t>(group.size());
  for (size_t j = 0; j < group.size(); ++j) {
    Slot& s = slots_[group[j]];
    const int64_t first = static_cast<int64_t>(j) * (B - 1);
    if (k == 0) {
      s.ids.assign(ids_.begin() + first, ids_.begin() + first + (B - 1));
      continue;
    }
    for (int64_t i = 0; i < B - 1; ++i) {
      const int32_t* row_ids = top_ids_.data() + (first + i) * k;
      const float* row_lp = top_logprobs_.data() + (first + i) * k;
      if (s.top_k == 0) {  // the argmax: the first of the top tokens (the lowest id among equals)
        s.ids.push_back(row_ids[0]);
        continue;
      }
      TopTokens t;
      t.ids.assign(row_ids, row_ids + s.top_k);
      t.logprobs.assign(row_lp, row_lp + s.top_k);
      s.top.push_back(std::move(t));
    }
  }
  return {};
}

Status DFlashDrafter::propose(int32_t slot, int32_t pending, std::vector<int32_t>* drafts) {
  SAKER_RETURN_IF_ERROR(request(slot, pending, 0));
  SAKER_RETURN_IF_ERROR(run());
  drafts->assign(slots_[slot].ids.begin(), slots_[slot].ids.end());
  return {};
}

Status DFlashDrafter::propose_top(int32_t slot, int32_t pending, int32_t k, std::vector<TopTokens>* rows) {
  if (k <= 0) return make_error(StatusCode::kInvalidArgument, "drafter: top-{} asked for", k);
  SAKER_RETURN_IF_ERROR(request(slot, pending, k));
  SAKER_RETURN_IF_ERROR(run());
  rows->assign(slots_[slot].top.begin(), slots_[slot].top.end());
  return {};
}

}  // namespace saker::spec
