#pragma once
// tojson: Python's json.dumps(x, ensure_ascii, indent, separators, sort_keys), byte for byte, because chat
// templates feed tool schemas to models in exactly the text Python produced at training time.
#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace saker::text::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: one line; a number n becomes n spaces
  std::optional<std::string> item_separator;  // default ", " (or "," with indent)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
  size_t max_bytes = size_t(64) << 20;  // output beyond this is an Error
};

// Throws Error for values JSON cannot hold (Undefined, namespaces, functions).
std::string json_dump(const Value& v, const JsonDumpOptions& options);

}  // namespace saker::text::jinja
