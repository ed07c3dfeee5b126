#include "models/hparams.h"

#include <fmt/format.h>

#include <cmath>

namespace saker {

namespace {

struct ArchInfo {
  const char* gguf;
  const char* hf;
  ref::RopeStyle gguf_rope;
};
// The RoPE style is that of the GGUF layout: llama.cpp permutes llama's Q/K rows when converting so that
// the interleaved rotation applies; HF folders always use rotate-half (NeoX) on unpermuted weights.
constexpr ArchInfo kArchs[] = {
    {"qwen3", "Qwen3ForCausalLM", ref::RopeStyle::kNeox},
    {"qwen2", "Qwen2ForCausalLM", ref::RopeStyle::kNeox},  // llama.cpp keeps Qwen2's Q/K rows unpermuted
    {"llama", "LlamaForCausalLM", ref::RopeStyle::kInterleaved},
    {"gemma3", "Gemma3ForCausalLM", ref::RopeStyle::kNeox},
};

const ArchInfo* find_gguf(const std::string& a) {
  for (const auto& i : kArchs) {
    if (a == i.gguf) return &i;
  }
  return nullptr;
}

std::string supported_list() {
  std::string s;
  for (const auto& i : kArchs) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", i.gguf, i.hf);
  return s;
}

}  // namespace

bool is_supported_architecture(const std::string& gguf_arch) { return find_gguf(gguf_arch) != nullptr; }

Status ModelHParams::validate() const {
  auto positive = [](int64_t v, const char* name) -> Status {
    if (v <= 0) return make_error(StatusCode::kCorruptFile, "hyper-parameter {} must be positive (got {})", name, v);
    return {};
  };
  SAKER_RETURN_IF_ERROR(positive(n_vocab, "vocab size"));
  SAKER_RETURN_IF_ERROR(positive(n_embd, "embedding_length / hidden_size"));
  SAKER_RETURN_IF_ERROR(positive(n_layer, "block_count / num_hidden_layers"));
  SAKER_RETURN_IF_ERROR(positive(n_head, "attention.head_count / num_attention_heads"));
  SAKER_RETURN_IF_ERROR(positive(n_head_kv, "attention.head_count_kv / num_key_value_heads"));
  SAKER_RETURN_IF_ERROR(positive(head_dim, "attention.key_length / head_dim"));
  SAKER_RETURN_IF_ERROR(positive(n_ff, "feed_forward_length / intermediate_size"));
  if (n_head % n_head_kv != 0) {
    return make_error(StatusCode::kCorruptFile, "head count {} is not a multiple of the KV head count {}", n_head,
                      n_head_kv);
  }
  if (head_dim % 2 != 0) return make_error(StatusCode::kCorruptFile, "head_dim {} must be even for RoPE", head_dim);
  if (!(rms_eps > 0)) return make_error(StatusCode::kCorruptFile, "RMSNorm epsilon must be positive");
  if (!(rope_theta > 0)) return make_error(StatusCode::kCorruptFile, "rope theta must be positive");
  if (n_rot < 0 || n_rot > head_dim || n_rot % 2 != 0) {
    return make_error(StatusCode::kCorruptFile, "rope.dimension_count {} must be even and at most head_dim {}", n_rot,
                      head_dim);
  }
  return {};
}

std::string ModelHParams::summary() const {
  std::string s = fmt::format("{}: {} layers, hidden {}, heads {}/{} x {}, ffn {}, vocab {}, rope theta {:g}{}", arch,
                              n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, rope_theta,
                              tied_embeddings ? ", tied embeddings" : "");
  if (qkv_bias) s += ", q/k/v biases";
  if (sliding_window > 0) {
    s += fmt::format(", sliding window {} (every {}th layer global; local rope theta {:g})", sliding_window,
                     swa_period, rope_theta_swa);
  }
  if (attn_soft_cap > 0) s += fmt::format(", attention soft-cap {:g}", attn_soft_cap);
  if (final_soft_cap > 0) s += fmt::format(", final soft-cap {:g}", final_soft_cap);
  return s;
}

int32_t llama_file_type(const std::string& scheme) {
  static const std::pair<const char*, int32_t> kTypes[] = {
      {"f32", 0},     {"f16", 1},     {"q4_0", 2},  {"q4_1", 3},    {"q8_0", 7},    {"q5_0", 8},
      {"q5_1", 9},    {"q4_k", 14},   {"q4_k_m", 15}, {"q5_k", 16}, {"q5_k_m", 17}, {"q6_k", 18},
      {"iq4_nl", 25}, {"iq4_xs", 30}, {"bf16", 32},
  };
  for (const auto& [name, id] : kTypes) {
    if (scheme == name) return id;
  }
  return -1;
}

void write_gguf_hparams(const ModelHParams& h, const std::string& name, const std::string& type_scheme,
                        GgufWriter* w) {
  const std::string a = h.arch + ".";
  auto u32 = [](int64_t v) { return GgufValue::from_u32(static_cast<uint32_t>(v)); };
  w->set("general.architecture", GgufValue::from_string(h.arch));
  w->set("general.name", GgufValue::from_string(name));
  if (const int32_t ft = llama_file_type(type_scheme); ft >= 0) w->set("general.file_type", u32(ft));
  w->set("general.quantization_version", u32(2));
  w->set(a + "context_length", u32(h.n_ctx_train));
  w->set(a + "embedding_length", u32(h.n_embd));
  w->set(a + "block_count", u32(h.n_layer));
  w->set(a + "feed_forward_length", u32(h.n_ff));
  w->set(a + "attention.head_count", u32(h.n_head));
  w->set(a + "attention.head_count_kv", u32(h.n_head_kv));
  w->set(a + "attention.key_length", u32(h.head_dim));
  w->set(a + "attention.value_length", u32(h.head_dim));
  w->set(a + "attention.layer_norm_rms_epsilon", GgufValue::from_f32(h.rms_eps));
  w->set(a + "rope.freq_base", GgufValue::from_f32(static_cast<float>(h.rope_theta)));
  w->set(a + "vocab_size", u32(h.n_vocab));
  if (h.sliding_window > 0) {
    w->set(a + "attention.sliding_window", u32(h.sliding_window));
    w->set(a + "attention.sliding_window_pattern", u32(h.swa_period));
    w->set(a + "rope.freq_base_swa", GgufValue::from_f32(static_cast<float>(h.rope_theta_swa)));
  }
  if (h.attn_soft_cap > 0) w->set(a + "attn_logit_softcapping", GgufValue::from_f32(h.attn_soft_cap));
  if (h.final_soft_cap > 0) w->set(a + "final_logit_softcapping", GgufValue::from_f32(h.final_soft_cap));
}

Result<ModelHParams> hparams_from_gguf(const GgufFile& f) {
  ModelHParams h;
  h.arch = f.architecture();
  const ArchInfo* info = find_gguf(h.arch);
  if (!info) {
    return make_error(StatusCode::kUnsupported, "architecture '{}' is not supported (supported: {})",
                      h.arch.empty() ? "(missing general.architecture)" : h.arch, supported_list());
  }
  const std::string p = h.arch + ".";
  auto need_int = [&](const std::string& key) -> Result<int64_t> {
    auto v = f.get_int(p + key);
    if (!v) return make_error(StatusCode::kCorruptFile, "missing integer metadata '{}{}'", p, key);
    return *v;
  };
  SAKER_ASSIGN_OR_RETURN(h.n_embd, need_int("embedding_length"));
  SAKER_ASSIGN_OR_RETURN(h.n_layer, need_int("block_count"));
  SAKER_ASSIGN_OR_RETURN(h.n_ff, need_int("feed_forward_length"));
  SAKER_ASSIGN_OR_RETURN(h.n_head, need_int("attention.head_count"));
  h.n_head_kv = f.get_int(p + "attention.head_count_kv").value_or(h.n_head);
  h.head_dim = f.get_int(p + "attention.key_length").value_or(h.n_head > 0 ? h.n_embd / h.n_head : 0);
  h.n_ctx_train = f.get_int(p + "context_length").value_or(4096);
  h.rms_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(1e-6));
  h.rope_theta = f.get_float(p + "rope.freq_base").value_or(10000.0);
  if (auto t = f.get_string(p + "rope.scaling.type"); t && *t == "linear") {
    const double factor = f.get_float(p + "rope.scaling.factor").value_or(1.0);
    if (factor > 0) h.rope_freq_scale = 1.0 / factor;
  }
  h.rope_style = info->gguf_rope;
  h.n_rot = f.get_int(p + "rope.dimension_count").value_or(h.head_dim);
  h.qk_norm = h.arch == "qwen3" || h.arch == "gemma3";
  h.qkv_bias = h.arch == "qwen2";
  h.attn_soft_cap = static_cast<float>(f.get_float(p + "attn_logit_softcapping").value_or(0.0));
  h.final_soft_cap = static_cast<float>(f.get_float(p + "final_logit_softcapping").value_or(0.0));
  if (h.arch == "gemma3") {
    // Gemma 3's fixed choices, as its reference implementation makes them: five local layers per global
    // one, local RoPE base 10000, embeddings scaled by sqrt(hidden), attention scale 1/sqrt(head_dim).
    h.sliding_window = f.get_int(p + "attention.sliding_window").value_or(0);
    h.swa_period = f.get_int(p + "attention.sliding_window_pattern").value_or(6);
    h.rope_theta_swa = f.get_float(p + "rope.freq_base_swa").value_or(10000.0);
    h.embed_scale = std::sqrt(static_cast<float>(h.n_embd));
    // query_pre_attn_scalar: head_dim, except in the 27B model (62 layers), where it is hidden / heads.
    if (h.n_layer == 62) h.attn_scale = 1.0f / std::sqrt(static_cast<float>(h.n_embd / h.n_head));
  }
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return make_error(StatusCode::kCorruptFile, "missing tensor 'token_embd.weight'");
  h.n_vocab = embd->shape()[0];
  h.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  SAKER_RETURN_IF_ERROR(h.validate());
  return h;
}

Result<ModelHParams> hparams_from_hf(const HfConfig& c) {
  ModelHParams h;
  const std::string hf_arch = c.architecture();
  for (const auto& i : kArchs) {
    if (hf_arch == i.hf) h.arch = i.gguf;
  }
  if (h.arch.empty()) {
    return make_error(StatusCode::kUnsupported, "{}: architecture '{}' is not supported (supported: {})", c.origin(),
                      hf_arch.empty() ? "(missing architectures)" : hf_arch, supported_list());
  }
  SAKER_ASSIGN_OR_RETURN(h.n_vocab, c.get_int("vocab_size"));
  SAKER_ASSIGN_OR_RETURN(h.n_embd, c.get_int("hidden_size"));
  SAKER_ASSIGN_OR_RETURN(h.n_layer, c.get_int("num_hidden_layers"));
  SAKER_ASSIGN_OR_RETURN(h.n_ff, c.get_int("intermediate_size"));
  SAKER_ASSIGN_OR_RETURN(h.n_head, c.get_int("num_attention_heads"));
  SAKER_ASSIGN_OR_RETURN(h.n_head_kv, c.get_int("num_key_value_heads", h.n_head));
  SAKER_ASSIGN_OR_RETURN(h.head_dim, c.get_int("head_dim", h.n_head > 0 ? h.n_embd / h.n_head : 0));
  SAKER_ASSIGN_OR_RETURN(h.n_ctx_train, c.get_int("max_position_embeddings", 4096));
  SAKER_ASSIGN_OR_RETURN(double eps, c.get_float("rms_norm_eps", 1e-6));
  h.rms_eps = static_cast<float>(eps);
  // transformers 5 moved rope_theta under rope_parameters; older configs have it at the top level.
  SAKER_ASSIGN_OR_RETURN(h.rope_theta, c.get_float("rope_theta", 0.0));
  if (h.rope_theta == 0.0) {
    SAKER_ASSIGN_OR_RETURN(h.rope_theta, c.get_float("rope_parameters.rope_theta", 10000.0));
  }
  SAKER_ASSIGN_OR_RETURN(h.tied_embeddings, c.get_bool("tie_word_embeddings", false));
  h.rope_style = ref::RopeStyle::kNeox;
  h.n_rot = h.head_dim;
  h.qk_norm = h.arch == "qwen3";
  h.qkv_bias = h.arch == "qwen2";
  if (h.arch == "qwen2") {
    // Qwen2's optional sliding window (layers from max_window_layers on) is off in every released model.
    SAKER_ASSIGN_OR_RETURN(const bool swa, c.get_bool("use_sliding_window", false));
    if (swa) {
      return make_error(StatusCode::kUnsupported, "{}: Qwen2 with use_sliding_window = true is not supported",
                        c.origin());
    }
  }
  if (h.arch == "gemma3") {
    return make_error(StatusCode::kUnsupported, "{}: gemma3 runs from GGUF files only for now", c.origin());
  }
  SAKER_RETURN_IF_ERROR(h.validate());
  return h;
}

}  // namespace saker
