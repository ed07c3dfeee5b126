#include "text/gguf_vocab_export.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "text/hf_tokenizer.h"
#include "text/pretokenizer_presets.h"

namespace saker::text {

namespace {

// Rewrites each case-insensitive group of plain ASCII alternatives, "(?i:'s|'t|'re)", in the spelled-out
// form "(?:'[sS]|'[tT]|'[rR][eE])" that the presets use, so the two spellings of one regex compare equal.
// (Qwen2 and Llama 3 tokenizer.json files use the first, llama.cpp's built-in regexes the second.)
std::string spell_out_ascii_case_groups(const std::string& re) {
  std::string out;
  size_t pos = 0;
  while (pos < re.size()) {
    const size_t open = re.find("(?i:", pos);
    if (open == std::string::npos) break;
    const size_t body = open + 4;
    const size_t close = re.find(')', body);
    bool plain = close != std::string::npos;
    for (size_t i = body; plain && i < close; ++i) {
      const char c = re[i];
      plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '\'' || c == '|';
    }
    if (!plain) {
      out.append(re, pos, body - pos);
      pos = body;
      continue;
    }
    out.append(re, pos, open - pos);
    out += "(?:";
    for (size_t i = body; i < close; ++i) {
      const char c = re[i];
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (letter) {
        const char lower = static_cast<char>(c | 0x20);
        out += '[';
        out += lower;
        out += static_cast<char>(lower & ~0x20);
        out += ']';
      } else {
        out += c;
      }
    }
    out += ')';
    pos = close + 1;
  }
  out.append(re, pos, std::string::npos);
  return out;
}

std::vector<std::string> spell_out_ascii_case_groups(const std::vector<std::string>& regexes) {
  std::vector<std::string> out;
  for (const std::string& r : regexes) out.push_back(spell_out_ascii_case_groups(r));
  return out;
}

}  // namespace

std::string pre_name_for_regexes(const std::vector<std::string>& regexes) {
  const std::vector<std::string> wanted = spell_out_ascii_case_groups(regexes);
  // llama.cpp's names for the presets saker knows, most common first.
  for (const char* name : {"qwen2", "llama-bpe", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder",
                           "smollm", "gpt-4o", "tekken", "refact", "command-r", "olmo", "dbrx"}) {
    bool exact = false;
    const PretokenizerPreset p = resolve_pretokenizer(name, &exact);
    if (exact && spell_out_ascii_case_groups(p.regexes) == wanted) return name;
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

Status fit_vocab_to_model(VocabSpec* spec, int64_t n_vocab) {
  const int64_t n_tokens = static_cast<int64_t>(spec->tokens.size());
  if (n_vocab > 0 && n_tokens > n_vocab) {
    return make_error(StatusCode::kUnsupported,
                      "the tokenizer has {} tokens but the model's embedding only {} rows: llama.cpp requires the "
                      "token list and the embedding to have the same length",
                      n_tokens, n_vocab);
  }
  const size_t n = static_cast<size_t>(std::max(n_tokens, n_vocab));
  if (spec->types.empty()) spec->types.assign(spec->tokens.size(), TokenType::kNormal);
  spec->tokens.resize(n);
  spec->types.resize(n, TokenType::kUnused);
  if (!spec->scores.empty()) spec->scores.resize(n, -1e9f);
  // Ids no token has (gaps in tokenizer.json and the embedding rows past its last token) get a unique name,
  // as llama.cpp's own converter gives them: llama.cpp rejects duplicate token texts.
  std::unordered_set<std::string> taken(spec->tokens.begin(), spec->tokens.end());
  for (size_t i = 0; i < n; ++i) {
    if (!spec->tokens[i].empty()) continue;
    std::string name = "[PAD" + std::to_string(i) + "]";
    while (taken.count(name) != 0) name += "_";
    taken.insert(name);
    spec->tokens[i] = std::move(name);
    spec->types[i] = TokenType::kUnused;
  }
  return {};
}

Status export_hf_tokenizer_to_gguf(const std::string& folder, GgufWriter* w, int64_t n_vocab) {
  auto spec = vocab_spec_from_hf_folder(folder);
  if (!spec.ok()) {
    if (spec.status().code() != StatusCode::kNotFound) return spec.status();
    w->set("tokenizer.ggml.model", GgufValue::from_string("none"));
    return {};
  }
  SAKER_RETURN_IF_ERROR(fit_vocab_to_model(&*spec, n_vocab));
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
