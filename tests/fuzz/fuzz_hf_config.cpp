// Fuzz target: HfConfig::parse on arbitrary text, then every getter on every key the document has (top level,
// text_config and one level of dotted paths), so nlohmann's type checks and saker's conversions all run.
#include <string_view>

#include "formats/hf_config.h"
#include "fuzz_target.h"

namespace {

using namespace saker;
using saker::fuzz::consume;


void query(const HfConfig& c, const std::string& key) {
  consume(c.has(key));
  if (auto r = c.get_int(key); r.ok()) consume(static_cast<uint64_t>(*r));
  if (auto r = c.get_float(key, 1.0); r.ok()) consume(*r != 0);
  if (auto r = c.get_bool(key); r.ok()) consume(*r);
  if (auto r = c.get_string(key, "x"); r.ok()) consume(r->size());
  if (auto r = c.get_int_list(key); r.ok()) consume(r->size());
  else consume(r.status().message().size());
}

void query_all(const HfConfig& c, const nlohmann::json& node) {
  if (!node.is_object()) return;
  for (const auto& [key, value] : node.items()) {
    query(c, key);
    if (value.is_object()) {
      for (const auto& [inner, unused] : value.items()) query(c, key + "." + inner);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<HfConfig> parsed = HfConfig::parse(text, "fuzz/config.json");
  if (!parsed.ok()) {
    SAKER_FUZZ_CHECK(parsed.status().code() == StatusCode::kCorruptFile);
    return 0;
  }
  const HfConfig& c = *parsed;
  consume(c.architecture().size() + c.model_type().size() + c.text_model_type().size() + c.dtype_name().size());
  consume(c.dtype().ok());
  for (const char* key : {"num_hidden_layers", "hidden_size", "rope_scaling.factor", "eos_token_id", "a.b.c", "",
                          ".", "text_config"}) {
    query(c, key);
  }
  query_all(c, c.json());
  if (c.has_text_config()) query_all(c, c.text_json());
  consume(c.json().dump().size());
  return 0;
}
