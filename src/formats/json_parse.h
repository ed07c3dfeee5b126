#pragma once
// parse_json: nlohmann::json parsing for file formats (safetensors headers, config.json, index files) with
// limits a hostile file cannot get past: bounded nesting depth, optional rejection of duplicate keys, and
// errors that name the byte offset in the file (kCorruptFile), never an exception or a deep recursion.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace saker {

struct JsonParseOptions {
  int max_depth = 64;                  // objects/arrays nested deeper are rejected
  bool reject_duplicate_keys = false;  // a key repeated inside one object is an error
};

// `what` names the file in messages; `base_offset` is where `text` starts in that file, so errors report
// file offsets.
Result<nlohmann::json> parse_json(std::string_view text, const std::string& what, uint64_t base_offset = 0,
                                  const JsonParseOptions& options = {});

// A short display of a JSON value for error messages: its type and a clipped dump.
std::string json_brief(const nlohmann::json& value);

}  // namespace saker
