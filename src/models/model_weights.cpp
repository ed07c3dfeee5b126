#include "models/model_weights.h"

#include <filesystem>
#include <regex>

#include <cstring>

namespace saker {

Result<std::unique_ptr<ModelWeights>> ModelWeights::open(const std::string& path) {
  std::unique_ptr<ModelWeights> w(new ModelWeights());
  w->path_ = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    SAKER_RETURN_IF_ERROR(w->load_hf());
  } else if (std::filesystem::exists(path, ec)) {
    SAKER_RETURN_IF_ERROR(w->load_gguf());
  } else {
    return make_error(StatusCode::kNotFound, "{}: no such model file or folder", path);
  }
  return w;
}

Status ModelWeights::load_gguf() {
  SAKER_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path_));
  gguf_ = std::move(f);
  auto hp = hparams_from_gguf(*gguf_);
  if (!hp.ok()) return hp.status().with_context(path_);
  hparams_ = std::move(hp).value();
  for (const auto& t : gguf_->tensors()) tensors_[t.name] = gguf_->view(t);
  return {};
}

std::string ModelWeights::gguf_name_for_hf(const std::string& n) {
  static const std::map<std::string, std::string> kTop = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::map<std::string, std::string> kLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},  // qwen2
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  if (auto it = kTop.find(n); it != kTop.end()) return it->second;
  static const std::regex kLayerRe(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (std::regex_match(n, m, kLayerRe)) {
    if (auto it = kLayer.find(m[2].str()); it != kLayer.end()) return "blk." + m[1].str() + "." + it->second;
  }
  return "";
}

Status ModelWeights::load_hf() {
  SAKER_ASSIGN_OR_RETURN(HfConfig c, HfConfig::load(path_));
  hf_config_ = std::move(c);
  SAKER_ASSIGN_OR_RETURN(hparams_, hparams_from_hf(*hf_config_));
  SAKER_ASSIGN_OR_RETURN(SafetensorsModel st, SafetensorsModel::open(path_));
  safetensors_ = std::move(st);
  for (const std::string& name : safetensors_->tensor_names()) {
    const std::string g = gguf_name_for_hf(name);
    if (g.empty()) continue;  // e.g. rotary inv_freq buffers
    auto view = safetensors_->view(name);
    if (view.ok()) {
      tensors_[g] = *view;
      continue;
    }
    // Not viewable in place (unaligned data in an old file): copy into an aligned buffer.
    const SafetensorsTensorInfo* info = safetensors_->find_tensor(name);
    if (!info->dtype) return view.status();
    auto bytes = safetensors_->file_of(name)->tensor_bytes(*info);
    HostBuffer buf(bytes.size(), false);
    std::memcpy(buf.data(), bytes.data(), bytes.size());
    tensors_[g] = TensorView::contiguous(buf.data(), *info->dtype, info->shape.data(),
                                         static_cast<int>(info->shape.size()));
    owned_.push_back(std::move(buf));
  }
  if (!tensors_.count("output.weight")) hparams_.tied_embeddings = true;
  return {};
}

const TensorView* ModelWeights::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<TensorView> ModelWeights::require(const std::string& name, std::vector<int64_t> shape) const {
  const TensorView* t = find(name);
  if (!t) return make_error(StatusCode::kCorruptFile, "{}: missing tensor '{}'", path_, name);
  bool same = t->n_dims == static_cast<int>(shape.size());
  for (int i = 0; same && i < t->n_dims; ++i) same = t->shape[i] == shape[i];
  if (!same) {
    std::string want = "[";
    for (size_t i = 0; i < shape.size(); ++i) want += fmt::format("{}{}", i ? ", " : "", shape[i]);
    return make_error(StatusCode::kCorruptFile, "{}: tensor '{}' has shape {}, expected {}]", path_, name,
                      t->shape_string(), want);
  }
  return *t;
}

std::vector<std::string> ModelWeights::names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : tensors_) out.push_back(n);
  return out;
}

uint64_t ModelWeights::total_bytes() const {
  uint64_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.n_bytes();
  return n;
}

}  // namespace saker
