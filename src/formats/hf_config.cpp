// HfConfig: config.Json lookups (text_config first, then the top level) with typed, clearly failing getters.
#include "formats/hf_config.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "formats/json_parse.h"
#include "formats/mapped_file.h"

namespace saker {
namespace {

using Json = nlohmann::json;

// Follows a dotted path ("rope_scaling.factor") from `node`; null when any step is missing.
const Json* walk(const Json& node, std::string_view key) {
  const Json* cur = &node;
  while (true) {
    if (!cur->is_object()) return nullptr;
    const size_t dot = key.find('.');
    const std::string part(key.substr(0, dot));
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string_view::npos) return cur;
    key.remove_prefix(dot + 1);
  }
}

std::optional<int64_t> to_int(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^63 itself does not fit; every double below it that is integral does.
    if (std::isfinite(d) && d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

}  // namespace

Result<HfConfig> HfConfig::load(const std::string& path) {
  std::error_code ec;
  std::string file = path;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "config.json").string();
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> mapped, MappedFile::open(file));
  const std::string_view text(reinterpret_cast<const char*>(mapped->data()), mapped->size());
  return parse(text, file);
}

Result<HfConfig> HfConfig::parse(std::string_view text, const std::string& origin) {
  SAKER_ASSIGN_OR_RETURN(Json root, parse_json(text, origin));
  if (!root.is_object()) {
    return make_error(StatusCode::kCorruptFile, "{}: expected a JSON object, got {}", origin, json_brief(root));
  }
  if (auto tc = root.find("text_config"); tc != root.end() && !tc->is_null() && !tc->is_object()) {
    return make_error(StatusCode::kCorruptFile, "{}: \"text_config\" is {}, expected an object", origin,
                      json_brief(*tc));
  }
  HfConfig c;
  c.origin_ = origin;
  c.root_ = std::move(root);
  return c;
}

bool HfConfig::has_text_config() const {
  auto it = root_.find("text_config");
  return it != root_.end() && it->is_object();
}

const nlohmann::json& HfConfig::text_json() const {
  auto it = root_.find("text_config");
  return it != root_.end() && it->is_object() ? *it : root_;
}

const nlohmann::json* HfConfig::find(std::string_view key) const {
  if (has_text_config()) {
    if (const Json* v = walk(text_json(), key)) return v;
  }
  return walk(root_, key);
}

bool HfConfig::has(std::string_view key) const {
  const Json* v = find(key);
  return v && !v->is_null();
}

std::string HfConfig::architecture() const {
  auto it = root_.find("architectures");
  if (it == root_.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return "";
  return (*it)[0].get<std::string>();
}

std::string HfConfig::model_type() const {
  auto it = root_.find("model_type");
  return it != root_.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string HfConfig::text_model_type() const {
  if (!has_text_config()) return model_type();
  const Json& t = text_json();
  auto it = t.find("model_type");
  return it != t.end() && it->is_string() ? it->get<std::string>() : model_type();
}

Status HfConfig::missing(std::string_view key) const {
  return make_error(StatusCode::kNotFound, "{}: \"{}\" is missing{}", origin_, key,
                    has_text_config() ? " (looked in text_config and at the top level)" : "");
}

Status HfConfig::type_error(std::string_view key, const Json& value, const char* expected) const {
  return make_error(StatusCode::kCorruptFile, "{}: \"{}\" is {}, expected {}", origin_, key, json_brief(value),
                    expected);
}

Result<int64_t> HfConfig::get_int(std::string_view key) const {
  const Json* v = find(key);
  if (!v || v->is_null()) return missing(key);
  if (auto i = to_int(*v)) return *i;
  return type_error(key, *v, "an integer");
}

Result<int64_t> HfConfig::get_int(std::string_view key, int64_t default_value) const {
  if (!has(key)) return default_value;
  return get_int(key);
}

Result<double> HfConfig::get_float(std::string_view key) const {
  const Json* v = find(key);
  if (!v || v->is_null()) return missing(key);
  if (!v->is_number()) return type_error(key, *v, "a number");
  return v->get<double>();
}

Result<double> HfConfig::get_float(std::string_view key, double default_value) const {
  if (!has(key)) return default_value;
  return get_float(key);
}

Result<bool> HfConfig::get_bool(std::string_view key) const {
  const Json* v = find(key);
  if (!v || v->is_null()) return missing(key);
  if (!v->is_boolean()) return type_error(key, *v, "true or false");
  return v->get<bool>();
}

Result<bool> HfConfig::get_bool(std::string_view key, bool default_value) const {
  if (!has(key)) return default_value;
  return get_bool(key);
}

Result<std::string> HfConfig::get_string(std::string_view key) const {
  const Json* v = find(key);
  if (!v || v->is_null()) return missing(key);
  if (!v->is_string()) return type_error(key, *v, "a string");
  return v->get<std::string>();
}

Result<std::string> HfConfig::get_string(std::string_view key, const std::string& default_value) const {
  if (!has(key)) return default_value;
  return get_string(key);
}

Result<std::vector<int64_t>> HfConfig::get_int_list(std::string_view key) const {
  const Json* v = find(key);
  if (!v || v->is_null()) return missing(key);
  if (auto i = to_int(*v)) return std::vector<int64_t>{*i};
  if (!v->is_array()) return type_error(key, *v, "an integer or an array of integers");
  std::vector<int64_t> out;
  for (const Json& e : *v) {
    auto i = to_int(e);
    if (!i) return type_error(key, *v, "an integer or an array of integers");
    out.push_back(*i);
  }
  return out;
}

std::string HfConfig::dtype_name() const {
  for (const char* key : {"torch_dtype", "dtype"}) {
    const Json* v = find(key);
    if (v && v->is_string()) {
      std::string name = v->get<std::string>();
      if (name.rfind("torch.", 0) == 0) name = name.substr(6);
      return name;
    }
  }
  return "";
}

Result<DType> HfConfig::dtype() const {
  const std::string name = dtype_name();
  if (name.empty()) return make_error(StatusCode::kNotFound, "{}: neither \"torch_dtype\" nor \"dtype\" is given", origin_);
  if (name == "float32" || name == "float") return DType::kF32;
  if (name == "float16" || name == "half") return DType::kF16;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float64" || name == "double") return DType::kF64;
  return make_error(StatusCode::kUnsupported, "{}: dtype \"{}\" is not one saker loads (float32, float16, bfloat16)",
                    origin_, name);
}

}  // namespace saker
