#include "models/dense_decoder.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/trace.h"
#include "formats/quant/codec.h"
#include "ops/cpu/attention.h"
#include "ops/ref/add.h"
#include "ops/ref/argmax.h"
#include "ops/ref/attention.h"
#include "ops/ref/embedding.h"
#include "ops/ref/geglu_tanh.h"
#include "ops/ref/kv_write.h"
#include "ops/ref/matmul.h"
#include "ops/ref/rms_norm.h"
#include "ops/ref/rope.h"
#include "ops/ref/swiglu.h"

namespace saker {
namespace {

TensorView f32(float* p, std::initializer_list<int64_t> shape) { return TensorView::contiguous(p, DType::kF32, shape); }

}  // namespace

Result<std::unique_ptr<Model>> DenseDecoderModel::create(std::shared_ptr<const ModelWeights> weights, OpsOptions options) {
  std::unique_ptr<DenseDecoderModel> m(new DenseDecoderModel());
  m->weights_ = weights;
  m->options_ = options;
  m->hp_ = weights->hparams();
  const ModelHParams& h = m->hp_;
  const bool gemma = h.arch == "gemma3";
  m->geglu_ = gemma;
  const ModelWeights& w = *weights;
  SAKER_ASSIGN_OR_RETURN(m->token_embd_, w.require("token_embd.weight", {h.n_vocab, h.n_embd}));
  SAKER_ASSIGN_OR_RETURN(m->output_norm_, w.require("output_norm.weight", {h.n_embd}));
  if (w.find("output.weight")) {
    SAKER_ASSIGN_OR_RETURN(m->output_, w.require("output.weight", {h.n_vocab, h.n_embd}));
  } else {
    m->output_ = m->token_embd_;
  }
  const int64_t n_rot = h.n_rot > 0 ? h.n_rot : h.head_dim;
  if (w.find("rope_freqs.weight")) {
    SAKER_ASSIGN_OR_RETURN(m->rope_freqs_, w.require("rope_freqs.weight", {n_rot / 2}));
    if (m->rope_freqs_.dtype != DType::kF32) {
      return make_error(StatusCode::kUnsupported, "rope_freqs.weight must be F32 (is {})", dtype_name(m->rope_freqs_.dtype));
    }
  }
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    Layer L;
    SAKER_ASSIGN_OR_RETURN(L.attn_norm, w.require(p + "attn_norm.weight", {h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.wq, w.require(p + "attn_q.weight", {h.q_dim(), h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.wk, w.require(p + "attn_k.weight", {h.kv_dim(), h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.wv, w.require(p + "attn_v.weight", {h.kv_dim(), h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.wo, w.require(p + "attn_output.weight", {h.n_embd, h.q_dim()}));
    if (h.qk_norm) {
      SAKER_ASSIGN_OR_RETURN(L.q_norm, w.require(p + "attn_q_norm.weight", {h.head_dim}));
      SAKER_ASSIGN_OR_RETURN(L.k_norm, w.require(p + "attn_k_norm.weight", {h.head_dim}));
    }
    if (h.qkv_bias) {
      SAKER_ASSIGN_OR_RETURN(L.bq, m->bias_f32(p + "attn_q.bias", h.q_dim()));
      SAKER_ASSIGN_OR_RETURN(L.bk, m->bias_f32(p + "attn_k.bias", h.kv_dim()));
      SAKER_ASSIGN_OR_RETURN(L.bv, m->bias_f32(p + "attn_v.bias", h.kv_dim()));
    }
    if (gemma) {
      SAKER_ASSIGN_OR_RETURN(L.post_attn_norm, w.require(p + "post_attention_norm.weight", {h.n_embd}));
      SAKER_ASSIGN_OR_RETURN(L.post_ffn_norm, w.require(p + "post_ffw_norm.weight", {h.n_embd}));
    }
    SAKER_ASSIGN_OR_RETURN(L.ffn_norm, w.require(p + "ffn_norm.weight", {h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.w_gate, w.require(p + "ffn_gate.weight", {h.n_ff, h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.w_up, w.require(p + "ffn_up.weight", {h.n_ff, h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.w_down, w.require(p + "ffn_down.weight", {h.n_embd, h.n_ff}));
    m->layers_.push_back(L);
  }
  return std::unique_ptr<Model>(std::move(m));
}

// Rows [begin, end) of the batch that one cpu::matmul call multiplies. A long run of one sequence's consecutive
// tokens (a prefill chunk) gets a call of its own, where BLAS may take it; every other row goes through the
// integer / float paths, whose result for a row does not depend on the other rows. So a row's numbers are the
// same whatever else shares the step (a decode token beside another sequence's prefill chunk, or alone).
std::vector<DenseDecoderModel::RowRun> DenseDecoderModel::row_runs(const AttentionBatch& attn) const {
  const int64_t T = attn.n_tokens();
  const int64_t blas_min = options_.matmul.blas_min_tokens > 0 ? options_.matmul.blas_min_tokens : 16;
  std::vector<RowRun> runs;
  for (int64_t b = 0; b < T;) {
    int64_t e = b + 1;
    while (e < T && attn.token_seq[e] == attn.token_seq[b]) ++e;
    // A draft tree's rows must round as one-row decode does (speculative output equals plain decoding's).
    const bool tree = attn.sequences[attn.token_seq[b]].mask == AttentionMask::kTree;
    const bool long_run = e - b >= blas_min && !tree;
    if (!long_run && !runs.empty() && !runs.back().blas && runs.back().end == b) {
      runs.back().end = e;  // short runs next to each other share one call
    } else {
      runs.push_back({b, e, long_run});
    }
    b = e;
  }
  return runs;
}

Result<const float*> DenseDecoderModel::bias_f32(const std::string& name, int64_t n) {
  SAKER_ASSIGN_OR_RETURN(TensorView t, weights_->require(name, {n}));
  if (t.dtype == DType::kF32) return static_cast<const float*>(t.data);
  if (!can_dequantize(t.dtype)) {
    return make_error(StatusCode::kUnsupported, "{}: bias type {} cannot be read", name, dtype_name(t.dtype));
  }
  std::vector<float>& copy = owned_biases_.emplace_back(n);  // [n]
  SAKER_RETURN_IF_ERROR(dequantize_row(t.dtype, t.data, copy.data(), n));
  return static_cast<const float*>(copy.data());
}

Status DenseDecoderModel::matmul(const TensorView& x, const TensorView& w, const TensorView& out,
                                 std::span<const RowRun> runs) const {
  if (!options_.fast_matmul) return ref::matmul(x, w, out);
  const int64_t T = x.dim(0);
  const bool one_long_run = runs.size() == 1 && runs[0].blas;
  if (runs.empty() || one_long_run) return cpu::matmul(x, w, out, options_.matmul);
  if (T != runs.back().end || x.n_dims != 2) {
    // The output head's gathered rows: BLAS only when they all come from one long run (teacher-forced prompt
    // logits); rows of a batched step go through the row-independent paths.
    cpu::MatmulOptions o = options_.matmul;
    o.blas = false;
    return cpu::matmul(x, w, out, o);
  }
  for (const RowRun& r : runs) {
    cpu::MatmulOptions o = options_.matmul;
    o.blas = o.blas && r.blas;
    const TensorView xs = f32(static_cast<float*>(x.row(r.begin)), {r.end - r.begin, x.dim(1)});
    const TensorView os = f32(static_cast<float*>(out.row(r.begin)), {r.end - r.begin, out.dim(1)});
    SAKER_RETURN_IF_ERROR(cpu::matmul(xs, w, os, o));
  }
  return {};
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
  for (const LayerKv& layer : kv) {  // the CPU ops read and write the views directly
    if (layer.k.device != Device::kCpu || layer.v.device != Device::kCpu) {
      return make_error(StatusCode::kInvalidArgument, "forward: the CPU decoder was given KV views on the {}",
                        device_name(layer.k.device != Device::kCpu ? layer.k.device : layer.v.device));
    }
  }
  const std::span<const int32_t> tap_layers = batch.taps.layers;
  const int64_t n_taps = static_cast<int64_t>(tap_layers.size());
  for (int32_t l : tap_layers) {
    if (l < 0 || l >= h.n_layer) {
      return make_error(StatusCode::kInvalidArgument, "forward: tapped layer {} outside 0..{}", l, h.n_layer - 1);
    }
  }
  if (n_taps > 0 && batch.taps.out == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "forward: hidden-state taps without an output buffer");
  }

  const std::vector<RowRun> runs = row_runs(batch.attn);
  const auto mm = [&](const TensorView& a, const TensorView& w, const TensorView& out) {
    return matmul(a, w, out, runs);
  };
  std::vector<float> x(T * h.n_embd), hbuf(T * h.n_embd);       // [T, n_embd]
  std::vector<float> q(T * h.q_dim()), attn(T * h.q_dim());     // [T, n_head, head_dim]
  std::vector<float> k(T * h.kv_dim()), v(T * h.kv_dim());      // [T, n_head_kv, head_dim]
  std::vector<float> gate(T * h.n_ff), up(T * h.n_ff);          // [T, n_ff]
  const TensorView xv = f32(x.data(), {T, h.n_embd});
  const TensorView hv = f32(hbuf.data(), {T, h.n_embd});

  SAKER_RETURN_IF_ERROR(ref::embedding(token_embd_, batch.tokens, xv));
  if (h.embed_scale != 1.0f) {
    for (float& e : x) e *= h.embed_scale;
  }
  trace(xv, "inp_embd");

  ref::RopeParams rope_global;
  rope_global.style = h.rope_style;
  rope_global.n_rot = h.n_rot;
  rope_global.theta_base = h.rope_theta;
  rope_global.freq_scale = h.rope_freq_scale;
  rope_global.freq_factors = rope_freqs_.data ? static_cast<const float*>(rope_freqs_.data) : nullptr;
  ref::RopeParams rope_local = rope_global;  // local (sliding-window) layers: own base, no scaling
  rope_local.theta_base = h.rope_theta_swa > 0 ? h.rope_theta_swa : h.rope_theta;
  rope_local.freq_scale = 1.0;
  ref::AttentionParams attn_global;
  attn_global.scale = h.attn_scale;
  attn_global.soft_cap = h.attn_soft_cap;
  ref::AttentionParams attn_local = attn_global;
  attn_local.sliding_window = static_cast<int32_t>(h.sliding_window);

  for (int64_t l = 0; l < h.n_layer; ++l) {
    const Layer& L = layers_[l];
    const int li = static_cast<int>(l);
    const bool local = h.layer_is_local(l);
    const ref::RopeParams& rope = local ? rope_local : rope_global;
    const ref::AttentionParams& attn_params = local ? attn_local : attn_global;
    SAKER_RETURN_IF_ERROR(ref::rms_norm(xv, L.attn_norm, hv, h.rms_eps));
    trace(hv, "attn_norm", li);
    const TensorView qv = f32(q.data(), {T, h.q_dim()});
    const TensorView kv_k = f32(k.data(), {T, h.kv_dim()});
    const TensorView kv_v = f32(v.data(), {T, h.kv_dim()});
    SAKER_RETURN_IF_ERROR(mm(hv, L.wq, qv));
    SAKER_RETURN_IF_ERROR(mm(hv, L.wk, kv_k));
    SAKER_RETURN_IF_ERROR(mm(hv, L.wv, kv_v));
    if (L.bq) {  // qwen2: projection biases, before any norm or RoPE
      ref::add_row_bias(q.data(), L.bq, T, h.q_dim(), h.q_dim());
      ref::add_row_bias(k.data(), L.bk, T, h.kv_dim(), h.kv_dim());
      ref::add_row_bias(v.data(), L.bv, T, h.kv_dim(), h.kv_dim());
    }
    if (L.q_norm.data) {
      // Per-head RMSNorm over head_dim: the same op on [T * n_head, head_dim].
      const TensorView qh = f32(q.data(), {T * h.n_head, h.head_dim});
      const TensorView kh = f32(k.data(), {T * h.n_head_kv, h.head_dim});
      SAKER_RETURN_IF_ERROR(ref::rms_norm(qh, L.q_norm, qh, h.rms_eps));
      SAKER_RETURN_IF_ERROR(ref::rms_norm(kh, L.k_norm, kh, h.rms_eps));
    }
    const TensorView q3 = f32(q.data(), {T, h.n_head, h.head_dim});
    const TensorView k3 = f32(k.data(), {T, h.n_head_kv, h.head_dim});
    const TensorView v3 = f32(v.data(), {T, h.n_head_kv, h.head_dim});
    SAKER_RETURN_IF_ERROR(ref::rope(q3, batch.attn.token_pos, rope));
    SAKER_RETURN_IF_ERROR(ref::rope(k3, batch.attn.token_pos, rope));
    trace(q3, "q_rope", li);
    trace(k3, "k_rope", li);
    SAKER_RETURN_IF_ERROR(ref::kv_write(k3, v3, kv[l].k, kv[l].v, batch.attn));
    const TensorView attn3 = f32(attn.data(), {T, h.n_head, h.head_dim});
    SAKER_RETURN_IF_ERROR(options_.fast_attention
                              ? cpu::attention(q3, kv[l].k, kv[l].v, batch.attn, attn_params, attn3)
                              : ref::attention(q3, kv[l].k, kv[l].v, batch.attn, attn_params, attn3));
    trace(attn3, "attn_out", li);
    SAKER_RETURN_IF_ERROR(mm(f32(attn.data(), {T, h.q_dim()}), L.wo, hv));
    if (L.post_attn_norm.data) SAKER_RETURN_IF_ERROR(ref::rms_norm(hv, L.post_attn_norm, hv, h.rms_eps));
    ref::add_f32(x.data(), hbuf.data(), x.data(), T * h.n_embd);
    trace(xv, "attn_residual", li);

    SAKER_RETURN_IF_ERROR(ref::rms_norm(xv, L.ffn_norm, hv, h.rms_eps));
    trace(hv, "ffn_norm", li);
    const TensorView gv = f32(gate.data(), {T, h.n_ff});
    const TensorView uv = f32(up.data(), {T, h.n_ff});
    SAKER_RETURN_IF_ERROR(mm(hv, L.w_gate, gv));
    SAKER_RETURN_IF_ERROR(mm(hv, L.w_up, uv));
    SAKER_RETURN_IF_ERROR(geglu_ ? ref::geglu_tanh(gv, uv, gv) : ref::swiglu(gv, uv, gv));
    SAKER_RETURN_IF_ERROR(mm(gv, L.w_down, hv));
    if (L.post_ffn_norm.data) SAKER_RETURN_IF_ERROR(ref::rms_norm(hv, L.post_ffn_norm, hv, h.rms_eps));
    ref::add_f32(x.data(), hbuf.data(), x.data(), T * h.n_embd);
    trace(xv, "l_out", li);
    for (int64_t j = 0; j < n_taps; ++j) {
      if (tap_layers[j] != l) continue;
      for (int64_t t = 0; t < T; ++t) {
        std::copy_n(x.data() + t * h.n_embd, h.n_embd, batch.taps.out + (t * n_taps + j) * h.n_embd);
      }
    }
  }

  if (n_out == 0) return {};
  // Only the rows whose logits are wanted go through the output head (decode: one of many prefill rows).
  std::vector<float> xo(n_out * h.n_embd);  // [n_out, n_embd]
  for (int64_t i = 0; i < n_out; ++i) {
    std::copy_n(x.data() + batch.output_rows[i] * h.n_embd, h.n_embd, xo.data() + i * h.n_embd);
  }
  const TensorView xov = f32(xo.data(), {n_out, h.n_embd});
  SAKER_RETURN_IF_ERROR(ref::rms_norm(xov, output_norm_, xov, h.rms_eps));
  trace(xov, "result_norm");
  // A greedy step that wants ids only still needs the logits to pick from: they go to a scratch buffer.
  std::vector<float> scratch(logits ? 0 : n_out * h.n_vocab);  // [n_out, n_vocab]
  float* out = logits ? logits : scratch.data();
  const TensorView lv = f32(out, {n_out, h.n_vocab});
  SAKER_RETURN_IF_ERROR(mm(xov, output_, lv));
  if (h.final_soft_cap > 0.0f) {
    const float c = h.final_soft_cap;
    for (int64_t i = 0; i < n_out * h.n_vocab; ++i) out[i] = c * std::tanh(out[i] / c);
  }
  trace(lv, "result_output");
  if (batch.argmax) {
    const std::span<int32_t> ids(batch.argmax, static_cast<size_t>(n_out));
    SAKER_RETURN_IF_ERROR(ref::argmax(lv, ids));  // ties: the lowest id, as the greedy Sampler picks
    for (int64_t i = 0; i < n_out; ++i) {
      if (ids[i] < 0) return make_error(StatusCode::kInternal, "forward: the logits of output {} are all NaN", i);
    }
  }
  return {};
}

}  // namespace saker
