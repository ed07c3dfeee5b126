// Python methods templates call on values: str (startswith, split, strip, replace, format, ...), list
// (append, pop, index, ...) and dict (get, items, keys, values, ...).
#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "text/jinja/interpreter.h"

namespace saker::text::jinja {
namespace {

const std::set<std::string>& string_methods() {
  static const std::set<std::string> k = {
      "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "replace", "upper",
      "lower", "title", "capitalize", "swapcase", "find", "rfind", "index", "rindex", "count", "format", "join",
      "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "isnumeric", "isdecimal", "zfill",
      "removeprefix", "removesuffix", "center", "ljust", "rjust", "partition", "rpartition"};
  return k;
}
const std::set<std::string>& list_methods() {
  static const std::set<std::string> k = {"append", "pop", "insert", "extend", "index", "count", "remove",
                                          "reverse", "copy", "clear", "sort"};
  return k;
}
const std::set<std::string>& dict_methods() {
  static const std::set<std::string> k = {"get", "items", "keys", "values", "pop", "update", "setdefault", "copy",
                                          "clear"};
  return k;
}

const std::string& need_string(const Value* v, const char* what) {
  if (!v || !v->is_string()) throw Error(std::string(what) + " must be a string");
  return v->s;
}

int64_t need_int(const Value* v, const char* what) {
  if (!v || (v->kind != Kind::kInt && v->kind != Kind::kBool)) throw Error(std::string(what) + " must be an integer");
  return v->kind == Kind::kBool ? v->b : v->i;
}

bool is_py_space(const std::string& ch) {
  static const std::array<const char*, 22> kSpaces = {
      " ", "\t", "\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80",
      "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82", "\xe2\x80\x83", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf",
      "\xe3\x80\x80", "\xe2\x81\x9f"};
  if (ch.size() == 3 && ch[0] == '\xe2' && ch[1] == '\x80' && static_cast<unsigned char>(ch[2]) >= 0x80 &&
      static_cast<unsigned char>(ch[2]) <= 0x8a)
    return true;
  for (const char* s : kSpaces)
    if (ch == s) return true;
  return false;
}

}  // namespace

std::pair<size_t, size_t> py_strip_bounds(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<std::string> cs = utf8_chars(s);
  std::vector<std::string> set;
  const bool whitespace = !chars || chars->is_none() || chars->is_undefined();
  if (!whitespace) set = utf8_chars(need_string(chars, "strip() argument"));
  auto strip_this = [&](const std::string& c) {
    return whitespace ? is_py_space(c) : std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cs.size();
  if (left)
    while (b < e && strip_this(cs[b])) ++b;
  if (right)
    while (e > b && strip_this(cs[e - 1])) --e;
  size_t begin = 0;
  for (size_t k = 0; k < b; ++k) begin += cs[k].size();
  size_t end = begin;
  for (size_t k = b; k < e; ++k) end += cs[k].size();
  return {begin, end};
}

std::string py_strip(const std::string& s, const Value* chars, bool left, bool right) {
  const auto [begin, end] = py_strip_bounds(s, chars, left, right);
  return s.substr(begin, end - begin);
}

static std::vector<Value> py_split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {
    std::vector<std::string> cs = utf8_chars(s);
    if (from_right) std::reverse(cs.begin(), cs.end());
    std::string word;
    bool in_word = false;
    int64_t splits = 0;
    size_t k = 0;
    for (; k < cs.size(); ++k) {
      if (is_py_space(cs[k])) {
        if (in_word) {
          parts.push_back(word);
          word.clear();
          in_word = false;
          ++splits;
        }
        continue;
      }
      if (!in_word && maxsplit >= 0 && splits >= maxsplit) break;
      in_word = true;
      word += from_right ? std::string() : cs[k];
      if (from_right) word.insert(0, cs[k]);
    }
    if (in_word) parts.push_back(word);
    if (k < cs.size()) {
      // The rest, untouched (but without its leading whitespace, already skipped above).
      std::string rest;
      for (size_t m = k; m < cs.size(); ++m) from_right ? rest.insert(0, cs[m]) : rest.append(cs[m]);
      parts.push_back(rest);
    }
    if (from_right) std::reverse(parts.begin(), parts.end());
  } else {
    const std::string& d = need_string(sep, "separator");
    if (d.empty()) throw Error("empty separator");
    if (!from_right) {
      size_t pos = 0;
      int64_t splits = 0;
      while (maxsplit < 0 || splits < maxsplit) {
        const size_t f = s.find(d, pos);
        if (f == std::string::npos) break;
        parts.push_back(s.substr(pos, f - pos));
        pos = f + d.size();
        ++splits;
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      int64_t splits = 0;
      std::vector<std::string> rev;
      while (maxsplit < 0 || splits < maxsplit) {
        if (end < d.size()) break;
        const size_t f = s.rfind(d, end - d.size());
        if (f == std::string::npos) break;
        rev.push_back(s.substr(f + d.size(), end - f - d.size()));
        end = f;
        ++splits;
      }
      rev.push_back(s.substr(0, end));
      parts.assign(rev.rbegin(), rev.rend());
    }
  }
  std::vector<Value> out;
  for (auto& p : parts) out.push_back(Value::string(p));
  return out;
}

static std::string py_format(Interpreter& in, const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    const char c = fmt[k];
    if (c == '}' && k + 1 < fmt.size() && fmt[k + 1] == '}') {
      out += '}';
      ++k;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
      continue;
    }
    const size_t close = fmt.find('}', k);
    if (close == std::string::npos) throw Error("Single '{' encountered in format string");
    std::string field = fmt.substr(k + 1, close - k - 1);
    const size_t colon = field.find(':');
    if (colon != std::string::npos) field = field.substr(0, colon);  // format specs are ignored
    const Value* v = nullptr;
    if (field.empty()) {
      v = arg(args, auto_index++, nullptr);
    } else if (std::all_of(field.begin(), field.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
      v = arg(args, size_t(std::stoul(field)), nullptr);
    } else {
      v = arg(args, size_t(-1), field.c_str());
    }
    if (!v) throw Error("format: no argument for '{" + field + "}'");
    out += to_str(*v);
    in.check_size(out.size());
    k = close;
  }
  return out;
}

// Provenance: cuts (strip, removeprefix, partition) keep the kept bytes' ranges, join keeps every part's, and
// every other string a method makes from an untrusted string or argument is untrusted as a whole.
static Value string_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  const std::string& s = self.s;
  const Value* a0 = arg(args, 0, nullptr);
  const Value* a1 = arg(args, 1, nullptr);
  const bool tainted = self.untrusted != nullptr;
  auto made = [&](std::string text, bool uses_args) {
    return derived_string(std::move(text), tainted || (uses_args && args_untrusted(args)));
  };
  auto cut = [&](bool left, bool right) {
    const auto [begin, end] = py_strip_bounds(s, a0, left, right);
    return substring(self, begin, end);
  };
  if (name == "startswith" || name == "endswith") {
    if (!a0) throw Error(name + "() takes at least 1 argument");
    std::vector<Value> options = a0->is_list() ? a0->list->items : std::vector<Value>{*a0};
    for (auto& o : options) {
      const std::string& p = need_string(&o, name.c_str());
      if (name == "startswith" ? s.compare(0, p.size(), p) == 0 && s.size() >= p.size()
                               : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
        return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "strip") return cut(true, true);
  if (name == "lstrip") return cut(true, false);
  if (name == "rstrip") return cut(false, true);
  if (name == "split" || name == "rsplit") {
    const Value* sep = arg(args, 0, "sep");
    const Value* max = arg(args, 1, "maxsplit");
    std::vector<Value> parts = py_split(s, sep, max ? need_int(max, "maxsplit") : -1, name == "rsplit");
    if (tainted)
      for (Value& p : parts) p = Value::untrusted_string(std::move(p.s));
    return Value::make_list(std::move(parts));
  }
  if (name == "splitlines") {
    std::vector<Value> lines;
    std::string cur;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '\n' || s[k] == '\r') {
        lines.push_back(Value::string(cur));
        cur.clear();
        if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
      } else {
        cur += s[k];
      }
    }
    if (!cur.empty()) lines.push_back(Value::string(cur));
    if (tainted)
      for (Value& l : lines) l = Value::untrusted_string(std::move(l.s));
    return Value::make_list(std::move(lines));
  }
  if (name == "replace") {
    const std::string& from = need_string(a0, "replace() argument 1");
    const std::string& to = need_string(a1, "replace() argument 2");
    const Value* c = arg(args, 2, "count");
    int64_t count = c ? need_int(c, "count") : -1;
    std::string out;
    if (from.empty()) {
      std::vector<std::string> cs = utf8_chars(s);
      for (size_t k = 0; k <= cs.size(); ++k) {
        if (count != 0) {
          out += to;
          --count;
        }
        if (k < cs.size()) out += cs[k];
        in.check_size(out.size());
      }
      return made(std::move(out), true);
    }
    size_t pos = 0;
    while (count != 0) {
      const size_t f = s.find(from, pos);
      if (f == std::string::npos) break;
      out.append(s, pos, f - pos);
      out += to;
      in.check_size(out.size());
      pos = f + from.size();
      --count;
    }
    out.append(s, pos, std::string::npos);
    return made(std::move(out), true);
  }
  if (name == "upper" || name == "lower" || name == "swapcase") {
    std::string out = s;
    for (char& c : out) {
      const bool up = std::isupper(static_cast<unsigned char>(c));
      if (name == "upper" || (name == "swapcase" && !up)) c = char(std::toupper(static_cast<unsigned char>(c)));
      else c = char(std::tolower(static_cast<unsigned char>(c)));
    }
    return made(std::move(out), false);
  }
  if (name == "title" || name == "capitalize") {
    std::string out = s;
    bool prev_cased = false;
    for (size_t k = 0; k < out.size(); ++k) {
      const unsigned char c = static_cast<unsigned char>(out[k]);
      const bool word_start = name == "title" ? !prev_cased : k == 0;
      out[k] = char(word_start ? std::toupper(c) : std::tolower(c));
      prev_cased = std::isalpha(c) || c >= 0x80;
    }
    return made(std::move(out), false);
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const std::string& sub = need_string(a0, (name + "() argument").c_str());
    if (name == "count") {
      if (sub.empty()) return Value::integer(int64_t(utf8_length(s)) + 1);
      int64_t n = 0;
      for (size_t pos = s.find(sub); pos != std::string::npos; pos = s.find(sub, pos + sub.size())) ++n;
      return Value::integer(n);
    }
    const size_t f = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (f == std::string::npos) {
      if (name == "index" || name == "rindex") throw Error("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(int64_t(utf8_length(s.substr(0, f))));
  }
  if (name == "format") return made(py_format(in, s, args), true);
  if (name == "join") {
    if (!a0) throw Error("join() takes exactly one argument");
    std::string out;
    ByteRanges ranges;
    bool first = true;
    for (const Value& v : iterate(*a0)) {
      if (!first) append_marked(out, ranges, self);
      first = false;
      need_string(&v, "join() item");
      append_marked(out, ranges, v);
      in.check_size(out.size());
    }
    return Value::string(std::move(out), std::move(ranges));
  }
  if (name.rfind("is", 0) == 0) {
    if (s.empty()) return Value::boolean(false);
    bool all = true, any_cased = false;
    for (unsigned char c : s) {
      if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") all &= bool(std::isdigit(c));
      else if (name == "isalpha") all &= bool(std::isalpha(c));
      else if (name == "isalnum") all &= bool(std::isalnum(c));
      else if (name == "isspace") all &= bool(std::isspace(c));
      else if (name == "islower") {
        all &= !std::isupper(c);
        any_cased |= bool(std::islower(c));
      } else if (name == "isupper") {
        all &= !std::islower(c);
        any_cased |= bool(std::isupper(c));
      }
    }
    if (name == "islower" || name == "isupper") return Value::boolean(all && any_cased);
    return Value::boolean(all);
  }
  if (name == "zfill" || name == "center" || name == "ljust" || name == "rjust") {
    const int64_t width = need_int(a0, "width");
    const int64_t len = int64_t(utf8_length(s));
    if (width <= len) return self;
    in.check_size(size_t(width));
    const size_t pad = size_t(width - len);
    const std::string fill = name == "zfill" ? "0" : (a1 ? need_string(a1, "fillchar") : " ");
    auto rep = [&](size_t n) {
      std::string r;
      for (size_t k = 0; k < n; ++k) r += fill;
      return r;
    };
    if (name == "zfill") {
      if (!s.empty() && (s[0] == '-' || s[0] == '+')) return made(s.substr(0, 1) + rep(pad) + s.substr(1), true);
      return made(rep(pad) + s, true);
    }
    if (name == "ljust") return made(s + rep(pad), true);
    if (name == "rjust") return made(rep(pad) + s, true);
    const size_t left = pad / 2 + (pad & size_t(width) & 1);
    return made(rep(left) + s + rep(pad - left), true);
  }
  if (name == "removeprefix") {
    const std::string& p = need_string(a0, "prefix");
    return s.compare(0, p.size(), p) == 0 ? substring(self, p.size(), s.size()) : self;
  }
  if (name == "removesuffix") {
    const std::string& p = need_string(a0, "suffix");
    return !p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0
               ? substring(self, 0, s.size() - p.size())
               : self;
  }
  if (name == "partition" || name == "rpartition") {
    const std::string& d = need_string(a0, "separator");
    if (d.empty()) throw Error("empty separator");
    const size_t f = name == "partition" ? s.find(d) : s.rfind(d);
    if (f == std::string::npos) {
      return name == "partition" ? Value::make_tuple({self, Value::string(""), Value::string("")})
                                 : Value::make_tuple({Value::string(""), Value::string(""), self});
    }
    // The separator is given as the bytes it matched, with their provenance.
    return Value::make_tuple(
        {substring(self, 0, f), substring(self, f, f + d.size()), substring(self, f + d.size(), s.size())});
  }
  throw Error("str has no method " + name);
}

static Value list_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  auto& items = self.list->items;
  const Value* a0 = arg(args, 0, nullptr);
  if (self.list->tuple && name != "index" && name != "count") throw Error("'tuple' object has no attribute '" + name + "'");
  if (name == "append") {
    if (!a0) throw Error("append() takes exactly one argument");
    in.check_size(items.size() + 1);
    check_no_cycle(self, *a0);
    items.push_back(*a0);
    return Value::none();
  }
  if (name == "extend") {
    if (!a0) throw Error("extend() takes exactly one argument");
    for (auto& v : iterate(*a0)) {
      check_no_cycle(self, v);
      items.push_back(v);
    }
    in.check_size(items.size());
    return Value::none();
  }
  if (name == "insert") {
    int64_t k = need_int(a0, "index");
    const Value* v = arg(args, 1, nullptr);
    if (!v) throw Error("insert() takes exactly two arguments");
    check_no_cycle(self, *v);
    const int64_t n = int64_t(items.size());
    if (k < 0) k = std::max<int64_t>(0, k + n);
    items.insert(items.begin() + std::min(k, n), *v);
    return Value::none();
  }
  if (name == "pop") {
    if (items.empty()) throw Error("pop from empty list");
    int64_t k = a0 ? need_int(a0, "index") : -1;
    if (k < 0) k += int64_t(items.size());
    if (k < 0 || k >= int64_t(items.size())) throw Error("pop index out of range");
    Value v = items[size_t(k)];
    items.erase(items.begin() + k);
    return v;
  }
  if (name == "index" || name == "count" || name == "remove") {
    if (!a0) throw Error(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t k = 0; k < items.size(); ++k) {
      if (!equals(items[k], *a0)) continue;
      if (name == "index") return Value::integer(int64_t(k));
      if (name == "remove") {
        items.erase(items.begin() + int64_t(k));
        return Value::none();
      }
      ++n;
    }
    if (name == "count") return Value::integer(n);
    throw Error("list." + name + "(x): x not in list");
  }
  if (name == "reverse") {
    std::reverse(items.begin(), items.end());
    return Value::none();
  }
  if (name == "copy") return Value::make_list(items);
  if (name == "clear") {
    items.clear();
    return Value::none();
  }
  if (name == "sort") {
    const bool reverse = truthy(arg_or(args, size_t(-1), "reverse", Value::boolean(false)));
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
      return reverse ? less_than(b, a) : less_than(a, b);
    });
    return Value::none();
  }
  throw Error("list has no method " + name);
}

static Value dict_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  auto& d = *self.dict;
  const Value* a0 = arg(args, 0, nullptr);
  if (name == "get") {
    if (!a0) throw Error("get() takes at least one argument");
    if (Value* v = d.find(*a0)) return *v;
    return arg_or(args, 1, "default", Value::none());
  }
  if (name == "items" || name == "keys" || name == "values") {
    std::vector<Value> out;
    for (auto& [k, v] : d.entries) {
      if (name == "items") out.push_back(Value::make_tuple({k, v}));
      else out.push_back(name == "keys" ? k : v);
    }
    return Value::make_list(std::move(out));
  }
  if (name == "pop") {
    if (!a0) throw Error("pop() takes at least one argument");
    if (Value* v = d.find(*a0)) {
      Value out = *v;
      d.erase(*a0);
      return out;
    }
    if (const Value* dflt = arg(args, 1, nullptr)) return *dflt;
    throw Error("KeyError: " + repr(*a0));
  }
  if (name == "setdefault") {
    if (!a0) throw Error("setdefault() takes at least one argument");
    if (Value* v = d.find(*a0)) return *v;
    Value v = arg_or(args, 1, nullptr, Value::none());
    check_no_cycle(self, v);
    d.set(*a0, v);
    return v;
  }
  if (name == "update") {
    if (a0) {
      if (!a0->is_dict()) throw Error("update() expects a dict");
      for (auto& [k, v] : a0->dict->entries) {
        check_no_cycle(self, v);
        d.set(k, v);
      }
    }
    for (auto& [k, v] : args.keyword) {
      check_no_cycle(self, v);
      d.set(Value::string(k), v);
    }
    in.check_size(d.entries.size());
    return Value::none();
  }
  if (name == "copy") {
    Value out = Value::make_dict();
    out.dict->entries = d.entries;
    return out;
  }
  if (name == "clear") {
    d.entries.clear();
    return Value::none();
  }
  throw Error("dict has no method " + name);
}

Value get_method(const Value& obj, const std::string& name) {
  if (obj.is_string() && string_methods().count(name)) {
    return Value::callable("str." + name, [self = obj, name](Interpreter& in, CallArgs& args) {
      return string_method(in, self, name, args);
    });
  }
  // Bound methods hold their list or dict weakly: a method stored inside the container must not keep it alive.
  if (obj.is_list() && list_methods().count(name)) {
    std::weak_ptr<ListData> weak = obj.list;
    return Value::callable("list." + name, [weak, name](Interpreter& in, CallArgs& args) {
      Value self = Value::make_list();
      self.list = weak.lock();
      if (!self.list) throw Error("list." + name + ": the list no longer exists");
      return list_method(in, self, name, args);
    });
  }
  if (obj.is_dict() && dict_methods().count(name)) {
    std::weak_ptr<DictData> weak = obj.dict;
    return Value::callable("dict." + name, [weak, name](Interpreter& in, CallArgs& args) {
      Value self = Value::make_dict();
      self.dict = weak.lock();
      if (!self.dict) throw Error("dict." + name + ": the dict no longer exists");
      return dict_method(in, self, name, args);
    });
  }
  return Value::undefined(name);
}

}  // namespace saker::text::jinja
