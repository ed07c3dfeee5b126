// Hugging Face tokenizer.json -> VocabSpec (see hf_tokenizer.h).
#include "text/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/log.h"
#include "formats/json_parse.h"

namespace saker::text {
namespace {

using json = nlohmann::json;

// HF's ByteLevel regex: GPT-2's, with the final `\s+` that catches whitespace the lookahead leaves.
constexpr const char* kByteLevelRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr const char* kSpaceMark = "\xE2\x96\x81";  // U+2581

std::string str_or(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool bool_or(const json& j, const char* key, bool fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// Every object of a (possibly nested Sequence) component, in order.
void flatten(const json& j, const char* list_key, std::vector<const json*>& out) {
  if (!j.is_object()) return;
  if (str_or(j, "type") == "Sequence") {
    auto it = j.find(list_key);
    if (it != j.end() && it->is_array()) {
      for (const json& child : *it) flatten(child, list_key, out);
    }
    return;
  }
  out.push_back(&j);
}

std::vector<const json*> components(const json& root, const char* key, const char* list_key) {
  std::vector<const json*> out;
  auto it = root.find(key);
  if (it != root.end()) flatten(*it, list_key, out);
  return out;
}

bool any_of_type(const std::vector<const json*>& parts, const std::string& type) {
  for (const json* p : parts) {
    if (str_or(*p, "type") == type) return true;
  }
  return false;
}

// PCRE2 literal for a Split "String" pattern.
std::string quote_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

Status pre_tokenizer_regexes(const std::vector<const json*>& parts, std::vector<std::string>& regexes) {
  for (const json* p : parts) {
    const std::string type = str_or(*p, "type");
    if (type == "ByteLevel") {
      if (bool_or(*p, "use_regex", true)) regexes.emplace_back(kByteLevelRegex);
      if (bool_or(*p, "add_prefix_space", false)) {
        SAKER_LOG_WARN("tokenizer.json: ByteLevel add_prefix_space is not supported; no space is added");
      }
    } else if (type == "Split") {
      const json& pattern = p->value("pattern", json::object());
      std::string regex;
      if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
        regex = pattern["Regex"].get<std::string>();
      } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
        regex = quote_literal(pattern["String"].get<std::string>());
      } else {
        return make_error(StatusCode::kCorruptFile, "tokenizer.json: Split pre-tokenizer without a pattern");
      }
      if (bool_or(*p, "invert", false)) {
        return make_error(StatusCode::kUnsupported, "tokenizer.json: inverted Split pre-tokenizers are not supported");
      }
      const std::string behavior = str_or(*p, "behavior", "Isolated");
      if (behavior != "Isolated") {
        SAKER_LOG_WARN("tokenizer.json: Split behavior \"{}\" is treated as \"Isolated\"", behavior);
      }
      regexes.push_back(std::move(regex));
    } else if (type == "Digits") {
      regexes.emplace_back(bool_or(*p, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    } else if (type == "Punctuation") {
      // HF counts ASCII symbols as punctuation too.
      const bool contiguous = str_or(*p, "behavior", "Isolated") == "Contiguous";
      regexes.emplace_back(contiguous ? R"([\p{P}\$\+<=>\^~\|`]+)" : R"([\p{P}\$\+<=>\^~\|`])");
    } else if (type == "Metaspace") {
      if (bool_or(*p, "split", false)) {
        SAKER_LOG_WARN("tokenizer.json: Metaspace split=true is not supported; text is not split at spaces");
      }
    } else if (!type.empty()) {
      return make_error(StatusCode::kUnsupported, "tokenizer.json: pre-tokenizer \"{}\" is not supported", type);
    }
  }
  return Status::ok_status();
}

// Content of a tokenizer_config.json token entry: "text" or {"content": "text", ...}.
std::string token_content(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  return str_or(j, "content");
}

// Whether the post-processor's single-sequence template starts/ends with a special token.
void template_specials(const json& root, bool* bos, bool* eos) {
  for (const json* p : components(root, "post_processor", "processors")) {
    if (str_or(*p, "type") != "TemplateProcessing") continue;
    auto single = p->find("single");
    if (single == p->end() || !single->is_array() || single->empty()) continue;
    *bos = single->front().is_object() && single->front().contains("SpecialToken");
    *eos = single->size() > 1 && single->back().is_object() && single->back().contains("SpecialToken");
  }
}

Result<VocabSpec> convert(const json& root, const json* config) {
  if (!root.is_object()) return make_error(StatusCode::kCorruptFile, "tokenizer.json: expected an object");
  const json& model = root.value("model", json::object());
  const std::string model_type = str_or(model, "type", "BPE");
  if (model_type != "BPE") {
    return make_error(StatusCode::kUnsupported, "tokenizer.json: model type \"{}\" is not supported (BPE only)", model_type);
  }
  const auto pre_parts = components(root, "pre_tokenizer", "pretokenizers");
  const auto decoder_parts = components(root, "decoder", "decoders");
  const auto normalizer_parts = components(root, "normalizer", "normalizers");

  VocabSpec spec;
  const bool byte_level = any_of_type(pre_parts, "ByteLevel") || any_of_type(decoder_parts, "ByteLevel");
  bool prepend_space = false;
  for (const json* n : normalizer_parts) {
    const std::string type = str_or(*n, "type");
    if (type == "Prepend" && str_or(*n, "prepend") == kSpaceMark) {
      prepend_space = true;
    } else if (type != "Replace") {
      SAKER_LOG_WARN("tokenizer.json: normalizer \"{}\" is not applied", type);
    }
  }
  for (const json* p : pre_parts) {
    if (str_or(*p, "type") == "Metaspace") {
      prepend_space = str_or(*p, "prepend_scheme", bool_or(*p, "add_prefix_space", true) ? "always" : "never") != "never";
    }
  }
  const bool spm_style = !byte_level && (bool_or(model, "byte_fallback", false) || prepend_space ||
                                         any_of_type(pre_parts, "Metaspace") || any_of_type(decoder_parts, "Metaspace"));
  if (!byte_level && !spm_style) {
    return make_error(StatusCode::kUnsupported,
                      "tokenizer.json: BPE without ByteLevel or SentencePiece (Metaspace / byte_fallback) conventions");
  }
  spec.kind = byte_level ? VocabKind::kBpe : VocabKind::kSpm;
  spec.pre = byte_level ? "tokenizer.json" : "default";
  spec.add_space_prefix = spm_style && prepend_space;
  spec.ignore_merges = bool_or(model, "ignore_merges", false);
  if (byte_level) {
    SAKER_RETURN_IF_ERROR(pre_tokenizer_regexes(pre_parts, spec.pre_regexes));
    // A byte-level tokenizer with no regex splits nothing: one regex that matches everything says so.
    if (spec.pre_regexes.empty()) spec.pre_regexes.emplace_back(R"((?s).+)");
  }

  // Vocabulary: ids may have gaps (filled with empty unused entries) and added tokens beyond it.
  std::map<int64_t, std::pair<std::string, TokenType>> by_id;
  const json& vocab = model.value("vocab", json::object());
  if (!vocab.is_object() || vocab.empty()) return make_error(StatusCode::kCorruptFile, "tokenizer.json: model.vocab is missing");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) return make_error(StatusCode::kCorruptFile, "tokenizer.json: vocab id of \"{}\"", it.key());
    by_id[it.value().get<int64_t>()] = {it.key(), TokenType::kNormal};
  }
  if (auto added = root.find("added_tokens"); added != root.end() && added->is_array()) {
    for (const json& a : *added) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer()) continue;
      const bool special = bool_or(a, "special", false);
      by_id[a["id"].get<int64_t>()] = {str_or(a, "content"), special ? TokenType::kControl : TokenType::kUserDefined};
    }
  }
  const int64_t max_id = by_id.rbegin()->first;
  if (by_id.begin()->first < 0 || max_id >= std::numeric_limits<int32_t>::max()) {
    return make_error(StatusCode::kCorruptFile, "tokenizer.json: token ids out of range");
  }
  spec.tokens.assign(static_cast<size_t>(max_id) + 1, std::string());
  spec.types.assign(spec.tokens.size(), TokenType::kUnused);
  for (auto& [id, entry] : by_id) {
    spec.tokens[id] = entry.first;
    spec.types[id] = entry.second;
  }

  // Merges: "a b" strings (older files) or ["a", "b"] pairs.
  if (auto merges = model.find("merges"); merges != model.end() && merges->is_array()) {
    for (const json& m : *merges) {
      if (m.is_string()) {
        spec.merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        spec.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        return make_error(StatusCode::kCorruptFile, "tokenizer.json: a merge is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
  }

  std::unordered_map<std::string, int32_t> index;  // first id of each text
  for (size_t i = 0; i < spec.tokens.size(); ++i) index.emplace(spec.tokens[i], static_cast<int32_t>(i));
  const auto find = [&](const std::string& text) -> int32_t {
    auto it = text.empty() ? index.end() : index.find(text);
    return it == index.end() ? kNoToken : it->second;
  };
  const std::string unk = str_or(model, "unk_token");
  spec.unk_id = find(unk);
  if (spec.unk_id != kNoToken) spec.types[spec.unk_id] = TokenType::kUnknown;

  if (spec.kind == VocabKind::kSpm) {
    // SentencePiece scores from merge order: a token made by an earlier merge scores higher, which makes
    // score-greedy merging agree with the merge ranks. Tokens no merge makes are merged last.
    spec.scores.assign(spec.tokens.size(), -1e9f);
    for (size_t rank = spec.merges.size(); rank-- > 0;) {
      const std::string& m = spec.merges[rank];
      const size_t sep = m.find(' ', 1);
      if (sep == std::string::npos) continue;
      const int32_t id = find(m.substr(0, sep) + m.substr(sep + 1));
      if (id != kNoToken) spec.scores[id] = -static_cast<float>(rank);
    }
    for (size_t i = 0; i < spec.tokens.size(); ++i) {
      const std::string& t = spec.tokens[i];
      if (spec.types[i] == TokenType::kNormal && t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>') {
        spec.types[i] = TokenType::kByte;
      }
    }
  }

  // BOS/EOS: tokenizer_config.json, else the post-processor template.
  bool add_bos = false, add_eos = false;
  template_specials(root, &add_bos, &add_eos);
  if (config != nullptr && config->is_object()) {
    if (auto it = config->find("bos_token"); it != config->end()) spec.bos_id = find(token_content(*it));
    if (auto it = config->find("eos_token"); it != config->end()) spec.eos_id = find(token_content(*it));
    if (auto it = config->find("pad_token"); it != config->end()) spec.pad_id = find(token_content(*it));
    add_bos = bool_or(*config, "add_bos_token", add_bos);
    add_eos = bool_or(*config, "add_eos_token", add_eos);
  }
  spec.add_bos = add_bos && spec.bos_id != kNoToken;
  spec.add_eos = add_eos && spec.eos_id != kNoToken;
  return spec;
}

Result<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(StatusCode::kIoError, "{}: cannot open", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<VocabSpec> vocab_spec_from_hf_json(const nlohmann::json& tokenizer, const nlohmann::json* config) {
  try {
    return convert(tokenizer, config);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type somewhere
    return make_error(StatusCode::kCorruptFile, "tokenizer.json: {}", e.what());
  }
}

Result<VocabSpec> vocab_spec_from_hf_folder(const std::string& path) {
  std::error_code ec;
  std::filesystem::path dir(path);
  if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
  const auto tokenizer_path = dir / "tokenizer.json";
  if (!std::filesystem::is_regular_file(tokenizer_path, ec)) {
    return make_error(StatusCode::kNotFound, "{}: no tokenizer.json", dir.string());
  }
  SAKER_ASSIGN_OR_RETURN(const std::string text, read_text(tokenizer_path));
  SAKER_ASSIGN_OR_RETURN(const nlohmann::json tokenizer, parse_json(text, tokenizer_path.string()));
  nlohmann::json config;
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(config_path, ec)) {
    SAKER_ASSIGN_OR_RETURN(const std::string config_text, read_text(config_path));
    SAKER_ASSIGN_OR_RETURN(config, parse_json(config_text, config_path.string()));
  }
  auto spec = vocab_spec_from_hf_json(tokenizer, config.is_null() ? nullptr : &config);
  if (!spec.ok()) return spec.status().with_context(tokenizer_path.string());
  return spec;
}

}  // namespace saker::text
