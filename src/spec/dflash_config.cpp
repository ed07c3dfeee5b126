#include "spec/dflash_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "formats/json_parse.h"

namespace saker::spec {
namespace {

// A positive integer field (or `fallback` when absent and fallback > 0).
Result<int64_t> positive(const nlohmann::json& j, const char* key, const std::string& origin, int64_t fallback = 0) {
  if (!j.contains(key)) {
    if (fallback > 0) return fallback;
    return make_error(StatusCode::kInvalidArgument, "{}: missing \"{}\" (a positive integer)", origin, key);
  }
  const auto& v = j.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
    return make_error(StatusCode::kInvalidArgument, "{}: \"{}\" must be a positive integer (got {})", origin, key,
                      json_brief(v));
  }
  return v.get<int64_t>();
}

Result<double> positive_number(const nlohmann::json& j, const char* key, const std::string& origin, double fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const auto& v = j.at(key);
  if (!v.is_number() || v.get<double>() <= 0) {
    return make_error(StatusCode::kInvalidArgument, "{}: \"{}\" must be a positive number (got {})", origin, key,
                      json_brief(v));
  }
  return v.get<double>();
}

}  // namespace

Result<DFlashConfig> DFlashConfig::parse(std::string_view text, const std::string& origin) {
  SAKER_ASSIGN_OR_RETURN(nlohmann::json j, parse_json(text, origin));
  if (!j.is_object()) return make_error(StatusCode::kInvalidArgument, "{}: expected a JSON object", origin);
  const auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || *arch->begin() != "DFlashDraftModel") {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: not a DFlash drafter (\"architectures\" must be [\"DFlashDraftModel\"], got {})", origin,
                      arch == j.end() ? "nothing" : json_brief(*arch));
  }
  DFlashConfig c;
  SAKER_ASSIGN_OR_RETURN(c.n_layer, positive(j, "num_hidden_layers", origin));
  SAKER_ASSIGN_OR_RETURN(c.n_embd, positive(j, "hidden_size", origin));
  SAKER_ASSIGN_OR_RETURN(c.n_head, positive(j, "num_attention_heads", origin));
  SAKER_ASSIGN_OR_RETURN(c.n_head_kv, positive(j, "num_key_value_heads", origin, c.n_head));
  SAKER_ASSIGN_OR_RETURN(c.head_dim, positive(j, "head_dim", origin, c.n_embd / c.n_head));
  SAKER_ASSIGN_OR_RETURN(c.n_ff, positive(j, "intermediate_size", origin));
  SAKER_ASSIGN_OR_RETURN(c.n_vocab, positive(j, "vocab_size", origin));
  SAKER_ASSIGN_OR_RETURN(c.block_size, positive(j, "block_size", origin));
  SAKER_ASSIGN_OR_RETURN(c.rms_eps, positive_number(j, "rms_norm_eps", origin, 1e-6));
  SAKER_ASSIGN_OR_RETURN(c.rope_theta, positive_number(j, "rope_theta", origin, 10000.0));
  if (c.block_size < 2) {
    return make_error(StatusCode::kInvalidArgument, "{}: \"block_size\" must be at least 2 (got {})", origin,
                      c.block_size);
  }
  if (c.n_head % c.n_head_kv != 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", origin, c.n_head,
                      c.n_head_kv);
  }
  if (c.head_dim % 2 != 0) {
    return make_error(StatusCode::kInvalidArgument, "{}: head_dim {} must be even (RoPE)", origin, c.head_dim);
  }
  if (j.contains("layer_types") && j.at("layer_types").is_array()) {
    for (const auto& t : j.at("layer_types")) {
      if (t != "full_attention") {
        return make_error(StatusCode::kUnsupported,
                          "{}: layer type {} is not supported yet (only full_attention draft layers)", origin,
                          json_brief(t));
      }
    }
  }
  const auto dc = j.find("dflash_config");
  if (dc == j.end() || !dc->is_object()) {
    return make_error(StatusCode::kInvalidArgument, "{}: missing the \"dflash_config\" object", origin);
  }
  const auto mask = dc->find("mask_token_id");
  if (mask == dc->end() || !mask->is_number_integer() || mask->get<int64_t>() < 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: dflash_config.mask_token_id must be a token id (got {})", origin,
                      mask == dc->end() ? "nothing" : json_brief(*mask));
  }
  c.mask_token = static_cast<int32_t>(mask->get<int64_t>());
  // The z-lab format names the tapped layers; the rule DFlash falls back on is left to the writer, so a file
  // without them is rejected rather than guessed.
  const auto taps = dc->find("target_layer_ids");
  if (taps == dc->end() || !taps->is_array() || taps->empty()) {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: dflash_config.target_layer_ids must list the tapped target layers", origin);
  }
  for (const auto& t : *taps) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0) {
      return make_error(StatusCode::kInvalidArgument,
                        "{}: dflash_config.target_layer_ids holds {} (expected layer indices >= 0)", origin,
                        json_brief(t));
    }
    const int32_t l = static_cast<int32_t>(t.get<int64_t>());
    if (!c.target_layers.empty() && l <= c.target_layers.back()) {
      return make_error(StatusCode::kInvalidArgument,
                        "{}: dflash_config.target_layer_ids must be strictly ascending (got {})", origin,
                        json_brief(*taps));
    }
    c.target_layers.push_back(l);
  }
  return c;
}

Result<DFlashConfig> DFlashConfig::load(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return make_error(StatusCode::kNotFound, "{}: cannot read the drafter's config (a DFlash drafter folder holds "
                      "config.json and model.safetensors)", path);
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path);
}

std::vector<int32_t> DFlashConfig::spread_taps(int64_t n_target, int64_t n) {
  std::vector<int32_t> taps;
  if (n_target <= 0 || n <= 0) return taps;
  if (n == 1) return {static_cast<int32_t>(n_target / 2)};
  // The rule needs n distinct layers in [1, n_target - 3]; a smaller target gets min(n, n_target) taps spread
  // evenly over all of its layers.
  const bool rule = n_target - 4 >= n - 1;
  const int64_t count = rule ? n : std::min(n, n_target);
  const double first = rule ? 1.0 : 0.0, span = static_cast<double>(rule ? n_target - 4 : n_target - 1);
  for (int64_t i = 0; i < count; ++i) {
    const double at = count == 1 ? first : first + static_cast<double>(i) * span / static_cast<double>(count - 1);
    taps.push_back(static_cast<int32_t>(std::nearbyint(at)));  // half to even, as Python's round()
  }
  return taps;
}

Status DFlashConfig::check_target(const ModelHParams& t) const {
  if (n_embd != t.n_embd) {
    return make_error(StatusCode::kInvalidArgument,
                      "the drafter's hidden size {} is not the target's {}: it was trained for another model", n_embd,
                      t.n_embd);
  }
  if (n_vocab != t.n_vocab) {
    return make_error(StatusCode::kInvalidArgument,
                      "the drafter's vocabulary ({} tokens) is not the target's ({}): it was trained for another model",
                      n_vocab, t.n_vocab);
  }
  if (mask_token >= t.n_vocab) {
    return make_error(StatusCode::kInvalidArgument, "the drafter's mask token {} is outside the target's vocabulary",
                      mask_token);
  }
  for (int32_t l : target_layers) {
    if (l >= t.n_layer) {
      return make_error(StatusCode::kInvalidArgument, "the drafter taps target layer {} but the target has {} layers",
                        l, t.n_layer);
    }
  }
  return {};
}

}  // namespace saker::spec
