#include "models/dense_decoder.h"

#include <fmt/format.h>

#include <vector>

namespace saker {

Result<std::unique_ptr<Model>> DenseDecoderModel::create(std::shared_ptr<const ModelWeights> weights,
                                                         std::unique_ptr<OpBackend> backend,
                                                         const TensorShard& shard) {
  std::unique_ptr<DenseDecoderModel> m(new DenseDecoderModel());
  m->weights_ = std::move(weights);
  m->backend_ = std::move(backend);
  m->hp_ = m->weights_->hparams();
  m->shard_ = shard;
  if (shard.size < 1 || shard.rank < 0 || shard.rank >= shard.size) {
    return make_error(StatusCode::kInvalidArgument, "tensor shard: rank {} of {}", shard.rank, shard.size);
  }
  if (m->backend_->n_ranks() != shard.size) {
    return make_error(StatusCode::kInvalidArgument, "tensor shard of {} ranks over a backend that reduces over {}",
                      shard.size, m->backend_->n_ranks());
  }
  if (shard.split()) SAKER_RETURN_IF_ERROR(check_tensor_parallel(*m->weights_, shard.size));
  const ModelHParams& h = m->hp_;
  m->local_ = {h.n_head / shard.size, h.n_head_kv / shard.size, h.n_ff / shard.size, shard.first(h.n_vocab),
               shard.count(h.n_vocab), h.head_dim};
  SAKER_RETURN_IF_ERROR(m->bind_weights());
  return std::unique_ptr<Model>(std::move(m));
}

Status DenseDecoderModel::bind_weights() {
  const ModelHParams& h = hp_;
  const ModelWeights& w = *weights_;
  OpBackend& b = *backend_;
  const bool gemma = h.arch == "gemma3";
  geglu_ = gemma;
  const TensorShard& sh = shard_;
  // Stacked [rows, n_embd] parts; with `split`, each part's rank slice of rows (column-parallel; one rank: all).
  const auto matrix = [&](std::initializer_list<const char*> names, std::initializer_list<int64_t> rows,
                          const std::string& prefix, bool split) -> Result<const PreparedMatrix*> {
    std::vector<TensorView> parts;
    std::string label = prefix;  // "blk.0.attn_q.weight|attn_k.weight|attn_v.weight" in errors
    auto row = rows.begin();
    for (const char* name : names) {
      const int64_t n = *row++;
      SAKER_ASSIGN_OR_RETURN(TensorView t, w.require(prefix + name, {n, h.n_embd}));
      if (split) {
        SAKER_ASSIGN_OR_RETURN(t, slice_rows(t, sh.first(n), sh.count(n), prefix + name));
      }
      parts.push_back(t);
      if (parts.size() > 1) label += '|';  // two appends: GCC 12 misreads `"|" + std::string` (-Wrestrict)
      label += name;
    }
    return b.prepare_matrix(parts, label);
  };
  // A row-parallel [n_embd, cols] matrix: the rank's slice of input columns.
  const auto row_parallel = [&](const std::string& name, int64_t cols) -> Result<const PreparedMatrix*> {
    SAKER_ASSIGN_OR_RETURN(TensorView t, w.require(name, {h.n_embd, cols}));
    if (sh.split()) {
      SAKER_ASSIGN_OR_RETURN(t, slice_columns(t, sh.first(cols), sh.count(cols), name));
    }
    return b.prepare_matrix(std::span<const TensorView>(&t, 1), name);
  };
  const auto vector = [&](const std::string& name, int64_t n) -> Result<const PreparedVector*> {
    SAKER_ASSIGN_OR_RETURN(TensorView t, w.require(name, {n}));
    return b.prepare_vector(std::span<const TensorView>(&t, 1));
  };

  SAKER_ASSIGN_OR_RETURN(token_embd_, matrix({"token_embd.weight"}, {h.n_vocab}, "", false));  // replicated
  SAKER_ASSIGN_OR_RETURN(output_norm_, vector("output_norm.weight", h.n_embd));
  // The output head by vocabulary rows (a tied head: the rank's rows of token_embd).
  const char* head_name = w.find("output.weight") ? "output.weight" : "token_embd.weight";
  if (sh.split() || w.find("output.weight")) {
    SAKER_ASSIGN_OR_RETURN(output_, matrix({head_name}, {h.n_vocab}, "", sh.split()));
  } else {
    output_ = token_embd_;
  }
  const int64_t n_rot = h.n_rot > 0 ? h.n_rot : h.head_dim;
  if (w.find("rope_freqs.weight")) {  // llama 3: per-pair frequency divisors
    SAKER_ASSIGN_OR_RETURN(TensorView rf, w.require("rope_freqs.weight", {n_rot / 2}));
    if (rf.dtype != DType::kF32) {
      return make_error(StatusCode::kUnsupported, "rope_freqs.weight must be F32 (is {})", dtype_name(rf.dtype));
    }
    SAKER_ASSIGN_OR_RETURN(rope_freqs_, b.prepare_vector(std::span<const TensorView>(&rf, 1)));
  }
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    Layer L;
    SAKER_ASSIGN_OR_RETURN(L.attn_norm, vector(p + "attn_norm.weight", h.n_embd));
    SAKER_ASSIGN_OR_RETURN(L.qkv, matrix({"attn_q.weight", "attn_k.weight", "attn_v.weight"},
                                         {h.q_dim(), h.kv_dim(), h.kv_dim()}, p, sh.split()));
    SAKER_ASSIGN_OR_RETURN(L.wo, row_parallel(p + "attn_output.weight", h.q_dim()));
    if (h.qk_norm) {
      SAKER_ASSIGN_OR_RETURN(L.q_norm, vector(p + "attn_q_norm.weight", h.head_dim));
      SAKER_ASSIGN_OR_RETURN(L.k_norm, vector(p + "attn_k_norm.weight", h.head_dim));
    }
    if (h.qkv_bias) {  // qwen2: the q, k and v biases side by side, as the fused output row holds them
      std::vector<TensorView> bias;
      for (const auto& [part, n] : {std::pair{"attn_q.bias", h.q_dim()}, std::pair{"attn_k.bias", h.kv_dim()},
                                    std::pair{"attn_v.bias", h.kv_dim()}}) {
        SAKER_ASSIGN_OR_RETURN(TensorView t, w.require(p + part, {n}));
        if (sh.split()) {
          SAKER_ASSIGN_OR_RETURN(t, slice_rows(t, sh.first(n), sh.count(n), p + part));
        }
        bias.push_back(t);
      }
      SAKER_ASSIGN_OR_RETURN(L.qkv_bias, b.prepare_vector(bias));
    }
    if (gemma) {
      SAKER_ASSIGN_OR_RETURN(L.post_attn_norm, vector(p + "post_attention_norm.weight", h.n_embd));
      SAKER_ASSIGN_OR_RETURN(L.post_ffn_norm, vector(p + "post_ffw_norm.weight", h.n_embd));
    }
    SAKER_ASSIGN_OR_RETURN(L.ffn_norm, vector(p + "ffn_norm.weight", h.n_embd));
    SAKER_ASSIGN_OR_RETURN(L.gate_up,
                           matrix({"ffn_gate.weight", "ffn_up.weight"}, {h.n_ff, h.n_ff}, p, sh.split()));
    SAKER_ASSIGN_OR_RETURN(L.down, row_parallel(p + "ffn_down.weight", h.n_ff));
    layers_.push_back(L);
  }

  rope_global_.style = h.rope_style;
  rope_global_.n_rot = h.n_rot;
  rope_global_.theta_base = h.rope_theta;
  rope_global_.freq_scale = h.rope_freq_scale;
  rope_global_.freq_factors = rope_freqs_;
  rope_local_ = rope_global_;
  rope_local_.theta_base = h.rope_theta_swa > 0 ? h.rope_theta_swa : h.rope_theta;
  rope_local_.freq_scale = 1.0;
  attn_global_.n_head = local_.n_head;  // the rank's heads (their GQA groups stay whole)
  attn_global_.n_head_kv = local_.n_head_kv;
  attn_global_.head_dim = h.head_dim;
  attn_global_.scale = h.attn_scale;
  attn_global_.soft_cap = h.attn_soft_cap;
  attn_local_ = attn_global_;
  attn_local_.sliding_window = static_cast<int32_t>(h.sliding_window);

  const LocalDims& d = local_;
  std::vector<ActivationSpec> buffers(kNumBuffers);
  buffers[kX] = {h.n_embd};                         // [T, n_embd] residual stream (replicated)
  buffers[kH] = {h.n_embd};                         // [T, n_embd] normed input of a matmul / block output
  buffers[kQkv] = {d.q_dim() + 2 * d.kv_dim()};     // [T, q_dim + 2 kv_dim] (local)
  buffers[kAttn] = {d.q_dim()};                     // [T, n_head * head_dim] (local)
  buffers[kGateUp] = {2 * d.n_ff};                  // [T, 2 n_ff] (local)
  buffers[kAct] = {d.n_ff};                         // [T, n_ff] (local)
  buffers[kXo] = {h.n_embd, /*per_output=*/true};   // [n_out, n_embd] rows that reach the head
  return b.reserve(buffers, d.n_vocab, attn_global_);
}

Status DenseDecoderModel::project_residual(const Product& product, const PreparedVector* post_norm, const Act& x,
                                           const Act& h) {
  OpBackend& b = *backend_;
  if (!post_norm && !shard_.split()) return product(x, /*accumulate=*/true);
  SAKER_RETURN_IF_ERROR(product(h, false));
  // Tensor parallel: each rank's product is a partial sum over its input columns; all ranks add the same total.
  SAKER_RETURN_IF_ERROR(b.all_reduce(h));
  // Gemma: the block's output is normed before it joins the residual stream.
  if (post_norm) SAKER_RETURN_IF_ERROR(b.rms_norm(h, *post_norm, hp_.rms_eps, h));
  return b.add(x, h, x);
}

Status DenseDecoderModel::body(const ForwardBatch& batch) {
  const ModelHParams& h = hp_;
  OpBackend& b = *backend_;
  const int64_t T = b.step_tokens();
  const Act x = b.buffer(kX, T), hb = b.buffer(kH, T), qkv = b.buffer(kQkv, T), attn = b.buffer(kAttn, T);
  const Act gu = b.buffer(kGateUp, T), act = b.buffer(kAct, T);
  const std::span<const int32_t> tap_layers = batch.taps.layers;
  const int64_t n_taps = static_cast<int64_t>(tap_layers.size());

  SAKER_RETURN_IF_ERROR(b.embedding(*token_embd_, h.embed_scale, x));
  b.trace(x, "inp_embd");
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const Layer& L = layers_[l];
    const int li = static_cast<int>(l);
    const bool local = h.layer_is_local(l);
    const AttentionSpec& spec = local ? attn_local_ : attn_global_;
    // Attention block: x += [post_norm] Wo attn(rope(norm(q)), rope(norm(k)), v), q|k|v from one matmul.
    SAKER_RETURN_IF_ERROR(b.norm_matmul(x, *L.attn_norm, h.rms_eps, hb, *L.qkv, qkv, false));
    b.trace(hb, "attn_norm", li);
    // qwen2's projection bias goes in first, before any norm or RoPE (L.qkv_bias null elsewhere).
    SAKER_RETURN_IF_ERROR(b.qk_norm_rope_kv_write(qkv, L.qkv_bias, spec, L.q_norm, L.k_norm, h.rms_eps,
                                                  local ? rope_local_ : rope_global_, li));
    const Act q = qkv.columns(0, local_.q_dim());
    SAKER_RETURN_IF_ERROR(project_residual(
        [&](const Act& out, bool acc) { return b.attention_matmul(q, li, spec, attn, *L.wo, out, acc); },
        L.post_attn_norm, x, hb));
    b.trace(attn, "attn_out", li, local_.n_head);
    b.trace(x, "attn_residual", li);
    // MLP block: x += [post_norm] W_down (act(W_gate h) * W_up h), gate|up from one matmul.
    SAKER_RETURN_IF_ERROR(b.norm_matmul(x, *L.ffn_norm, h.rms_eps, hb, *L.gate_up, gu, false));
    b.trace(hb, "ffn_norm", li);
    const Act gate = gu.columns(0, local_.n_ff), up = gu.columns(local_.n_ff, local_.n_ff);
    const GatedAct kind = geglu_ ? GatedAct::kGeluTanh : GatedAct::kSilu;
    SAKER_RETURN_IF_ERROR(project_residual(
        [&](const Act& out, bool acc) { return b.gated_matmul(kind, gate, up, act, *L.down, out, acc); },
        L.post_ffn_norm, x, hb));
    b.trace(x, "l_out", li);
    for (int64_t j = 0; j < n_taps; ++j) {  // out: [T, n_taps, n_embd]
      if (tap_layers[j] != l) continue;
      SAKER_RETURN_IF_ERROR(b.tap_rows(x, j * h.n_embd));
    }
  }
  return {};
}

// Only the rows whose logits are wanted go through the output head (decode: one of many prefill rows).
Status DenseDecoderModel::head(int64_t first, int64_t n) {
  const ModelHParams& h = hp_;
  OpBackend& b = *backend_;
  const Act x = b.buffer(kX, b.step_tokens());
  const Act xo = b.buffer(kXo, n);  // [n, n_embd]
  SAKER_RETURN_IF_ERROR(b.gather_outputs(x, first, xo));
  const Act logits = b.logits(first, n);  // [n, n_vocab] (a rank: its vocabulary slice)
  SAKER_RETURN_IF_ERROR(b.norm_matmul(xo, *output_norm_, h.rms_eps, xo, *output_, logits, false));
  b.trace(xo, "result_norm");
  if (h.final_soft_cap > 0.0f) SAKER_RETURN_IF_ERROR(b.soft_cap(logits, h.final_soft_cap));
  b.trace(logits, "result_output");
  return b.emit_outputs(logits, first);  // argmax ids (ties: the lowest id, as the greedy Sampler picks)
}

Status DenseDecoderModel::forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) {
  const ModelHParams& h = hp_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_out = static_cast<int64_t>(batch.output_rows.size());
  if (T == 0) return {};
  if (static_cast<int64_t>(kv.size()) != h.n_layer) {
    return make_error(StatusCode::kInvalidArgument, "forward: {} KV layers given for {} model layers", kv.size(),
                      h.n_layer);
  }
  for (int32_t r : batch.output_rows) {
    if (r < 0 || r >= T) return make_error(StatusCode::kInvalidArgument, "forward: output row {} outside the batch", r);
  }
  if (n_out > 0 && logits == nullptr && batch.argmax == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "forward: output rows but neither logits nor argmax wanted");
  }
  for (int32_t l : batch.taps.layers) {
    if (l < 0 || l >= h.n_layer) {
      return make_error(StatusCode::kInvalidArgument, "forward: tapped layer {} outside 0..{}", l, h.n_layer - 1);
    }
  }
  if (!batch.taps.layers.empty() && batch.taps.out == nullptr && !batch.taps.on_device) {
    return make_error(StatusCode::kInvalidArgument, "forward: hidden-state taps without an output buffer");
  }
  StepRequest request;
  request.tokens = batch.tokens;
  request.attn = &batch.attn;
  request.output_rows = batch.output_rows;
  request.kv = kv;
  request.logits = logits;
  request.argmax = batch.argmax;
  request.n_vocab = local_.n_vocab;
  if (!batch.taps.layers.empty()) {  // out: [T, n_taps, n_embd], as body() writes it
    request.taps_out = batch.taps.on_device ? nullptr : batch.taps.out;
    request.taps_on_device = batch.taps.on_device;
    request.taps_stride = static_cast<int64_t>(batch.taps.layers.size()) * h.n_embd;
    request.tap_layers = batch.taps.layers;
  }
  StepProgram program;
  program.body = [&] { return body(batch); };
  program.head = [&](int64_t first, int64_t n) { return head(first, n); };
  return backend_->run_step(request, program);
}

}  // namespace saker
