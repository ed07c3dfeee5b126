#pragma once
// Shared by the turn-boundary tests: a real byte-level BPE tokenizer (saker-mini's tokenizer.json) with the
// turn markers of the common chat formats added the way a chat model's tokenizer.json adds them (control
// tokens for the markers, user-defined tokens for the tags), so one tokenizer can read every template's
// markup; plus small helpers over marked text.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_paths.h"
#include "text/byte_ranges.h"
#include "text/hf_tokenizer.h"
#include "text/tokenizer.h"

namespace saker::testing {

inline std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Control tokens: what real vocabularies mark special (ChatML, Llama 3, Gemma 3/4, Phi, Mistral, GLM, Kimi,
// gpt-oss, DeepSeek), plus the bos/eos texts the jinja2 golden renders use.
inline const std::vector<std::string>& control_markers() {
  static const std::vector<std::string> k = {
      "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
      "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<|turn>",
      "<turn|>", "<|channel>", "<channel|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>",
      "<|observation|>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
      "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "<|start|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>",
      "<|im_system|>", "<|im_user|>", "<|im_middle|>", "<|im_assistant|>", "<\xef\xbd\x9cUser\xef\xbd\x9c>",
      "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
      "<|bos|>", "<|eos|>"};
  return k;
}

// User-defined tokens (Qwen's tags are added tokens that are not special): matched in any text.
inline const std::vector<std::string>& user_defined_markers() {
  static const std::vector<std::string> k = {"<think>", "</think>", "<tool_call>", "</tool_call>",
                                             "<tool_response>", "</tool_response>"};
  return k;
}

// saker-mini's tokenizer with the markers above. with_bos: BOS is <|begin_of_text|> and the vocabulary asks
// for it (Llama 3 style); else no BOS is added (Qwen / SmolLM style).
inline const text::Tokenizer* marker_tokenizer(bool with_bos = false) {
  static std::unique_ptr<text::Tokenizer> cached[2];
  std::unique_ptr<text::Tokenizer>& slot = cached[with_bos ? 1 : 0];
  if (slot) return slot.get();
  const auto dir = source_dir() / "models" / "saker-mini";
  nlohmann::json tokenizer = nlohmann::json::parse(read_text_file(dir / "tokenizer.json"));
  nlohmann::json config = nlohmann::json::parse(read_text_file(dir / "tokenizer_config.json"));
  int64_t next_id = 0;
  for (const auto& [text, id] : tokenizer["model"]["vocab"].items()) {
    next_id = std::max<int64_t>(next_id, id.get<int64_t>() + 1);
  }
  auto add = [&](const std::string& text, bool special) {
    tokenizer["added_tokens"].push_back({{"id", next_id++}, {"content", text}, {"special", special}});
  };
  for (const auto& m : control_markers()) add(m, true);
  for (const auto& m : user_defined_markers()) add(m, false);
  if (with_bos) {
    config["bos_token"] = "<|begin_of_text|>";
    config["add_bos_token"] = true;
  }
  auto spec = text::vocab_spec_from_hf_json(tokenizer, &config);
  if (!spec.ok()) {
    ADD_FAILURE() << spec.status().to_string();
    return nullptr;
  }
  auto vocab = text::Vocab::create(std::move(spec).value());
  if (!vocab.ok()) {
    ADD_FAILURE() << vocab.status().to_string();
    return nullptr;
  }
  auto tok = text::Tokenizer::from_vocab(std::move(vocab).value());
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().to_string();
    return nullptr;
  }
  slot = std::move(tok).value();
  return slot.get();
}

// How many times token `id` occurs.
inline size_t count_id(const std::vector<int32_t>& ids, int32_t id) {
  return static_cast<size_t>(std::count(ids.begin(), ids.end(), id));
}

// The bytes outside every untrusted range, concatenated: what the template itself wrote.
inline std::string trusted_bytes(const text::MarkedText& m) {
  std::string out;
  size_t pos = 0;
  for (const auto& r : m.untrusted) {
    out.append(m.text, pos, r.begin - pos);
    pos = r.end;
  }
  out.append(m.text, pos, std::string::npos);
  return out;
}

// Whether every occurrence of needle in m.text lies wholly inside one untrusted range.
inline bool every_occurrence_untrusted(const text::MarkedText& m, const std::string& needle) {
  for (size_t at = m.text.find(needle); at != std::string::npos; at = m.text.find(needle, at + 1)) {
    bool inside = false;
    for (const auto& r : m.untrusted) inside = inside || (r.begin <= at && at + needle.size() <= r.end);
    if (!inside) return false;
  }
  return true;
}

// The text with every untrusted range shown in guillemets: "<|im_start|>user\n«hi»<|im_end|>".
inline std::string show_untrusted(const text::MarkedText& m) {
  std::string out;
  size_t pos = 0;
  for (const auto& r : m.untrusted) {
    out.append(m.text, pos, r.begin - pos);
    out += "\xc2\xab";
    out.append(m.text, r.begin, r.end - r.begin);
    out += "\xc2\xbb";
    pos = r.end;
  }
  out.append(m.text, pos, std::string::npos);
  return out;
}

// The untrusted bytes, each range as a string.
inline std::vector<std::string> untrusted_pieces(const text::MarkedText& m) {
  std::vector<std::string> out;
  for (const auto& r : m.untrusted) out.push_back(m.text.substr(r.begin, r.end - r.begin));
  return out;
}

}  // namespace saker::testing
