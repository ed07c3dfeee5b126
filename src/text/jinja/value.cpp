#include "text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace saker::text::jinja {

namespace {
thread_local MemoryBudget* t_memory_budget = nullptr;
}  // namespace

MemoryBudget::MemoryBudget(size_t limit) : limit_(limit), previous_(t_memory_budget) { t_memory_budget = this; }
MemoryBudget::~MemoryBudget() { t_memory_budget = previous_; }

void MemoryBudget::charge(size_t bytes) {
  MemoryBudget* budget = t_memory_budget;
  if (budget == nullptr) return;
  budget->used_ += bytes;
  if (budget->used_ > budget->limit_) {
    throw Error("template exceeded its memory budget of " + std::to_string(budget->limit_) +
                " bytes (a large string or list copied over and over?)");
  }
}

#if UINTPTR_MAX == UINT64_MAX
static_assert(sizeof(Value) == 3 * sizeof(int64_t) + sizeof(std::string) + 4 * sizeof(std::shared_ptr<void>),
              "a member was added to Value: copy it in Value(const Value&) and operator=(const Value&)");
#endif

Value::Value(const Value& o)
    : kind(o.kind), b(o.b), i(o.i), f(o.f), s(o.s), untrusted(o.untrusted), list(o.list), dict(o.dict), func(o.func) {
  MemoryBudget::charge(sizeof(Value) + o.s.size());
}

Value& Value::operator=(const Value& o) {
  if (this == &o) return *this;
  MemoryBudget::charge(sizeof(Value) + o.s.size());
  kind = o.kind;
  b = o.b;
  i = o.i;
  f = o.f;
  s = o.s;
  untrusted = o.untrusted;
  list = o.list;
  dict = o.dict;
  func = o.func;
  return *this;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::kNone;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.kind = Kind::kBool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.kind = Kind::kInt;
  v.i = x;
  return v;
}
Value Value::floating(double x) {
  Value v;
  v.kind = Kind::kFloat;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  MemoryBudget::charge(sizeof(Value) + x.size());
  Value v;
  v.kind = Kind::kString;
  v.s = std::move(x);
  return v;
}
Value Value::string(std::string x, ByteRanges untrusted) {
  Value v = string(std::move(x));
  if (!untrusted.empty()) v.untrusted = std::make_shared<const ByteRanges>(std::move(untrusted));
  return v;
}
Value Value::untrusted_string(std::string x) {
  const size_t n = x.size();
  return string(std::move(x), n ? ByteRanges{{0, n}} : ByteRanges{});
}
Value Value::make_list(std::vector<Value> items) {
  MemoryBudget::charge(sizeof(Value) * (items.size() + 1));
  Value v;
  v.kind = Kind::kList;
  v.list = std::make_shared<ListData>();
  v.list->items = std::move(items);
  return v;
}
Value Value::make_tuple(std::vector<Value> items) {
  Value v = make_list(std::move(items));
  v.list->tuple = true;
  return v;
}
Value Value::make_dict() {
  Value v;
  v.kind = Kind::kDict;
  v.dict = std::make_shared<DictData>();
  return v;
}
Value Value::make_namespace() {
  Value v = make_dict();
  v.kind = Kind::kNamespace;
  return v;
}
Value Value::callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  Value v;
  v.kind = Kind::kCallable;
  v.func = std::make_shared<CallableData>();
  v.func->name = std::move(name);
  v.func->fn = std::move(fn);
  return v;
}

Value* DictData::find(const Value& key) {
  for (auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

Value* DictData::find(std::string_view key) {
  for (auto& [k, v] : entries)
    if (k.kind == Kind::kString && k.s == key) return &v;
  return nullptr;
}

void DictData::set(const Value& key, Value value) {
  if (Value* slot = find(key)) {
    *slot = std::move(value);
    return;
  }
  entries.emplace_back(key, std::move(value));
}

bool DictData::erase(const Value& key) {
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (equals(it->first, key)) {
      entries.erase(it);
      return true;
    }
  }
  return false;
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return v.b;
    case Kind::kInt: return v.i != 0;
    case Kind::kFloat: return v.f != 0;
    case Kind::kString: return !v.s.empty();
    case Kind::kList: return !v.list->items.empty();
    case Kind::kDict: return !v.dict->entries.empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

namespace {
constexpr int kMaxValueDepth = 256;  // values nested deeper (or cyclic: a list appended to itself) are refused

// str()/repr() of values that share sublists can grow exponentially; they stop here.
constexpr size_t kMaxReprBytes = size_t(64) << 20;

void check_repr_size(const std::string& out) {
  if (out.size() > kMaxReprBytes) throw Error("value too large to print");
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth) throw Error("value nested too deeply (or containing itself)");
}

bool equals_at(const Value& a, const Value& b, int depth);
bool less_than_at(const Value& a, const Value& b, int depth);
std::string repr_at(const Value& v, int depth);
std::string to_str_at(const Value& v, int depth);
}  // namespace

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }
bool less_than(const Value& a, const Value& b) { return less_than_at(a, b, 0); }
std::string repr(const Value& v) { return repr_at(v, 0); }
std::string to_str(const Value& v) { return to_str_at(v, 0); }

namespace {
bool equals_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.kind == Kind::kFloat || b.kind == Kind::kFloat) return a.as_double() == b.as_double();
    const int64_t x = a.kind == Kind::kBool ? a.b : a.i;
    const int64_t y = b.kind == Kind::kBool ? b.b : b.i;
    return x == y;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.s == b.s;
    case Kind::kList: {
      if (a.list == b.list) return true;
      if (a.list->tuple != b.list->tuple || a.list->items.size() != b.list->items.size()) return false;
      for (size_t k = 0; k < a.list->items.size(); ++k)
        if (!equals_at(a.list->items[k], b.list->items[k], depth + 1)) return false;
      return true;
    }
    case Kind::kDict: {
      if (a.dict == b.dict) return true;
      if (a.dict->entries.size() != b.dict->entries.size()) return false;
      for (auto& [k, v] : a.dict->entries) {
        Value* other = b.dict->find(k);
        if (!other || !equals_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kNamespace: return a.dict == b.dict;
    case Kind::kCallable: return a.func == b.func;
    default: return false;
  }
}

bool less_than_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.kind == Kind::kFloat || b.kind == Kind::kFloat) return a.as_double() < b.as_double();
    return (a.kind == Kind::kBool ? a.b : a.i) < (b.kind == Kind::kBool ? b.b : b.i);
  }
  if (a.is_string() && b.is_string()) return a.s < b.s;
  if (a.is_list() && b.is_list() && a.list->tuple == b.list->tuple) {
    const auto& x = a.list->items;
    const auto& y = b.list->items;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (!equals_at(x[k], y[k], depth + 1)) return less_than_at(x[k], y[k], depth + 1);
    }
    return x.size() < y.size();
  }
  throw Error("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci: [-]D[.DDD]e[+-]XX
  bool neg = false;
  size_t p = 0;
  if (sci[0] == '-') {
    neg = true;
    p = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t k = p; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  const int exp10 = std::stoi(sci.substr(e + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      out += "0." + std::string(size_t(-exp10 - 1), '0') + digits;
    } else if (size_t(exp10) + 1 >= digits.size()) {
      out += digits + std::string(size_t(exp10) + 1 - digits.size(), '0') + ".0";
    } else {
      out.append(digits, 0, size_t(exp10) + 1);
      out += '.';
      out.append(digits, size_t(exp10) + 1, std::string::npos);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1, std::string::npos);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  return out + ebuf;
}

static std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == quote) out += std::string("\\") + char(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += quote;
  return out;
}

namespace {
std::string repr_at(const Value& v, int depth) {
  check_depth(depth);
  switch (v.kind) {
    case Kind::kString: return repr_string(v.s);
    case Kind::kUndefined: return "Undefined";
    case Kind::kList: {
      std::string out = v.list->tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->items.size(); ++k) {
        if (k) out += ", ";
        out += repr_at(v.list->items[k], depth + 1);
        check_repr_size(out);
      }
      if (v.list->tuple && v.list->items.size() == 1) out += ",";
      return out + (v.list->tuple ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (auto& [k, x] : v.dict->entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_at(k, depth + 1) + ": " + repr_at(x, depth + 1);
        check_repr_size(out);
      }
      return out + "}";
    }
    default: return to_str_at(v, depth);
  }
}

std::string to_str_at(const Value& v, int depth) {
  switch (v.kind) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return v.b ? "True" : "False";
    case Kind::kInt: return std::to_string(v.i);
    case Kind::kFloat: return python_float_repr(v.f);
    case Kind::kString: return v.s;
    case Kind::kList:
    case Kind::kDict: return repr_at(v, depth);
    case Kind::kNamespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (auto& [k, x] : v.dict->entries) {
        if (!first) out += ", ";
        first = false;
        out += repr_at(k, depth + 1) + ": " + repr_at(x, depth + 1);
        check_repr_size(out);
      }
      return out + "}>";
    }
    case Kind::kCallable: return "<function " + v.func->name + ">";
  }
  return "";
}

}  // namespace

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return v.list->tuple ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

template <typename Json>
Value from_json_impl(const Json& j, Origin origin, int depth = 0) {
  const auto text = [origin](std::string s) {
    return origin == Origin::kRequest ? Value::untrusted_string(std::move(s)) : Value::string(std::move(s));
  };
  if (depth > kMaxValueDepth) throw Error("JSON context nested too deeply");
  switch (j.type()) {
    case nlohmann::detail::value_t::null: return Value::none();
    case nlohmann::detail::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::detail::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::detail::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      return u > uint64_t(INT64_MAX) ? Value::floating(double(u)) : Value::integer(int64_t(u));
    }
    case nlohmann::detail::value_t::number_float: return Value::floating(j.template get<double>());
    case nlohmann::detail::value_t::string: return text(j.template get<std::string>());
    case nlohmann::detail::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json_impl(x, origin, depth + 1));
      return Value::make_list(std::move(items));
    }
    case nlohmann::detail::value_t::object: {
      Value d = Value::make_dict();
      d.dict->entries.reserve(j.size());
      // nlohmann::json sorts keys; ordered_json keeps the document's order, as Python's json does.
      for (auto it = j.begin(); it != j.end(); ++it)
        d.dict->entries.emplace_back(text(it.key()), from_json_impl(it.value(), origin, depth + 1));
      return d;
    }
    default: return Value::none();
  }
}

Value from_json(const nlohmann::json& j, Origin origin) { return from_json_impl(j, origin); }
Value from_json(const nlohmann::ordered_json& j, Origin origin) { return from_json_impl(j, origin); }

namespace {
bool contains_untrusted_at(const Value& v, int depth) {
  check_depth(depth);
  switch (v.kind) {
    case Kind::kString: return v.untrusted != nullptr;
    case Kind::kList:
      for (const auto& x : v.list->items)
        if (contains_untrusted_at(x, depth + 1)) return true;
      return false;
    case Kind::kDict:
    case Kind::kNamespace:
      for (const auto& [k, x] : v.dict->entries)
        if (contains_untrusted_at(k, depth + 1) || contains_untrusted_at(x, depth + 1)) return true;
      return false;
    default: return false;
  }
}
}  // namespace

bool contains_untrusted(const Value& v) { return contains_untrusted_at(v, 0); }

void append_marked(std::string& out, ByteRanges& ranges, const Value& v) {
  if (v.is_string()) {
    if (v.untrusted) append_shifted(ranges, *v.untrusted, out.size());
    out += v.s;
    return;
  }
  const size_t begin = out.size();
  out += to_str(v);
  // repr() of a container quotes and escapes its strings: no byte keeps a simple place, so all of it is
  // untrusted when any part was.
  if ((v.is_list() || v.is_dict() || v.kind == Kind::kNamespace) && contains_untrusted(v))
    append_range(ranges, begin, out.size());
}

Value to_marked_string(const Value& v) {
  if (v.is_string()) return v;
  std::string text;
  ByteRanges ranges;
  append_marked(text, ranges, v);
  return Value::string(std::move(text), std::move(ranges));
}

Value derived_string(std::string text, bool from_untrusted) {
  return from_untrusted ? Value::untrusted_string(std::move(text)) : Value::string(std::move(text));
}

Value substring(const Value& v, size_t begin, size_t end) {
  end = std::min(end, v.s.size());
  begin = std::min(begin, end);
  if (!v.untrusted) return Value::string(v.s.substr(begin, end - begin));
  return Value::string(v.s.substr(begin, end - begin), slice_ranges(*v.untrusted, begin, end));
}

std::vector<Value> string_chars(const Value& v) {
  std::vector<Value> out;
  const ByteRanges* ranges = v.untrusted.get();
  size_t pos = 0;
  size_t next = 0;  // the first range that ends after pos: one walk over chars and ranges together
  for (auto& c : utf8_chars(v.s)) {
    const size_t n = c.size();
    if (ranges) {
      while (next < ranges->size() && (*ranges)[next].end <= pos) ++next;
      ByteRanges mine;
      for (size_t k = next; k < ranges->size() && (*ranges)[k].begin < pos + n; ++k)
        append_range(mine, std::max((*ranges)[k].begin, pos) - pos, std::min((*ranges)[k].end, pos + n) - pos);
      out.push_back(Value::string(std::move(c), std::move(mine)));
    } else {
      out.push_back(Value::string(std::move(c)));
    }
    pos += n;
  }
  return out;
}

namespace {
bool reaches(const Value& from, const void* target, std::vector<const void*>& seen) {
  const void* self = from.list ? static_cast<const void*>(from.list.get())
                               : from.dict ? static_cast<const void*>(from.dict.get()) : nullptr;
  if (!self) return false;
  if (self == target) return true;
  for (const void* p : seen)
    if (p == self) return false;
  seen.push_back(self);
  if (from.list) {
    for (const auto& x : from.list->items)
      if (reaches(x, target, seen)) return true;
  } else {
    for (const auto& [k, x] : from.dict->entries)
      if (reaches(x, target, seen)) return true;
  }
  return false;
}
}  // namespace

void check_no_cycle(const Value& container, const Value& item) {
  const void* target = container.list ? static_cast<const void*>(container.list.get())
                                      : static_cast<const void*>(container.dict.get());
  if (!target || (!item.list && !item.dict)) return;
  std::vector<const void*> seen;
  if (reaches(item, target, seen)) throw Error("cannot put a " + type_name(container) + " inside itself");
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  out.reserve(s.size());
  size_t k = 0;
  while (k < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (k + n > s.size()) n = 1;
    for (size_t m = 1; m < n; ++m)
      if ((static_cast<unsigned char>(s[k + m]) & 0xC0) != 0x80) n = 1;
    out.emplace_back(s.substr(k, n));
    k += n;
  }
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined: return {};
    case Kind::kList: return v.list->items;
    case Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict->entries.size());
      for (auto& [k, x] : v.dict->entries) keys.push_back(k);
      return keys;
    }
    case Kind::kString: return string_chars(v);
    default: throw Error("'" + type_name(v) + "' object is not iterable");
  }
}

}  // namespace saker::text::jinja
