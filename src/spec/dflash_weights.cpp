#include "spec/dflash_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/cpu/convert.h"

namespace saker::spec {
namespace {

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

}  // namespace

Result<TensorView> DFlashWeights::load_tensor(const SafetensorsFile& file, const std::string& name,
                                              std::vector<int64_t> shape) {
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
  HostBuffer buf(static_cast<size_t>(n) * sizeof(float), false);
  // Row by row through the file bytes (tensor_bytes() has no alignment requirement).
  cpu::to_f32_row(*info->dtype, file.tensor_bytes(*info).data(), buf.as<float>(), n, false);
  TensorView v = TensorView::contiguous(buf.as<float>(), DType::kF32, shape.data(), static_cast<int>(shape.size()));
  owned_.push_back(std::move(buf));
  return v;
}

Result<std::shared_ptr<const DFlashWeights>> DFlashWeights::load(const std::string& dir,
                                                                 std::shared_ptr<const ModelWeights> target) {
  if (!target) return make_error(StatusCode::kInvalidArgument, "a drafter needs its target model's weights");
  auto w = std::make_shared<DFlashWeights>();
  SAKER_ASSIGN_OR_RETURN(w->config, DFlashConfig::load(dir));
  const DFlashConfig& c = w->config;
  const ModelHParams& t = target->hparams();
  SAKER_RETURN_IF_ERROR(c.check_target(t));
  w->target = target;
  SAKER_ASSIGN_OR_RETURN(w->token_embd, target->require("token_embd.weight", {t.n_vocab, t.n_embd}));
  if (target->find("output.weight")) {
    SAKER_ASSIGN_OR_RETURN(w->output, target->require("output.weight", {t.n_vocab, t.n_embd}));
  } else {
    w->output = w->token_embd;
  }
  SAKER_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(dir + "/model.safetensors"));
  const int64_t H = c.n_embd, n_taps = static_cast<int64_t>(c.target_layers.size());
  SAKER_ASSIGN_OR_RETURN(w->fc, w->load_tensor(file, "fc.weight", {H, n_taps * H}));
  SAKER_ASSIGN_OR_RETURN(w->hidden_norm, w->load_tensor(file, "hidden_norm.weight", {H}));
  SAKER_ASSIGN_OR_RETURN(w->norm, w->load_tensor(file, "norm.weight", {H}));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    Layer L;
    SAKER_ASSIGN_OR_RETURN(L.input_norm, w->load_tensor(file, p + "input_layernorm.weight", {H}));
    SAKER_ASSIGN_OR_RETURN(L.post_attn_norm, w->load_tensor(file, p + "post_attention_layernorm.weight", {H}));
    SAKER_ASSIGN_OR_RETURN(L.wq, w->load_tensor(file, p + "self_attn.q_proj.weight", {c.q_dim(), H}));
    SAKER_ASSIGN_OR_RETURN(L.wk, w->load_tensor(file, p + "self_attn.k_proj.weight", {c.kv_dim(), H}));
    SAKER_ASSIGN_OR_RETURN(L.wv, w->load_tensor(file, p + "self_attn.v_proj.weight", {c.kv_dim(), H}));
    SAKER_ASSIGN_OR_RETURN(L.wo, w->load_tensor(file, p + "self_attn.o_proj.weight", {H, c.q_dim()}));
    SAKER_ASSIGN_OR_RETURN(L.q_norm, w->load_tensor(file, p + "self_attn.q_norm.weight", {c.head_dim}));
    SAKER_ASSIGN_OR_RETURN(L.k_norm, w->load_tensor(file, p + "self_attn.k_norm.weight", {c.head_dim}));
    SAKER_ASSIGN_OR_RETURN(L.w_gate, w->load_tensor(file, p + "mlp.gate_proj.weight", {c.n_ff, H}));
    SAKER_ASSIGN_OR_RETURN(L.w_up, w->load_tensor(file, p + "mlp.up_proj.weight", {c.n_ff, H}));
    SAKER_ASSIGN_OR_RETURN(L.w_down, w->load_tensor(file, p + "mlp.down_proj.weight", {H, c.n_ff}));
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

}  // namespace saker::spec
