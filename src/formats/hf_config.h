#pragma once
// HfConfig: a Hugging Face config.json. Keeps the whole document and gives typed access with clear errors.
//
// Multimodal configs (gemma3, qwen2.5-vl, llava, ...) put the language model's hyper-parameters under
// "text_config"; every lookup tries text_config first and then the top level, so callers ask for
// "num_hidden_layers" whatever the nesting. A key may be a dotted path into nested objects
// ("rope_scaling.factor").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/status.h"

namespace saker {

class HfConfig {
 public:
  // `path`: a model folder (reads its config.json) or the path of a config file.
  static Result<HfConfig> load(const std::string& path);
  // Parses JSON text; `origin` names it in messages.
  static Result<HfConfig> parse(std::string_view text, const std::string& origin = "config.json");

  const std::string& origin() const { return origin_; }
  const nlohmann::json& json() const { return root_; }
  // text_config when present, else the whole document.
  const nlohmann::json& text_json() const;
  bool has_text_config() const;

  // architectures[0], or "" when absent.
  std::string architecture() const;
  // The top-level model_type ("gemma3"), and text_config's when present ("gemma3_text"); "" when absent.
  std::string model_type() const;
  std::string text_model_type() const;

  // The value at `key` (text_config first, then the top level); null pointer when absent. JSON null counts as
  // absent for the getters below.
  const nlohmann::json* find(std::string_view key) const;
  bool has(std::string_view key) const;

  // Typed getters: kNotFound naming the key when absent, kCorruptFile naming it and the value when the type is
  // wrong. The defaulted forms return the default only when the key is absent or null.
  Result<int64_t> get_int(std::string_view key) const;  // integers, and floats with an integral value
  Result<int64_t> get_int(std::string_view key, int64_t default_value) const;
  Result<double> get_float(std::string_view key) const;  // floats and integers
  Result<double> get_float(std::string_view key, double default_value) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<bool> get_bool(std::string_view key, bool default_value) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::string> get_string(std::string_view key, const std::string& default_value) const;
  // An integer or an array of integers (eos_token_id may be either).
  Result<std::vector<int64_t>> get_int_list(std::string_view key) const;

  // torch_dtype (or dtype, its newer name), e.g. "bfloat16"; "" when absent.
  std::string dtype_name() const;
  // The weights' dtype: float32/float16/bfloat16/float64 map onto saker's; kNotFound when not given,
  // kUnsupported for other names.
  Result<DType> dtype() const;

 private:
  Status type_error(std::string_view key, const nlohmann::json& value, const char* expected) const;
  Status missing(std::string_view key) const;

  std::string origin_;
  nlohmann::json root_;
};

}  // namespace saker
