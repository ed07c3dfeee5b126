#include "text/gguf_vocab_export.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "text/hf_tokenizer.h"
#include "text/pretokenizer_presets.h"

namespace saker::text {

std::string pre_name_for_regexes(const std::vector<std::string>& regexes) {
  // llama.cpp's names for the presets saker knows, most common first.
  for (const char* name : {"qwen2", "llama-bpe", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder",
                           "smollm", "gpt-4o", "tekken", "refact", "command-r", "olmo", "dbrx"}) {
    bool exact = false;
    const PretokenizerPreset p = resolve_pretokenizer(name, &exact);
    if (exact && p.regexes == regexes) return name;
  }
  return "";
}

Status export_vocab_to_gguf(const VocabSpec& spec, GgufWriter* w) {
  const bool bpe = spec.kind == VocabKind::kBpe;
  w->set("tokenizer.ggml.model", GgufValue::from_string(bpe ? "gpt2" : "llama"));
  if (bpe) {
    std::string pre = spec.pre_regexes.empty() ? spec.pre : pre_name_for_regexes(spec.pre_regexes);
    if (pre.empty()) {
      return make_error(StatusCode::kUnsupported,
                        "the tokenizer's pre-tokenizer regexes match no known pre-tokenizer, so a GGUF of it could "
                        "not be read back the same way");
    }
    w->set("tokenizer.ggml.pre", GgufValue::from_string(pre));
  }
  w->set("tokenizer.ggml.tokens", GgufValue::from_strings(spec.tokens));
  if (!spec.scores.empty()) w->set("tokenizer.ggml.scores", GgufValue::from_f32s(spec.scores));
  std::vector<int32_t> types;
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    types.push_back(spec.types.empty() ? 1 : static_cast<int32_t>(spec.types[i]));
  }
  w->set("tokenizer.ggml.token_type", GgufValue::from_i32s(types));
  if (bpe) w->set("tokenizer.ggml.merges", GgufValue::from_strings(spec.merges));
  auto id = [&](const char* key, int32_t v) {
    if (v != kNoToken) w->set(key, GgufValue::from_u32(static_cast<uint32_t>(v)));
  };
  id("tokenizer.ggml.bos_token_id", spec.bos_id);
  id("tokenizer.ggml.eos_token_id", spec.eos_id);
  id("tokenizer.ggml.unknown_token_id", spec.unk_id);
  id("tokenizer.ggml.padding_token_id", spec.pad_id);
  id("tokenizer.ggml.eot_token_id", spec.eot_id);
  w->set("tokenizer.ggml.add_bos_token", GgufValue::from_bool(spec.add_bos));
  w->set("tokenizer.ggml.add_eos_token", GgufValue::from_bool(spec.add_eos));
  if (!bpe) w->set("tokenizer.ggml.add_space_prefix", GgufValue::from_bool(spec.add_space_prefix));
  return {};
}

Status export_hf_tokenizer_to_gguf(const std::string& folder, GgufWriter* w) {
  auto spec = vocab_spec_from_hf_folder(folder);
  if (!spec.ok()) {
    if (spec.status().code() != StatusCode::kNotFound) return spec.status();
    w->set("tokenizer.ggml.model", GgufValue::from_string("none"));
    return {};
  }
  SAKER_RETURN_IF_ERROR(export_vocab_to_gguf(*spec, w));
  const auto config_path = std::filesystem::path(folder) / "tokenizer_config.json";
  std::ifstream in(config_path);
  if (in) {
    const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (config.is_object() && config.contains("chat_template") && config["chat_template"].is_string()) {
      w->set("tokenizer.chat_template", GgufValue::from_string(config["chat_template"].get<std::string>()));
    }
  }
  const auto jinja_path = std::filesystem::path(folder) / "chat_template.jinja";
  if (std::ifstream j(jinja_path); j) {
    std::string tmpl((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
    w->set("tokenizer.chat_template", GgufValue::from_string(tmpl));
  }
  return {};
}

}  // namespace saker::text
