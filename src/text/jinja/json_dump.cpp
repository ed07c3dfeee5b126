#include "text/jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace saker::text::jinja {
namespace {

void append_escaped(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  const auto append_u = [&out](unsigned cp) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    out += buf;
  };
  for (size_t k = 0; k < s.size(); ++k) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20) {
      append_u(c);
    } else if (c < 0x80 || !ensure_ascii) {
      out += char(c);
    } else {
      // Decode one UTF-8 sequence; invalid bytes pass through as U+FFFD.
      unsigned cp = 0xFFFD;
      size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
      if (n > 1 && k + n <= s.size()) {
        cp = c & (0x7F >> n);
        for (size_t m = 1; m < n; ++m) cp = (cp << 6) | (static_cast<unsigned char>(s[k + m]) & 0x3F);
        k += n - 1;
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        append_u(0xD800 + (cp >> 10));
        append_u(0xDC00 + (cp & 0x3FF));
      } else {
        append_u(cp);
      }
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return python_float_repr(d);
}

std::string key_string(const Value& k) {
  switch (k.kind) {
    case Kind::kString: return k.s;
    case Kind::kInt: return std::to_string(k.i);
    case Kind::kFloat: return float_json(k.f);
    case Kind::kBool: return k.b ? "true" : "false";
    case Kind::kNone: return "null";
    default: throw Error("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
    key_sep_ = o.key_separator ? *o.key_separator : ": ";
  }

  void dump(const Value& v, int level, std::string& out) {
    if (level > 512) throw Error("tojson: nesting too deep");
    if (out.size() > o_.max_bytes) throw Error("tojson: output too large");
    switch (v.kind) {
      case Kind::kNone: out += "null"; return;
      case Kind::kBool: out += v.b ? "true" : "false"; return;
      case Kind::kInt: out += std::to_string(v.i); return;
      case Kind::kFloat: out += float_json(v.f); return;
      case Kind::kString: append_escaped(out, v.s, o_.ensure_ascii); return;
      case Kind::kList: {
        if (v.list->items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t k = 0; k < v.list->items.size(); ++k) {
          if (k) out += item_sep_;
          newline(level + 1, out);
          dump(v.list->items[k], level + 1, out);
        }
        newline(level, out);
        out += ']';
        return;
      }
      case Kind::kDict: {
        if (v.dict->entries.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> items;
        for (auto& [k, x] : v.dict->entries) items.emplace_back(key_string(k), &x);
        if (o_.sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto& a, auto& b) { return a.first < b.first; });
        out += '{';
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) out += item_sep_;
          newline(level + 1, out);
          append_escaped(out, items[k].first, o_.ensure_ascii);
          out += key_sep_;
          dump(*items[k].second, level + 1, out);
        }
        newline(level, out);
        out += '}';
        return;
      }
      default: throw Error("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }

 private:
  void newline(int level, std::string& out) {
    if (!o_.indent) return;
    out += '\n';
    for (int k = 0; k < level; ++k) out += *o_.indent;
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

std::string json_dump(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(v, 0, out);
  return out;
}

}  // namespace saker::text::jinja
