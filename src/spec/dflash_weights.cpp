#include "spec/dflash_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>

#include "core/half.h"
#include "core/splitmix.h"
#include "ops/cpu/convert.h"

namespace saker::spec {
namespace {

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

}  // namespace

Result<TensorView> DFlashWeights::load_tensor(const SafetensorsFile& file, const std::string& name,
                                              std::vector<int64_t> shape, bool keep_dtype) {
  const SafetensorsTensorInfo* info = file.find_tensor(name);
  if (!info) return make_error(StatusCode::kNotFound, "{}: missing tensor {}", file.path(), name);
  if (info->shape != shape) {
    return make_error(StatusCode::kInvalidArgument, "{}: tensor {} has shape {}, expected {} (from config.json)",
                      file.path(), name, shape_str(info->shape), shape_str(shape));
  }
  if (!info->dtype || (*info->dtype != DType::kBF16 && *info->dtype != DType::kF16 && *info->dtype != DType::kF32)) {
    return make_error(StatusCode::kUnsupported, "{}: tensor {} is {}; a drafter's weights must be BF16, F16 or F32",
                      file.path(), name, info->dtype_name);
  }
  const int64_t n = info->n_elements();
  const std::span<const uint8_t> bytes = file.tensor_bytes(*info);
  const DType dtype = keep_dtype ? *info->dtype : DType::kF32;
  HostBuffer buf(keep_dtype ? bytes.size() : static_cast<size_t>(n) * sizeof(float), false);
  if (keep_dtype) {
    std::memcpy(buf.data(), bytes.data(), bytes.size());  // the file's bytes have no alignment promise
  } else {
    cpu::to_f32_row(*info->dtype, bytes.data(), buf.as<float>(), n, false);
  }
  TensorView v = TensorView::contiguous(buf.data(), dtype, shape.data(), static_cast<int>(shape.size()));
  owned_.push_back(std::move(buf));
  return v;
}

Status DFlashWeights::borrow_target(std::shared_ptr<const ModelWeights> target) {
  const ModelHParams& t = target->hparams();
  SAKER_RETURN_IF_ERROR(config.check_target(t));
  this->target = target;
  SAKER_ASSIGN_OR_RETURN(token_embd, target->require("token_embd.weight", {t.n_vocab, t.n_embd}));
  if (target->find("output.weight")) {
    SAKER_ASSIGN_OR_RETURN(output, target->require("output.weight", {t.n_vocab, t.n_embd}));
  } else {
    output = token_embd;
  }
  return {};
}

Result<std::shared_ptr<const DFlashWeights>> DFlashWeights::load(const std::string& dir,
                                                                 std::shared_ptr<const ModelWeights> target) {
  if (!target) return make_error(StatusCode::kInvalidArgument, "a drafter needs its target model's weights");
  auto w = std::make_shared<DFlashWeights>();
  SAKER_ASSIGN_OR_RETURN(w->config, DFlashConfig::load(dir));
  SAKER_RETURN_IF_ERROR(w->borrow_target(std::move(target)));
  const DFlashConfig& c = w->config;
  SAKER_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(dir + "/model.safetensors"));
  const int64_t H = c.n_embd, n_taps = static_cast<int64_t>(c.target_layers.size());
  const auto matrix = [&](const std::string& name, std::vector<int64_t> shape) {
    return w->load_tensor(file, name, std::move(shape), true);
  };
  const auto vector = [&](const std::string& name, int64_t n) { return w->load_tensor(file, name, {n}, false); };
  SAKER_ASSIGN_OR_RETURN(w->fc, matrix("fc.weight", {H, n_taps * H}));
  SAKER_ASSIGN_OR_RETURN(w->hidden_norm, vector("hidden_norm.weight", H));
  SAKER_ASSIGN_OR_RETURN(w->norm, vector("norm.weight", H));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    Layer L;
    SAKER_ASSIGN_OR_RETURN(L.input_norm, vector(p + "input_layernorm.weight", H));
    SAKER_ASSIGN_OR_RETURN(L.post_attn_norm, vector(p + "post_attention_layernorm.weight", H));
    SAKER_ASSIGN_OR_RETURN(L.wq, matrix(p + "self_attn.q_proj.weight", {c.q_dim(), H}));
    SAKER_ASSIGN_OR_RETURN(L.wk, matrix(p + "self_attn.k_proj.weight", {c.kv_dim(), H}));
    SAKER_ASSIGN_OR_RETURN(L.wv, matrix(p + "self_attn.v_proj.weight", {c.kv_dim(), H}));
    SAKER_ASSIGN_OR_RETURN(L.wo, matrix(p + "self_attn.o_proj.weight", {H, c.q_dim()}));
    SAKER_ASSIGN_OR_RETURN(L.q_norm, vector(p + "self_attn.q_norm.weight", c.head_dim));
    SAKER_ASSIGN_OR_RETURN(L.k_norm, vector(p + "self_attn.k_norm.weight", c.head_dim));
    SAKER_ASSIGN_OR_RETURN(L.w_gate, matrix(p + "mlp.gate_proj.weight", {c.n_ff, H}));
    SAKER_ASSIGN_OR_RETURN(L.w_up, matrix(p + "mlp.up_proj.weight", {c.n_ff, H}));
    SAKER_ASSIGN_OR_RETURN(L.w_down, matrix(p + "mlp.down_proj.weight", {H, c.n_ff}));
    w->layers.push_back(L);
  }
  const size_t expected = 3 + 11 * static_cast<size_t>(c.n_layer);
  if (file.tensors().size() != expected) {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: {} tensors, expected {} for {} draft layers (a DFlash drafter has no embedding or head "
                      "of its own)", file.path(), file.tensors().size(), expected, c.n_layer);
  }
  return std::shared_ptr<const DFlashWeights>(std::move(w));
}

// Uniform in [-scale, scale) (scale 0: all ones, a norm's weight).
TensorView DFlashWeights::random_tensor(DType dtype, std::vector<int64_t> shape, float scale, uint64_t* state) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const bool bf16 = dtype == DType::kBF16;
  HostBuffer buf(static_cast<size_t>(n) * (bf16 ? sizeof(uint16_t) : sizeof(float)), false);
  for (int64_t i = 0; i < n; ++i) {
    const float u = static_cast<float>(splitmix64(*state) >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    const float v = scale > 0 ? (2.0f * u - 1.0f) * scale : 1.0f;
    if (bf16) {
      buf.as<uint16_t>()[i] = fp32_to_bf16(v);
    } else {
      buf.as<float>()[i] = v;
    }
  }
  TensorView t = TensorView::contiguous(buf.data(), dtype, shape.data(), static_cast<int>(shape.size()));
  owned_.push_back(std::move(buf));
  return t;
}

Result<std::shared_ptr<const DFlashWeights>> DFlashWeights::random(std::shared_ptr<const ModelWeights> target,
                                                                   int64_t n_layer, int64_t block_size, uint64_t seed) {
  if (!target) return make_error(StatusCode::kInvalidArgument, "a drafter needs its target model's weights");
  if (n_layer < 1) return make_error(StatusCode::kInvalidArgument, "a drafter needs at least one layer");
  if (block_size < 2) return make_error(StatusCode::kInvalidArgument, "a drafter's block holds at least 2 rows");
  const ModelHParams& t = target->hparams();
  auto w = std::make_shared<DFlashWeights>();
  DFlashConfig& c = w->config;
  c.n_layer = n_layer;
  c.n_embd = t.n_embd;
  c.n_head = t.n_head;
  c.n_head_kv = t.n_head_kv;
  c.head_dim = t.head_dim;
  c.n_ff = t.n_ff;
  c.n_vocab = t.n_vocab;
  c.block_size = block_size;
  c.mask_token = static_cast<int32_t>(t.n_vocab - 1);
  c.target_layers = DFlashConfig::spread_taps(t.n_layer, n_layer);
  c.rms_eps = t.rms_eps;
  c.rope_theta = t.rope_theta;
  SAKER_RETURN_IF_ERROR(w->borrow_target(std::move(target)));
  uint64_t state = seed;
  const int64_t H = c.n_embd, n_taps = static_cast<int64_t>(c.target_layers.size());
  // Weights of about unit gain (uniform, variance 1 / n_in), so activations stay in range layer after layer.
  const auto matrix = [&](int64_t n_out, int64_t n_in) {
    return w->random_tensor(DType::kBF16, {n_out, n_in}, std::sqrt(3.0f / static_cast<float>(n_in)), &state);
  };
  const auto ones = [&](int64_t n) { return w->random_tensor(DType::kF32, {n}, 0.0f, &state); };
  w->fc = matrix(H, n_taps * H);
  w->hidden_norm = ones(H);
  w->norm = ones(H);
  for (int64_t l = 0; l < n_layer; ++l) {
    Layer L;
    L.input_norm = ones(H);
    L.post_attn_norm = ones(H);
    L.wq = matrix(c.q_dim(), H);
    L.wk = matrix(c.kv_dim(), H);
    L.wv = matrix(c.kv_dim(), H);
    L.wo = matrix(H, c.q_dim());
    L.q_norm = ones(c.head_dim);
    L.k_norm = ones(c.head_dim);
    L.w_gate = matrix(c.n_ff, H);
    L.w_up = matrix(c.n_ff, H);
    L.w_down = matrix(H, c.n_ff);
    w->layers.push_back(L);
  }
  return std::shared_ptr<const DFlashWeights>(std::move(w));
}

}  // namespace saker::spec
