// Builtin filters (jinja2's names and arguments), plus tojson as json.dumps.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cfenv>
#include <cmath>

#include "text/jinja/interpreter.h"
#include "text/jinja/json_dump.h"

namespace saker::text::jinja {
namespace {

Value length_of(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return Value::integer(0);
    case Kind::kString: return Value::integer(int64_t(utf8_length(v.s)));
    case Kind::kList: return Value::integer(int64_t(v.list->items.size()));
    case Kind::kDict:
    case Kind::kNamespace: return Value::integer(int64_t(v.dict->entries.size()));
    default: throw Error("object of type '" + type_name(v) + "' has no len()");
  }
}

std::string lower_ascii(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Sort key: strings fold case unless case_sensitive.
Value sort_key(Interpreter& in, const Value& v, const std::string& attribute, bool case_sensitive) {
  Value k = attribute.empty() ? v : get_path(in, v, attribute);
  if (!case_sensitive && k.is_string()) k.s = lower_ascii(k.s);
  return k;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string opt_string(const CallArgs& args, size_t index, const char* name, const std::string& fallback) {
  const Value* v = arg(args, index, name);
  return v && !v->is_undefined() && !v->is_none() ? to_str(*v) : fallback;
}

Value to_int(const Value& v, const Value& fallback) {
  switch (v.kind) {
    case Kind::kInt: return v;
    case Kind::kBool: return Value::integer(v.b);
    case Kind::kFloat: return std::fabs(v.f) < 9.2e18 ? Value::integer(int64_t(v.f)) : fallback;
    case Kind::kString: {
      std::string s = py_strip(v.s, nullptr, true, true);
      std::string digits;
      for (char c : s)
        if (c != '_') digits += c;
      try {
        size_t used = 0;
        const long long x = std::stoll(digits, &used, 10);
        if (used == digits.size()) return Value::integer(x);
      } catch (const std::exception&) {
      }
      try {
        size_t used = 0;
        const double d = std::stod(digits, &used);
        if (used == digits.size() && std::fabs(d) < 9.2e18) return Value::integer(int64_t(d));
      } catch (const std::exception&) {
      }
      return fallback;
    }
    default: return fallback;
  }
}

Value to_float(const Value& v, const Value& fallback) {
  switch (v.kind) {
    case Kind::kInt: return Value::floating(double(v.i));
    case Kind::kBool: return Value::floating(v.b);
    case Kind::kFloat: return v;
    case Kind::kString: {
      const std::string s = py_strip(v.s, nullptr, true, true);
      try {
        size_t used = 0;
        const double d = std::stod(s, &used);
        if (used == s.size()) return Value::floating(d);
      } catch (const std::exception&) {
      }
      return fallback;
    }
    default: return fallback;
  }
}

// select/reject/selectattr/rejectattr.
Value select_items(Interpreter& in, const Value& input, CallArgs& args, bool by_attr, bool keep_when) {
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    const Value* a = arg(args, next++, nullptr);
    if (!a || !a->is_string()) throw Error("selectattr/rejectattr need an attribute name");
    attribute = a->s;
  }
  std::string test;
  if (const Value* t = arg(args, next++, nullptr)) test = to_str(*t);
  CallArgs test_args;
  for (size_t k = next; k < args.positional.size(); ++k) test_args.positional.push_back(args.positional[k]);
  std::vector<Value> out;
  for (const Value& item : iterate(input)) {
    in.step();
    Value v = by_attr ? get_path(in, item, attribute) : item;
    const bool hit = test.empty() ? truthy(v) : in.apply_test(test, v, test_args);
    if (hit == keep_when) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}

Value round_value(const Value& v, const CallArgs& args) {
  if (!v.is_number()) throw Error("round: expected a number");
  const int64_t precision = arg_or(args, 0, "precision", Value::integer(0)).i;
  const std::string method = opt_string(args, 1, "method", "common");
  if (v.kind != Kind::kFloat && method == "common") return v.kind == Kind::kBool ? Value::integer(v.b) : v;
  const double scale = std::pow(10.0, double(precision));
  const double x = v.as_double() * scale;
  double r;
  if (method == "floor") r = std::floor(x);
  else if (method == "ceil") r = std::ceil(x);
  else r = std::nearbyint(x);
  return Value::floating(r / scale);
}

}  // namespace

Value get_path(Interpreter& in, const Value& obj, const std::string& path) {
  Value cur = obj;
  size_t pos = 0;
  while (true) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) {
      // Python's int() has no limit; an index past int64 can only miss, so it becomes the largest one (which
      // misses too) instead of std::stoll's out_of_range.
      int64_t index = INT64_MAX;
      std::from_chars(part.data(), part.data() + part.size(), index);
      cur = in.get_item(cur, Value::integer(index));
    } else {
      cur = in.get_item(cur, Value::string(part));
    }
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  step();
  const Value& v = input;
  const Value* a0 = arg(args, 0, nullptr);
  if (name == "default" || name == "d") {
    const bool boolean = truthy(arg_or(args, 1, "boolean", Value::boolean(false)));
    if (v.is_undefined() || (boolean && !truthy(v))) return arg_or(args, 0, "default_value", Value::string(""));
    return v;
  }
  if (name == "length" || name == "count") return length_of(v);
  if (name == "string" || name == "safe" || name == "forceescape") return to_marked_string(v);
  if (name == "e" || name == "escape") return derived_string(html_escape(to_str(v)), contains_untrusted(v));
  if (name == "trim") {
    // Trimming cuts: the bytes kept keep their provenance.
    const Value text = to_marked_string(v);
    const auto [begin, end] = py_strip_bounds(text.s, arg(args, 0, "chars"), true, true);
    return substring(text, begin, end);
  }
  if (name == "title") {
    // jinja2's title filter (unlike str.title) starts words only after whitespace, '-' and opening brackets.
    std::string out = to_str(v);
    bool word_start = true;
    for (char& c : out) {
      const bool boundary = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '-' ||
                            c == '(' || c == '{' || c == '[' || c == '<';
      if (boundary) {
        word_start = true;
        continue;
      }
      c = char(word_start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
      word_start = false;
    }
    return derived_string(std::move(out), contains_untrusted(v));
  }
  if (name == "upper" || name == "lower" || name == "capitalize") {
    CallArgs none;
    return get_method(to_marked_string(v), name).func->fn(*this, none);
  }
  if (name == "replace") {
    CallArgs forwarded = args;
    return get_method(to_marked_string(v), "replace").func->fn(*this, forwarded);
  }
  if (name == "center") {
    CallArgs forwarded;
    forwarded.positional.push_back(arg_or(args, 0, "width", Value::integer(80)));
    return get_method(to_marked_string(v), "center").func->fn(*this, forwarded);
  }
  if (name == "tojson") {
    JsonDumpOptions o;
    o.ensure_ascii = truthy(arg_or(args, 0, "ensure_ascii", Value::boolean(false)));
    const Value indent = arg_or(args, 1, "indent", Value::none());
    if (indent.kind == Kind::kInt) o.indent = std::string(size_t(std::clamp<int64_t>(indent.i, 0, 64)), ' ');
    else if (indent.is_string()) o.indent = indent.s;
    const Value seps = arg_or(args, 2, "separators", Value::none());
    if (seps.is_list()) {
      if (seps.list->items.size() != 2) throw Error("tojson: separators must be a pair");
      o.item_separator = to_str(seps.list->items[0]);
      o.key_separator = to_str(seps.list->items[1]);
    }
    o.sort_keys = truthy(arg_or(args, 3, "sort_keys", Value::boolean(false)));
    o.max_bytes = limits_.max_output_bytes;
    std::string out = json_dump(v, o);
    check_size(out.size());
    return derived_string(std::move(out), contains_untrusted(v) || args_untrusted(args));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (!v.is_dict()) throw Error("items: can only get item pairs from a mapping, not " + type_name(v));
    CallArgs none;
    return get_method(v, "items").func->fn(*this, none);
  }
  if (name == "list") return Value::make_list(iterate(v));
  if (name == "first" || name == "last") {
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    // Joining is concatenation: items and separator keep their provenance.
    const Value* sep_arg = arg(args, 0, "d");
    const Value sep = sep_arg && !sep_arg->is_undefined() && !sep_arg->is_none() ? to_marked_string(*sep_arg)
                                                                                 : Value::string("");
    const std::string attribute = opt_string(args, 1, "attribute", "");
    std::string out;
    ByteRanges ranges;
    bool first = true;
    for (const Value& item : iterate(v)) {
      if (!first) append_marked(out, ranges, sep);
      first = false;
      append_marked(out, ranges, attribute.empty() ? item : get_path(*this, item, attribute));
      check_size(out.size());
    }
    return Value::string(std::move(out), std::move(ranges));
  }
  if (name == "select" || name == "reject") return select_items(*this, v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_items(*this, v, args, true, name == "selectattr");
  if (name == "map") {
    std::vector<Value> out;
    const Value* attribute = arg(args, size_t(-1), "attribute");
    if (attribute) {
      const Value* dflt = arg(args, size_t(-1), "default");
      for (const Value& item : iterate(v)) {
        Value x = get_path(*this, item, to_str(*attribute));
        out.push_back(x.is_undefined() && dflt ? *dflt : x);
      }
      return Value::make_list(std::move(out));
    }
    if (!a0) throw Error("map: expected a filter name or attribute=");
    CallArgs rest;
    for (size_t k = 1; k < args.positional.size(); ++k) rest.positional.push_back(args.positional[k]);
    rest.keyword = args.keyword;
    for (const Value& item : iterate(v)) {
      CallArgs copy = rest;
      out.push_back(apply_filter(to_str(*a0), item, copy));
    }
    return Value::make_list(std::move(out));
  }
  if (name == "unique" || name == "sort" || name == "min" || name == "max") {
    const bool case_sensitive = truthy(arg_or(args, size_t(-1), "case_sensitive", Value::boolean(false)));
    const std::string attribute = opt_string(args, size_t(-1), "attribute", "");
    std::vector<Value> items = iterate(v);
    if (name == "unique") {
      std::vector<Value> out, keys;
      for (const Value& item : items) {
        Value k = sort_key(*this, item, attribute, case_sensitive);
        if (std::none_of(keys.begin(), keys.end(), [&](const Value& x) { return equals(x, k); })) {
          keys.push_back(k);
          out.push_back(item);
        }
      }
      return Value::make_list(std::move(out));
    }
    const bool reverse = truthy(arg_or(args, name == "sort" ? 0 : size_t(-1), "reverse", Value::boolean(false)));
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : items) keyed.emplace_back(sort_key(*this, item, attribute, case_sensitive), item);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return reverse ? less_than(b.first, a.first) : less_than(a.first, b.first);
    });
    if (name == "sort") {
      std::vector<Value> out;
      for (auto& [k, item] : keyed) out.push_back(item);
      return Value::make_list(std::move(out));
    }
    if (keyed.empty()) return Value::undefined(name);
    return name == "min" ? keyed.front().second : keyed.back().second;
  }
  if (name == "dictsort") {
    if (!v.is_dict()) throw Error("dictsort: expected a mapping, not " + type_name(v));
    const bool case_sensitive = truthy(arg_or(args, 0, "case_sensitive", Value::boolean(false)));
    const bool by_value = opt_string(args, 1, "by", "key") == "value";
    const bool reverse = truthy(arg_or(args, 2, "reverse", Value::boolean(false)));
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& [k, x] : v.dict->entries) {
      Value key = by_value ? x : k;
      if (!case_sensitive && key.is_string()) key.s = lower_ascii(key.s);
      keyed.emplace_back(key, Value::make_tuple({k, x}));
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return reverse ? less_than(b.first, a.first) : less_than(a.first, b.first);
    });
    std::vector<Value> out;
    for (auto& [k, pair] : keyed) out.push_back(pair);
    return Value::make_list(std::move(out));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string> cs = utf8_chars(v.s);
      std::string out;
      for (auto it = cs.rbegin(); it != cs.rend(); ++it) out += *it;
      return derived_string(std::move(out), v.untrusted != nullptr);
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "int") return to_int(v, arg_or(args, 0, "default", Value::integer(0)));
  if (name == "float") return to_float(v, arg_or(args, 0, "default", Value::floating(0)));
  if (name == "abs") {
    if (v.kind == Kind::kFloat) return Value::floating(std::fabs(v.f));
    if (v.kind == Kind::kInt) {
      if (v.i == INT64_MIN) throw Error("integer overflow");
      return Value::integer(v.i < 0 ? -v.i : v.i);
    }
    if (v.kind == Kind::kBool) return Value::integer(v.b);
    throw Error("bad operand type for abs(): '" + type_name(v) + "'");
  }
  if (name == "round") return round_value(v, args);
  if (name == "sum") {
    const std::string attribute = opt_string(args, 0, "attribute", "");
    Value total = arg_or(args, 1, "start", Value::integer(0));
    for (const Value& item : iterate(v))
      total = arithmetic(*this, "+", total, attribute.empty() ? item : get_path(*this, item, attribute));
    return total;
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : to_str(v)) {
      const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  }
  if (name == "indent") {
    const Value width = arg_or(args, 0, "width", Value::integer(4));
    const std::string indention = width.is_string() ? width.s : std::string(size_t(std::clamp<int64_t>(width.i, 0, 256)), ' ');
    const bool first = truthy(arg_or(args, 1, "first", Value::boolean(false)));
    const bool blank = truthy(arg_or(args, 2, "blank", Value::boolean(false)));
    if (v.is_undefined()) throw Error("'" + v.s + "' is undefined");
    if (!v.is_string()) throw Error("indent: expected a string, not " + type_name(v));
    std::string s = to_str(v) + "\n";
    std::vector<std::string> lines;
    std::string cur;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '\n' || s[k] == '\r') {
        lines.push_back(cur);
        cur.clear();
        if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
      } else {
        cur += s[k];
      }
    }
    if (!cur.empty()) lines.push_back(cur);
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k > 0) out += "\n";
      if (k > 0 && (blank || !lines[k].empty())) out += indention;
      out += lines[k];
      check_size(out.size());
    }
    if (first) out = indention + out;
    return derived_string(std::move(out), contains_untrusted(v) || args_untrusted(args));
  }
  if (name == "attr") {
    if (!a0) throw Error("attr: expected a name");
    return get_attr(v, to_str(*a0));
  }
  if (name == "format") {
    std::vector<Value> vals = args.positional;
    return arithmetic(*this, "%", to_marked_string(v), Value::make_tuple(std::move(vals)));
  }
  if (name == "truncate") {
    const int64_t length = arg_or(args, 0, "length", Value::integer(255)).i;
    const bool killwords = truthy(arg_or(args, 1, "killwords", Value::boolean(false)));
    const std::string end = opt_string(args, 2, "end", "...");
    const int64_t leeway = arg_or(args, 3, "leeway", Value::integer(5)).i;
    std::vector<std::string> cs = utf8_chars(to_str(v));
    if (int64_t(cs.size()) <= length + leeway) return to_marked_string(v);
    size_t keep = size_t(std::max<int64_t>(0, length - int64_t(utf8_length(end))));
    std::string out;
    for (size_t k = 0; k < keep && k < cs.size(); ++k) out += cs[k];
    if (!killwords) {
      const size_t sp = out.rfind(' ');
      if (sp != std::string::npos) out.resize(sp);
    }
    return derived_string(out + end, contains_untrusted(v) || args_untrusted(args));
  }
  throw Error("no filter named '" + name + "'");
}

}  // namespace saker::text::jinja
