#include "models/cuda/cuda_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/env.h"
#include "core/log.h"
#include "formats/quant/codec.h"
#include "models/cuda/cuda_kv_storage.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/gather_rows.h"
#include "ops/cuda/add.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda/qk_norm_rope_kv_write.h"
#include "ops/cuda/soft_cap.h"

namespace saker {
namespace {

constexpr int64_t kGraphMaxTokens = 64;   // the verify widths speculative decoding needs
constexpr int64_t kMinCtxCapacity = 256;  // smallest context bucket a graph is captured for
constexpr size_t kMaxKvBindings = 32;     // distinct KV pointer sets that keep captured graphs

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

CudaDecoder::~CudaDecoder() {
  for (auto& [shape, exec] : graphs_) cudaGraphExecDestroy(exec);
  for (cuda::DeviceMatrix* m : all_matrices()) cuda::free_matrix(m);
  if (stream_) cudaStreamDestroy(stream_);
}

std::vector<cuda::DeviceMatrix*> CudaDecoder::all_matrices() {
  std::vector<cuda::DeviceMatrix*> out;
  out.push_back(&token_embd_);
  if (!output_tied_) out.push_back(&output_);
  for (Layer& L : layers_) {
    for (auto& m : L.qkv.parts) out.push_back(&m);
    for (auto& m : L.gate_up.parts) out.push_back(&m);
    out.push_back(&L.wo);
    out.push_back(&L.down);
  }
  return out;
}

Result<std::unique_ptr<Model>> CudaDecoder::create(std::shared_ptr<const ModelWeights> weights,
                                                   const OpsOptions& options) {
  std::unique_ptr<CudaDecoder> m(new CudaDecoder());
  SAKER_RETURN_IF_ERROR(m->init(std::move(weights), options));
  return std::unique_ptr<Model>(std::move(m));
}

Status CudaDecoder::init(std::shared_ptr<const ModelWeights> weights, const OpsOptions& options) {
  weights_ = std::move(weights);
  options_ = options;
  hp_ = weights_->hparams();
  if (hp_.arch != "qwen3" && hp_.arch != "qwen2" && hp_.arch != "llama" && hp_.arch != "gemma3") {
    return make_error(StatusCode::kUnsupported, "the CUDA backend has no forward pass for architecture '{}' yet",
                      hp_.arch);
  }
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  SAKER_RETURN_IF_ERROR(upload_weights());

  const ModelHParams& h = hp_;
  max_tokens_ = std::max<int64_t>(kGraphMaxTokens, options.max_batch_tokens);
  // Logits rows per head pass: every decode/verify step in one pass, prefill outputs in slices of ~256 MB.
  head_rows_ = std::clamp<int64_t>((int64_t{256} << 20) / (h.n_vocab * 4), kGraphMaxTokens, max_tokens_);
  const int64_t qkv_w = h.q_dim() + 2 * h.kv_dim();
  SAKER_ASSIGN_OR_RETURN(x_, mem_.alloc_array<float>(max_tokens_ * h.n_embd, "activations"));
  SAKER_ASSIGN_OR_RETURN(h_, mem_.alloc_array<float>(max_tokens_ * std::max(h.n_embd, h.q_dim()), "activations"));
  SAKER_ASSIGN_OR_RETURN(qkv_, mem_.alloc_array<float>(max_tokens_ * qkv_w, "activations"));
  SAKER_ASSIGN_OR_RETURN(attn_, mem_.alloc_array<float>(max_tokens_ * h.q_dim(), "activations"));
  SAKER_ASSIGN_OR_RETURN(gu_, mem_.alloc_array<float>(max_tokens_ * 2 * h.n_ff, "activations"));
  SAKER_ASSIGN_OR_RETURN(act_, mem_.alloc_array<float>(max_tokens_ * h.n_ff, "activations"));
  SAKER_ASSIGN_OR_RETURN(xo_, mem_.alloc_array<float>(head_rows_ * h.n_embd, "activations"));
  SAKER_ASSIGN_OR_RETURN(logits_dev_, mem_.alloc_array<float>(head_rows_ * h.n_vocab, "logits"));
  SAKER_ASSIGN_OR_RETURN(void* lh, mem_.alloc_host(head_rows_ * h.n_vocab * sizeof(float), "logits"));
  logits_host_ = static_cast<float*>(lh);
  SAKER_ASSIGN_OR_RETURN(argmax_dev_, mem_.alloc_array<int32_t>(head_rows_, "argmax ids"));
  SAKER_ASSIGN_OR_RETURN(void* ah, mem_.alloc_host(head_rows_ * sizeof(int32_t), "argmax ids"));
  argmax_host_ = static_cast<int32_t*>(ah);

  const int64_t max_n_in = std::max({h.n_embd, h.n_ff, h.q_dim()});
  const int64_t max_n_out = std::max({h.n_vocab, 2 * h.n_ff, qkv_w, h.n_embd});
  SAKER_ASSIGN_OR_RETURN(matmul_, cuda::MatmulContext::create(max_tokens_, max_n_in, max_n_out));
  SAKER_LOG_INFO("CUDA decoder: {} layers, {:.2f} GiB of weights and buffers on the GPU, batches of up to {} tokens, "
                 "{} logits rows per head pass",
                 h.n_layer, static_cast<double>(mem_.device_bytes() + weight_bytes_) / (1 << 30), max_tokens_,
                 head_rows_);
  return {};
}

Result<float*> CudaDecoder::upload_norm(const TensorView& t) {
  const int64_t n = t.n_elements();
  std::vector<float> host(n);
  SAKER_RETURN_IF_ERROR(dequantize_row(t.dtype, t.data, host.data(), n));
  SAKER_ASSIGN_OR_RETURN(float* d, mem_.alloc_array<float>(n, "norm weights"));
  SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

Result<CudaDecoder::FusedMatrix> CudaDecoder::upload_fused(const std::vector<TensorView>& parts) {
  FusedMatrix f;
  const bool same = std::all_of(parts.begin(), parts.end(), [&](const TensorView& t) { return t.dtype == parts[0].dtype; });
  int64_t col = 0;
  if (same) {
    SAKER_ASSIGN_OR_RETURN(cuda::DeviceMatrix m, cuda::upload_matrix(parts));
    weight_bytes_ += m.bytes;
    f.parts.push_back(m);
    f.column.push_back(0);
    return f;
  }
  for (const TensorView& t : parts) {
    SAKER_ASSIGN_OR_RETURN(cuda::DeviceMatrix m, cuda::upload_matrix(std::span<const TensorView>(&t, 1)));
    weight_bytes_ += m.bytes;
    f.parts.push_back(m);
    f.column.push_back(col);
    col += t.dim(0);
  }
  return f;
}

Status CudaDecoder::upload_weights() {
  const ModelHParams& h = hp_;
  const ModelWeights& w = *weights_;
  auto check_type = [](const TensorView& t, const std::string& name) -> Status {
    if (!cuda::matmul_supports(t.dtype)) {
      return make_error(StatusCode::kUnsupported, "the CUDA backend cannot multiply {} ({})", name,
                        dtype_name(t.dtype));
    }
    return {};
  };
  SAKER_ASSIGN_OR_RETURN(TensorView embd, w.require("token_embd.weight", {h.n_vocab, h.n_embd}));
  SAKER_RETURN_IF_ERROR(check_type(embd, "token_embd.weight"));
  SAKER_ASSIGN_OR_RETURN(token_embd_, cuda::upload_matrix(std::span<const TensorView>(&embd, 1)));
  weight_bytes_ += token_embd_.bytes;
  SAKER_ASSIGN_OR_RETURN(TensorView onorm, w.require("output_norm.weight", {h.n_embd}));
  SAKER_ASSIGN_OR_RETURN(output_norm_, upload_norm(onorm));
  if (const TensorView* out = w.find("output.weight"); out && !h.tied_embeddings) {
    SAKER_ASSIGN_OR_RETURN(TensorView o, w.require("output.weight", {h.n_vocab, h.n_embd}));
    SAKER_RETURN_IF_ERROR(check_type(o, "output.weight"));
    SAKER_ASSIGN_OR_RETURN(output_, cuda::upload_matrix(std::span<const TensorView>(&o, 1)));
    weight_bytes_ += output_.bytes;
  } else {
    output_ = token_embd_;
    output_tied_ = true;
  }

  const int64_t n_rot = h.n_rot > 0 ? h.n_rot : h.head_dim;
  if (w.find("rope_freqs.weight")) {  // llama 3: per-pair frequency divisors
    SAKER_ASSIGN_OR_RETURN(TensorView rf, w.require("rope_freqs.weight", {n_rot / 2}));
    SAKER_ASSIGN_OR_RETURN(rope_freqs_, upload_norm(rf));
  }
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    Layer L;
    SAKER_ASSIGN_OR_RETURN(TensorView an, w.require(p + "attn_norm.weight", {h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.attn_norm, upload_norm(an));
    SAKER_ASSIGN_OR_RETURN(TensorView fn, w.require(p + "ffn_norm.weight", {h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(L.ffn_norm, upload_norm(fn));
    if (h.qk_norm) {
      SAKER_ASSIGN_OR_RETURN(TensorView qn, w.require(p + "attn_q_norm.weight", {h.head_dim}));
      SAKER_ASSIGN_OR_RETURN(TensorView kn, w.require(p + "attn_k_norm.weight", {h.head_dim}));
      SAKER_ASSIGN_OR_RETURN(L.q_norm, upload_norm(qn));
      SAKER_ASSIGN_OR_RETURN(L.k_norm, upload_norm(kn));
    }
    if (h.arch == "gemma3") {
      SAKER_ASSIGN_OR_RETURN(TensorView pa, w.require(p + "post_attention_norm.weight", {h.n_embd}));
      SAKER_ASSIGN_OR_RETURN(TensorView pf, w.require(p + "post_ffw_norm.weight", {h.n_embd}));
      SAKER_ASSIGN_OR_RETURN(L.post_attn_norm, upload_norm(pa));
      SAKER_ASSIGN_OR_RETURN(L.post_ffn_norm, upload_norm(pf));
    }
    std::vector<TensorView> qkv(3), gu(2);
    SAKER_ASSIGN_OR_RETURN(qkv[0], w.require(p + "attn_q.weight", {h.q_dim(), h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(qkv[1], w.require(p + "attn_k.weight", {h.kv_dim(), h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(qkv[2], w.require(p + "attn_v.weight", {h.kv_dim(), h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(TensorView wo, w.require(p + "attn_output.weight", {h.n_embd, h.q_dim()}));
    SAKER_ASSIGN_OR_RETURN(gu[0], w.require(p + "ffn_gate.weight", {h.n_ff, h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(gu[1], w.require(p + "ffn_up.weight", {h.n_ff, h.n_embd}));
    SAKER_ASSIGN_OR_RETURN(TensorView down, w.require(p + "ffn_down.weight", {h.n_embd, h.n_ff}));
    for (const auto* t : {&qkv[0], &qkv[1], &qkv[2], &wo, &gu[0], &gu[1], &down}) {
      SAKER_RETURN_IF_ERROR(check_type(*t, p + "*"));
    }
    SAKER_ASSIGN_OR_RETURN(L.qkv, upload_fused(qkv));
    if (h.qkv_bias) {  // qwen2: the q, k and v biases side by side, as the fused output row holds them
      std::vector<float> bias(h.q_dim() + 2 * h.kv_dim());  // [q_dim + 2 kv_dim]
      int64_t at = 0;
      for (const char* part : {"attn_q.bias", "attn_k.bias", "attn_v.bias"}) {
        const int64_t n = at == 0 ? h.q_dim() : h.kv_dim();
        SAKER_ASSIGN_OR_RETURN(TensorView b, w.require(p + part, {n}));
        SAKER_RETURN_IF_ERROR(dequantize_row(b.dtype, b.data, bias.data() + at, n));
        at += n;
      }
      SAKER_ASSIGN_OR_RETURN(L.qkv_bias, mem_.alloc_array<float>(at, "qkv biases"));
      SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpy(L.qkv_bias, bias.data(), at * sizeof(float), cudaMemcpyHostToDevice));
    }
    SAKER_ASSIGN_OR_RETURN(L.gate_up, upload_fused(gu));
    SAKER_ASSIGN_OR_RETURN(L.wo, cuda::upload_matrix(std::span<const TensorView>(&wo, 1)));
    SAKER_ASSIGN_OR_RETURN(L.down, cuda::upload_matrix(std::span<const TensorView>(&down, 1)));
    weight_bytes_ += L.wo.bytes + L.down.bytes;
    layers_.push_back(std::move(L));
  }
  return {};
}

Result<std::unique_ptr<KvStorage>> CudaDecoder::allocate_kv(const KvCacheConfig& c) const {
  const ModelHParams& h = hp_;
  if (c.n_layer != h.n_layer || c.n_head_kv != h.n_head_kv || c.head_dim != h.head_dim) {
    return make_error(StatusCode::kInvalidArgument,
                      "KV cache of {} layers x {} kv heads x {} does not fit the model's {} x {} x {}", c.n_layer,
                      c.n_head_kv, c.head_dim, h.n_layer, h.n_head_kv, h.head_dim);
  }
  if (c.dtype != DType::kF16) {
    return make_error(StatusCode::kUnsupported, "the CUDA decoder keeps KV in f16 (asked for {}): use kv_dtype()",
                      dtype_name(c.dtype));
  }
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<CudaKvStorage> kv, CudaKvStorage::create(c));
  SAKER_LOG_INFO("CUDA decoder: KV cache of {} tokens on the GPU ({} MiB, f16)", c.n_blocks * c.block_size,
                 kv->size_bytes() >> 20);
  return std::unique_ptr<KvStorage>(std::move(kv));
}

Result<CudaDecoder::DeviceKv> CudaDecoder::bind_kv(std::span<const LayerKv> kv) const {
  const ModelHParams& h = hp_;
  if (static_cast<int64_t>(kv.size()) != h.n_layer) {
    return make_error(StatusCode::kInvalidArgument, "forward: {} KV layers given for {} model layers", kv.size(),
                      h.n_layer);
  }
  DeviceKv d;
  const TensorView& k0 = kv[0].k;
  if (k0.n_dims == 4) {
    d.n_blocks = k0.dim(0);
    d.block_size = k0.dim(1);
  }
  d.pointers.resize(2 * kv.size());
  for (size_t l = 0; l < kv.size(); ++l) {
    for (int which = 0; which < 2; ++which) {
      const TensorView& t = which == 0 ? kv[l].k : kv[l].v;
      if (t.device != Device::kCuda || t.data == nullptr) {
        return make_error(StatusCode::kInvalidArgument,
                          "forward: the KV views of layer {} are not GPU memory (device {}): the CUDA decoder reads "
                          "KV storage from its allocate_kv",
                          l, device_name(t.device));
      }
      if (t.dtype != DType::kF16) {
        return make_error(StatusCode::kInvalidArgument, "forward: KV of layer {} is {}; the CUDA decoder reads f16", l,
                          dtype_name(t.dtype));
      }
      if (t.n_dims != 4 || t.dim(0) != d.n_blocks || t.dim(1) != d.block_size || t.dim(2) != h.n_head_kv ||
          t.dim(3) != h.head_dim || d.n_blocks <= 0 || d.block_size <= 0 || !t.is_contiguous()) {
        return make_error(StatusCode::kInvalidArgument,
                          "forward: KV cache {} of layer {} does not fit {} kv heads of {} (contiguous, the same "
                          "blocks in every layer)",
                          t.shape_string(), l, h.n_head_kv, h.head_dim);
      }
      (which == 0 ? d.k : d.v).push_back(static_cast<__half*>(t.data));
      d.pointers[which * kv.size() + l] = t.data;
    }
  }
  return d;
}

Status CudaDecoder::drop_graphs() {
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  for (auto& [shape, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
  return {};
}

Status CudaDecoder::touch_kv_binding(const std::vector<const void*>& kv) {
  kv_bindings_[kv] = ++n_steps_;
  if (kv_bindings_.size() <= kMaxKvBindings) return {};
  auto oldest = std::min_element(kv_bindings_.begin(), kv_bindings_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  for (auto it = graphs_.begin(); it != graphs_.end();) {
    if (it->first.kv == oldest->first) {
      cudaGraphExecDestroy(it->second);
      it = graphs_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(seen_shapes_, [&](const StepShape& s) { return s.kv == oldest->first; });
  kv_bindings_.erase(oldest);
  return {};
}

cuda::AttentionLaunch CudaDecoder::attention_launch(int64_t ctx_capacity) const {
  cuda::AttentionLaunch launch;
  launch.n_head = static_cast<int32_t>(hp_.n_head);
  launch.n_head_kv = static_cast<int32_t>(hp_.n_head_kv);
  launch.head_dim = static_cast<int32_t>(hp_.head_dim);
  launch.max_ctx = static_cast<int32_t>(ctx_capacity);
  return launch;
}

Status CudaDecoder::ensure_attention_workspace(size_t bytes) {
  if (bytes <= attn_ws_bytes_) return {};
  // Graphs captured so far point at the old workspace: drop them before it goes.
  SAKER_RETURN_IF_ERROR(drop_graphs());
  const size_t grown = std::max(bytes, attn_ws_bytes_ * 2);
  if (attn_ws_) mem_.release(attn_ws_);
  attn_ws_ = nullptr;
  attn_ws_bytes_ = 0;
  SAKER_ASSIGN_OR_RETURN(attn_ws_, mem_.alloc(grown, "the attention workspace"));
  attn_ws_bytes_ = grown;
  return {};
}

Status CudaDecoder::ensure_input_capacity(int64_t n) {
  if (n <= in_capacity_) return {};
  // Graphs copy from and to the old buffers: drop them, then the buffers.
  SAKER_RETURN_IF_ERROR(drop_graphs());
  mem_.release(in_host_);
  mem_.release(in_dev_);
  const int64_t cap = std::max<int64_t>(n, 2 * in_capacity_);
  SAKER_ASSIGN_OR_RETURN(void* hp, mem_.alloc_host(cap * sizeof(int32_t), "step inputs"));
  SAKER_ASSIGN_OR_RETURN(in_dev_, mem_.alloc_array<int32_t>(cap, "step inputs"));
  in_host_ = static_cast<int32_t*>(hp);
  in_capacity_ = cap;
  return {};
}

Status CudaDecoder::matmul_fused(const FusedMatrix& m, const float* x, int64_t rows, float* out, int64_t out_stride) {
  for (size_t i = 0; i < m.parts.size(); ++i) {
    SAKER_RETURN_IF_ERROR(cuda::matmul(*matmul_, m.parts[i], x, rows, out + m.column[i], out_stride, false, stream_));
  }
  return {};
}

Status CudaDecoder::enqueue_layers(int64_t T, const cuda::DeviceAttentionBatch& batch,
                                   const cuda::AttentionLaunch& launch, const DeviceKv& kv) {
  const ModelHParams& h = hp_;
  const int64_t qkv_w = h.q_dim() + 2 * h.kv_dim();
  const int32_t* positions = batch.data + batch.layout.token_pos;
  // Global layers: the file's RoPE base, scaling and frequency factors; local (sliding-window) layers of
  // Gemma 3: their own base and no scaling, like the CPU decoder.
  cuda::RopeConfig rope_global;
  rope_global.neox = h.rope_style == ref::RopeStyle::kNeox;
  rope_global.n_rot = static_cast<int32_t>(h.n_rot);
  rope_global.theta_base = static_cast<float>(h.rope_theta);
  rope_global.freq_scale = static_cast<float>(h.rope_freq_scale);
  rope_global.freq_factors = rope_freqs_;
  cuda::RopeConfig rope_local = rope_global;
  rope_local.theta_base = static_cast<float>(h.rope_theta_swa > 0 ? h.rope_theta_swa : h.rope_theta);
  rope_local.freq_scale = 1.0f;
  cuda::AttentionLaunch attn_global = launch;
  attn_global.scale = h.attn_scale;
  attn_global.soft_cap = h.attn_soft_cap;
  cuda::AttentionLaunch attn_local = attn_global;
  attn_local.sliding_window = static_cast<int32_t>(h.sliding_window);
  const bool geglu = h.arch == "gemma3";

  for (int64_t l = 0; l < h.n_layer; ++l) {
    const Layer& L = layers_[l];
    const bool local = h.layer_is_local(l);
    const cuda::RopeConfig& rope = local ? rope_local : rope_global;
    // Attention block: x += [post_norm] Wo attn(rope(norm(q)), rope(norm(k)), v), q|k|v from one matmul.
    SAKER_RETURN_IF_ERROR(cuda::rms_norm(x_, L.attn_norm, h_, T, h.n_embd, h.rms_eps, false, stream_));
    SAKER_RETURN_IF_ERROR(matmul_fused(L.qkv, h_, T, qkv_, qkv_w));
    if (L.qkv_bias) SAKER_RETURN_IF_ERROR(cuda::add_row_bias(qkv_, L.qkv_bias, T, qkv_w, qkv_w, stream_));
    float* q = qkv_;                         // [T, n_head, head_dim] inside rows of qkv_w
    float* k = qkv_ + h.q_dim();             // [T, n_head_kv, head_dim]
    const float* v = qkv_ + h.q_dim() + h.kv_dim();
    if (!debug_env().cuda_unfused) {  // one launch: per-head norms, RoPE, K/V into the cache
      SAKER_RETURN_IF_ERROR(cuda::qk_norm_rope_kv_write(
          qkv_, qkv_w, static_cast<int32_t>(h.n_head), static_cast<int32_t>(h.n_head_kv),
          static_cast<int32_t>(h.head_dim), L.q_norm, L.k_norm, h.rms_eps, false, positions, rope, kv.k[l], kv.v[l],
          batch, stream_));
    } else {
      SAKER_RETURN_IF_ERROR(cuda::head_norm_rope(q, T, qkv_w, static_cast<int32_t>(h.n_head),
                                                 static_cast<int32_t>(h.head_dim), L.q_norm, h.rms_eps, false,
                                                 positions, rope, stream_));
      SAKER_RETURN_IF_ERROR(cuda::head_norm_rope(k, T, qkv_w, static_cast<int32_t>(h.n_head_kv),
                                                 static_cast<int32_t>(h.head_dim), L.k_norm, h.rms_eps, false,
                                                 positions, rope, stream_));
      SAKER_RETURN_IF_ERROR(cuda::kv_write(k, v, qkv_w, kv.k[l], kv.v[l], batch, static_cast<int32_t>(h.n_head_kv),
                                           static_cast<int32_t>(h.head_dim), stream_));
    }
    SAKER_RETURN_IF_ERROR(cuda::attention(q, qkv_w, kv.k[l], kv.v[l], batch, local ? attn_local : attn_global, attn_,
                                          attn_ws_, attn_ws_bytes_, stream_));
    SAKER_RETURN_IF_ERROR(project_residual(L.wo, attn_, T, L.post_attn_norm));
    // MLP block: x += [post_norm] W_down (act(W_gate h) * W_up h), gate|up from one matmul.
    SAKER_RETURN_IF_ERROR(cuda::rms_norm(x_, L.ffn_norm, h_, T, h.n_embd, h.rms_eps, false, stream_));
    SAKER_RETURN_IF_ERROR(matmul_fused(L.gate_up, h_, T, gu_, 2 * h.n_ff));
    SAKER_RETURN_IF_ERROR(geglu ? cuda::geglu_tanh(gu_, gu_ + h.n_ff, 2 * h.n_ff, act_, T, h.n_ff, stream_)
                                : cuda::swiglu(gu_, gu_ + h.n_ff, 2 * h.n_ff, act_, T, h.n_ff, stream_));
    SAKER_RETURN_IF_ERROR(project_residual(L.down, act_, T, L.post_ffn_norm));
  }
  return {};
}

Status CudaDecoder::project_residual(const cuda::DeviceMatrix& w, const float* in, int64_t T, const float* post_norm) {
  const ModelHParams& h = hp_;
  if (!post_norm) return cuda::matmul(*matmul_, w, in, T, x_, h.n_embd, true, stream_);  // residual in the epilogue
  // Gemma: the block's output is normed before it joins the residual stream.
  SAKER_RETURN_IF_ERROR(cuda::matmul(*matmul_, w, in, T, h_, h.n_embd, false, stream_));
  SAKER_RETURN_IF_ERROR(cuda::rms_norm(h_, post_norm, h_, T, h.n_embd, h.rms_eps, false, stream_));
  return cuda::add_f32(x_, h_, x_, T * h.n_embd, stream_);
}

Status CudaDecoder::enqueue_head(const int32_t* rows_dev, int64_t n_rows, bool want_logits, bool want_argmax) {
  const ModelHParams& h = hp_;
  SAKER_RETURN_IF_ERROR(cuda::gather_rows(x_, rows_dev, n_rows, h.n_embd, xo_, stream_));
  SAKER_RETURN_IF_ERROR(cuda::rms_norm(xo_, output_norm_, xo_, n_rows, h.n_embd, h.rms_eps, false, stream_));
  SAKER_RETURN_IF_ERROR(cuda::matmul(*matmul_, output_, xo_, n_rows, logits_dev_, h.n_vocab, false, stream_));
  if (h.final_soft_cap > 0.0f) {
    SAKER_RETURN_IF_ERROR(cuda::soft_cap(logits_dev_, n_rows * h.n_vocab, h.final_soft_cap, stream_));
  }
  if (want_argmax) {  // greedy: n_rows ids cross the bus instead of [n_rows, n_vocab] logits
    SAKER_RETURN_IF_ERROR(cuda::argmax_rows(logits_dev_, n_rows, h.n_vocab, argmax_dev_, stream_));
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(argmax_host_, argmax_dev_, n_rows * sizeof(int32_t),
                                               cudaMemcpyDeviceToHost, stream_));
  }
  if (want_logits) {
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logits_host_, logits_dev_, n_rows * h.n_vocab * sizeof(float),
                                               cudaMemcpyDeviceToHost, stream_));
  }
  return {};
}

Status CudaDecoder::take_outputs(const ForwardBatch& fb, int64_t first, int64_t n, float* logits) const {
  const int64_t n_vocab = hp_.n_vocab;
  if (logits && n > 0) std::memcpy(logits + first * n_vocab, logits_host_, n * n_vocab * sizeof(float));
  if (fb.argmax) {
    for (int64_t i = 0; i < n; ++i) {
      if (argmax_host_[i] < 0) {
        return make_error(StatusCode::kInternal, "forward: the logits of output {} are all NaN", first + i);
      }
      fb.argmax[first + i] = argmax_host_[i];
    }
  }
  return {};
}

Status CudaDecoder::enqueue_step(const StepShape& s, const DeviceKv& kv, const cuda::PackedAttentionLayout& layout) {
  const ModelHParams& h = hp_;
  const int64_t n_in = s.n_tokens + s.n_out + layout.total;
  SAKER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(in_dev_, in_host_, n_in * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  const int32_t* tokens = in_dev_;
  const int32_t* rows = in_dev_ + s.n_tokens;
  cuda::DeviceAttentionBatch batch;
  batch.layout = layout;
  batch.data = in_dev_ + s.n_tokens + s.n_out;
  batch.block_size = static_cast<int32_t>(kv.block_size);
  const cuda::AttentionLaunch launch = attention_launch(s.ctx_capacity);
  SAKER_RETURN_IF_ERROR(cuda::embedding(token_embd_, tokens, s.n_tokens, h.embed_scale, x_, stream_));
  SAKER_RETURN_IF_ERROR(enqueue_layers(s.n_tokens, batch, launch, kv));
  if (s.n_out > 0 && s.n_out <= head_rows_) {
    SAKER_RETURN_IF_ERROR(enqueue_head(rows, s.n_out, s.want_logits, s.want_argmax));
  }
  return {};
}

Status CudaDecoder::run_chunk(const ForwardBatch& fb, const DeviceKv& kv, float* logits) {
  const int64_t T = fb.attn.n_tokens();
  const int64_t n_out = static_cast<int64_t>(fb.output_rows.size());

  // Context capacity: a power of two covering every sequence, so a graph serves many steps; block tables
  // are padded (with block 0, never read) or cut to exactly that many blocks, which fixes the packed layout.
  int32_t max_ctx = 0;
  for (const AttentionSequence& q : fb.attn.sequences) max_ctx = std::max(max_ctx, q.n_ctx);
  const int64_t cache_tokens = kv.n_blocks * kv.block_size;
  const int64_t ctx_cap = std::min(cache_tokens, std::max(kMinCtxCapacity, next_pow2(max_ctx)));
  const int64_t table_len = (ctx_cap + kv.block_size - 1) / kv.block_size;
  std::vector<std::vector<int32_t>> tables(fb.attn.sequences.size());
  std::vector<AttentionSequence> seqs(fb.attn.sequences.begin(), fb.attn.sequences.end());
  for (size_t i = 0; i < seqs.size(); ++i) {
    tables[i].assign(table_len, 0);
    const auto& src = fb.attn.sequences[i].block_table;
    std::copy_n(src.begin(), std::min<int64_t>(table_len, static_cast<int64_t>(src.size())), tables[i].begin());
    seqs[i].block_table = tables[i];
  }
  AttentionBatch padded = fb.attn;
  padded.sequences = seqs;
  std::vector<int32_t> packed;
  const cuda::PackedAttentionLayout layout = cuda::pack_attention_batch(padded, &packed);

  StepShape s;
  s.n_tokens = T;
  s.n_out = n_out;
  s.n_seqs = static_cast<int64_t>(seqs.size());
  s.packed_total = layout.total;
  s.ctx_capacity = ctx_cap;
  s.block_size = kv.block_size;
  s.want_logits = logits != nullptr;
  s.want_argmax = fb.argmax != nullptr;
  s.kv = kv.pointers;

  cuda::DeviceAttentionBatch probe;
  probe.layout = layout;
  probe.block_size = static_cast<int32_t>(kv.block_size);
  SAKER_RETURN_IF_ERROR(ensure_attention_workspace(cuda::attention_workspace_bytes(probe, attention_launch(ctx_cap))));
  SAKER_RETURN_IF_ERROR(ensure_input_capacity(T + n_out + layout.total));

  std::copy(fb.tokens.begin(), fb.tokens.end(), in_host_);
  std::copy(fb.output_rows.begin(), fb.output_rows.end(), in_host_ + T);
  std::copy(packed.begin(), packed.end(), in_host_ + T + n_out);

  const bool use_graph = options_.cuda_graphs && T <= kGraphMaxTokens && T <= matmul_->max_kernel_rows() &&
                         n_out <= head_rows_;
  // A shape runs eagerly the first time (library kernels load lazily, which must not happen inside a
  // capture) and is captured the second time, then replayed.
  if (use_graph) SAKER_RETURN_IF_ERROR(touch_kv_binding(s.kv));
  const bool seen = use_graph && !seen_shapes_.insert(s).second;
  if (use_graph && seen) {
    auto it = graphs_.find(s);
    if (it == graphs_.end()) {
      cudaGraph_t graph = nullptr;
      SAKER_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      const Status st = enqueue_step(s, kv, layout);
      const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
      SAKER_RETURN_IF_ERROR(st);
      SAKER_CUDA_RETURN_IF_ERROR(end);
      cudaGraphExec_t exec = nullptr;
      const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      SAKER_CUDA_RETURN_IF_ERROR(inst);
      it = graphs_.emplace(s, exec).first;
    }
    SAKER_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(it->second, stream_));
  } else {
    SAKER_RETURN_IF_ERROR(enqueue_step(s, kv, layout));
  }

  if (n_out <= head_rows_) {
    SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return take_outputs(fb, 0, n_out, logits);
  }
  // More outputs than one head pass holds (prompt logits of a long prompt): slices, each copied out.
  for (int64_t b = 0; b < n_out; b += head_rows_) {
    const int64_t n = std::min(head_rows_, n_out - b);
    SAKER_RETURN_IF_ERROR(enqueue_head(in_dev_ + T + b, n, s.want_logits, s.want_argmax));
    SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    SAKER_RETURN_IF_ERROR(take_outputs(fb, b, n, logits));
  }
  return {};
}

Status CudaDecoder::forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) {
  const ModelHParams& h = hp_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  if (T == 0) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  if (batch.attn.n_tokens() != T) {
    return make_error(StatusCode::kInvalidArgument, "forward: {} tokens but attention metadata for {}", T,
                      batch.attn.n_tokens());
  }
  for (int32_t r : batch.output_rows) {
    if (r < 0 || r >= T) return make_error(StatusCode::kInvalidArgument, "forward: output row {} outside the batch", r);
  }
  if (!batch.output_rows.empty() && logits == nullptr && batch.argmax == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "forward: output rows but neither logits nor argmax wanted");
  }
  for (int32_t t : batch.tokens) {
    if (t < 0 || t >= h.n_vocab) {
      return make_error(StatusCode::kInvalidArgument, "forward: token {} outside the vocabulary (0..{})", t,
                        h.n_vocab - 1);
    }
  }
  SAKER_ASSIGN_OR_RETURN(const DeviceKv dkv, bind_kv(kv));
  SAKER_RETURN_IF_ERROR(batch.attn.validate(dkv.n_blocks, dkv.block_size));
  if (T <= max_tokens_) return run_chunk(batch, dkv, logits);

  // Split a long batch into chunks in batch order. Causal and tree queries only see keys written by earlier
  // tokens, so chunk i sees everything it needs once chunks < i have run; a full (bidirectional) mask or a
  // tree that straddles chunks cannot be split.
  for (const AttentionSequence& q : batch.attn.sequences) {
    if (q.mask != AttentionMask::kCausal) {
      return make_error(StatusCode::kInvalidArgument,
                        "forward: a batch of {} tokens with a tree or full mask exceeds the CUDA batch size {}", T,
                        max_tokens_);
    }
  }
  for (int64_t b = 0; b < T; b += max_tokens_) {
    const int64_t e = std::min(T, b + max_tokens_);
    std::vector<int32_t> rows;
    std::vector<int64_t> where;  // index into batch.output_rows of each chunk output
    for (size_t i = 0; i < batch.output_rows.size(); ++i) {
      const int32_t r = batch.output_rows[i];
      if (r >= b && r < e) {
        rows.push_back(static_cast<int32_t>(r - b));
        where.push_back(static_cast<int64_t>(i));
      }
    }
    ForwardBatch sub;
    sub.tokens = batch.tokens.subspan(b, e - b);
    sub.attn = batch.attn;
    sub.attn.token_seq = batch.attn.token_seq.subspan(b, e - b);
    sub.attn.token_slot = batch.attn.token_slot.subspan(b, e - b);
    sub.attn.token_pos = batch.attn.token_pos.subspan(b, e - b);
    sub.attn.token_parent = {};
    sub.output_rows = rows;
    std::vector<float> chunk_logits(logits ? rows.size() * h.n_vocab : 0);  // [chunk outputs, n_vocab]
    std::vector<int32_t> chunk_ids(rows.size());                             // [chunk outputs]
    sub.argmax = batch.argmax ? chunk_ids.data() : nullptr;
    SAKER_RETURN_IF_ERROR(run_chunk(sub, dkv, logits ? chunk_logits.data() : nullptr));
    for (size_t i = 0; i < where.size(); ++i) {
      if (logits) {
        std::memcpy(logits + where[i] * h.n_vocab, chunk_logits.data() + i * h.n_vocab, h.n_vocab * sizeof(float));
      }
      if (batch.argmax) batch.argmax[where[i]] = chunk_ids[i];
    }
  }
  return {};
}

}  // namespace saker
