// Expressions: names, literals, attribute and item access, slicing, calls, operators.
#include <cmath>
#include <cstdint>

#include "text/jinja/interpreter.h"

namespace saker::text::jinja {

const Value* arg(const CallArgs& args, size_t index, const char* name) {
  if (index < args.positional.size()) return &args.positional[index];
  if (name) {
    for (auto& [k, v] : args.keyword)
      if (k == name) return &v;
  }
  return nullptr;
}

Value arg_or(const CallArgs& args, size_t index, const char* name, Value fallback) {
  const Value* v = arg(args, index, name);
  return v ? *v : fallback;
}

bool args_untrusted(const CallArgs& args) {
  for (const Value& a : args.positional)
    if (contains_untrusted(a)) return true;
  for (const auto& [k, a] : args.keyword)
    if (contains_untrusted(a)) return true;
  return false;
}

Value Interpreter::lookup(const std::string& name, const Scope& scope) const {
  for (const Scope* s = &scope; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  return Value::undefined(name);
}

[[noreturn]] static void fail_undefined(const Value& v) {
  throw Error(v.s.empty() ? std::string("value is undefined") : "'" + v.s + "' is undefined");
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case Kind::kUndefined: fail_undefined(obj);
    case Kind::kDict: {
      Value m = get_method(obj, name);
      if (!m.is_undefined()) return m;
      if (Value* v = obj.dict->find(name)) return *v;
      return Value::undefined(name);
    }
    case Kind::kNamespace: {
      if (Value* v = obj.dict->find(name)) return *v;
      return Value::undefined(name);
    }
    case Kind::kString:
    case Kind::kList: {
      Value m = get_method(obj, name);
      return m.is_undefined() ? Value::undefined(name) : m;
    }
    default: return Value::undefined(name);
  }
}

static int64_t normalize_index(int64_t k, size_t n) { return k < 0 ? k + int64_t(n) : k; }

static Value missing_index(int64_t k) {
  std::string hint = "[";
  hint += std::to_string(k);
  hint += ']';
  return Value::undefined(std::move(hint));
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  switch (obj.kind) {
    case Kind::kUndefined: fail_undefined(obj);
    case Kind::kDict: {
      if (Value* v = obj.dict->find(key)) return *v;
      if (key.is_string()) {
        Value m = get_method(obj, key.s);
        if (!m.is_undefined()) return m;
      }
      return Value::undefined(to_str(key));
    }
    case Kind::kNamespace: return key.is_string() ? get_attr(obj, key.s) : Value::undefined();
    case Kind::kList:
    case Kind::kString: {
      if (key.is_string()) return get_attr(obj, key.s);
      if (key.kind != Kind::kInt && key.kind != Kind::kBool) return Value::undefined();
      const int64_t raw = key.kind == Kind::kBool ? key.b : key.i;
      if (obj.kind == Kind::kList) {
        const int64_t k = normalize_index(raw, obj.list->items.size());
        if (k < 0 || k >= int64_t(obj.list->items.size())) return missing_index(raw);
        return obj.list->items[size_t(k)];
      }
      std::vector<Value> chars = string_chars(obj);
      const int64_t k = normalize_index(raw, chars.size());
      if (k < 0 || k >= int64_t(chars.size())) return missing_index(raw);
      return chars[size_t(k)];
    }
    default: return Value::undefined();
  }
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  step();
  if (callee.kind == Kind::kUndefined) fail_undefined(callee);
  if (callee.kind != Kind::kCallable) throw Error("'" + type_name(callee) + "' object is not callable");
  return callee.func->fn(*this, args);
}

CallArgs Interpreter::eval_args(const Expr& e, const std::shared_ptr<Scope>& scope) {
  CallArgs args;
  for (const auto& a : e.args) args.positional.push_back(eval(*a, scope));
  for (const auto& [name, a] : e.kwargs) args.keyword.emplace_back(name, eval(*a, scope));
  return args;
}

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  try {
    switch (e.kind) {
      case ExprKind::kLiteral: return e.value;
      case ExprKind::kName: return lookup(e.name, *scope);
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        for (const auto& a : e.args) items.push_back(eval(*a, scope));
        return e.kind == ExprKind::kList ? Value::make_list(std::move(items)) : Value::make_tuple(std::move(items));
      }
      case ExprKind::kDict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) d.dict->set(eval(*e.args[k], scope), eval(*e.args[k + 1], scope));
        return d;
      }
      case ExprKind::kAttr: return get_attr(eval(*e.target, scope), e.name);
      case ExprKind::kItem: return get_item(eval(*e.target, scope), eval(*e.args[0], scope));
      case ExprKind::kSlice: return eval_slice(e, scope);
      case ExprKind::kCall: return eval_call(e, scope);
      case ExprKind::kFilter: {
        if (!e.target) throw Error("filter without input");
        Value input = eval(*e.target, scope);
        CallArgs args = eval_args(e, scope);
        return apply_filter(e.name, input, args);
      }
      case ExprKind::kTest: {
        Value input = eval(*e.target, scope);
        CallArgs args = eval_args(e, scope);
        return Value::boolean(apply_test(e.name, input, args) != e.negated);
      }
      case ExprKind::kUnary: {
        Value v = eval(*e.target, scope);
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) throw Error("bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
        if (e.name == "+") return v.kind == Kind::kBool ? Value::integer(v.b) : v;
        if (v.kind == Kind::kFloat) return Value::floating(-v.f);
        if (v.kind == Kind::kInt && v.i == INT64_MIN) throw Error("integer overflow");
        return Value::integer(-(v.kind == Kind::kBool ? int64_t(v.b) : v.i));
      }
      case ExprKind::kBinary: return eval_binary(e, scope);
      case ExprKind::kCondition: {
        if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
        return e.args[2] ? eval(*e.args[2], scope) : Value::undefined();
      }
    }
  } catch (Error& err) {
    if (err.line == 0) {
      err.line = e.line;
      err.column = e.column;
    }
    throw;
  }
  return Value::undefined();
}

Value Interpreter::eval_call(const Expr& e, const std::shared_ptr<Scope>& scope) {
  // obj.method(...): bound methods hold their list or dict weakly, so the object (maybe a temporary such as
  // a list literal) is kept alive here for the duration of the call.
  if (e.target->kind == ExprKind::kAttr || e.target->kind == ExprKind::kItem) {
    const Expr& t = *e.target;
    Value obj = eval(*t.target, scope);
    Value callee = t.kind == ExprKind::kAttr ? get_attr(obj, t.name) : get_item(obj, eval(*t.args[0], scope));
    CallArgs args = eval_args(e, scope);
    return call(callee, args);
  }
  Value callee = eval(*e.target, scope);
  CallArgs args = eval_args(e, scope);
  return call(callee, args);
}

static int64_t slice_bound(const Value& v, const char* what) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  throw Error(std::string("slice ") + what + " must be an integer or none");
}

Value Interpreter::eval_slice(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value target = eval(*e.target, scope);
  if (target.is_undefined()) fail_undefined(target);
  Value parts[3];
  for (int k = 0; k < 3; ++k) parts[k] = e.args[size_t(k)] ? eval(*e.args[size_t(k)], scope) : Value::none();
  int64_t step = 1;
  if (!parts[2].is_none()) step = slice_bound(parts[2], "step");
  if (step == 0) throw Error("slice step cannot be zero");
  std::vector<std::string> chars;
  size_t n = 0;
  if (target.is_list()) n = target.list->items.size();
  else if (target.is_string()) {
    chars = utf8_chars(target.s);
    n = chars.size();
  } else if (target.is_dict()) {
    throw Error("unhashable type: 'slice'");
  } else {
    throw Error("'" + type_name(target) + "' object is not subscriptable");
  }
  const int64_t len = int64_t(n);
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_none() || v.is_undefined()) return dflt;
    int64_t x = slice_bound(v, "index");
    if (x < 0) x += len;
    if (step > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t start = clamp(parts[0], step > 0 ? 0 : len - 1);
  const int64_t stop = clamp(parts[1], step > 0 ? len : -1);
  std::vector<size_t> picked;
  for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
    picked.push_back(size_t(k));
    if (__builtin_add_overflow(k, step, &k)) break;
  }
  if (target.is_list()) {
    std::vector<Value> items;
    for (size_t k : picked) items.push_back(target.list->items[k]);
    Value out = Value::make_list(std::move(items));
    out.list->tuple = target.list->tuple;
    return out;
  }
  if (!target.untrusted) {
    std::string s;
    for (size_t k : picked) s += chars[k];
    return Value::string(std::move(s));
  }
  // Each picked character keeps its own provenance (a slice is a cut, not a transformation).
  std::vector<Value> marked = string_chars(target);
  std::string s;
  ByteRanges ranges;
  for (size_t k : picked) append_marked(s, ranges, marked[k]);
  return Value::string(std::move(s), std::move(ranges));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::kString:
      if (!item.is_string()) throw Error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.s.find(item.s) != std::string::npos;
    case Kind::kList:
      for (const auto& x : container.list->items)
        if (equals(x, item)) return true;
      return false;
    case Kind::kDict:
    case Kind::kNamespace:
      if (item.is_list() && !item.list->tuple) throw Error("unhashable type: 'list'");
      if (item.is_dict()) throw Error("unhashable type: 'dict'");
      return container.dict->find(item) != nullptr;
    case Kind::kUndefined: return false;
    default: throw Error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

static Value repeat(Interpreter& in, const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  in.check_size(size_t(times));
  if (seq.is_string()) {
    in.check_size(seq.s.size() * size_t(times));
    std::string out;
    for (int64_t k = 0; k < times; ++k) out += seq.s;
    return derived_string(std::move(out), seq.untrusted != nullptr);
  }
  in.check_size(seq.list->items.size() * size_t(times));
  std::vector<Value> items;
  for (int64_t k = 0; k < times; ++k) items.insert(items.end(), seq.list->items.begin(), seq.list->items.end());
  return Value::make_list(std::move(items));
}

// a + b for two strings, each keeping its provenance.
static Value concat_strings(const Value& a, const Value& b) {
  if (!a.untrusted && !b.untrusted) return Value::string(a.s + b.s);
  std::string s;
  ByteRanges ranges;
  append_marked(s, ranges, a);
  append_marked(s, ranges, b);
  return Value::string(std::move(s), std::move(ranges));
}

static int64_t as_int(const Value& v) { return v.kind == Kind::kBool ? int64_t(v.b) : v.i; }

// Python ints are unbounded; saker's are 64-bit and overflowing is an error rather than a wrong number.
static Value checked_int(bool overflowed, int64_t v) {
  if (overflowed) throw Error("integer overflow");
  return Value::integer(v);
}

static int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw Error("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value arithmetic(Interpreter& in, const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && a.kind != Kind::kFloat && b.kind != Kind::kFloat;
  auto type_error = [&]() -> Value {
    throw Error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  if (op == "+") {
    if (ints) {
      int64_t r = 0;
      const bool overflowed = __builtin_add_overflow(as_int(a), as_int(b), &r);
      return checked_int(overflowed, r);
    }
    if (nums) return Value::floating(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      in.check_size(a.s.size() + b.s.size());
      return concat_strings(a, b);
    }
    if (a.is_list() && b.is_list() && a.list->tuple == b.list->tuple) {
      in.check_size(a.list->items.size() + b.list->items.size());
      std::vector<Value> items = a.list->items;
      items.insert(items.end(), b.list->items.begin(), b.list->items.end());
      Value out = Value::make_list(std::move(items));
      out.list->tuple = a.list->tuple;
      return out;
    }
    return type_error();
  }
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      const bool overflowed = __builtin_sub_overflow(as_int(a), as_int(b), &r);
      return checked_int(overflowed, r);
    }
    if (nums) return Value::floating(a.as_double() - b.as_double());
    return type_error();
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      const bool overflowed = __builtin_mul_overflow(as_int(a), as_int(b), &r);
      return checked_int(overflowed, r);
    }
    if (nums) return Value::floating(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_list()) && (b.kind == Kind::kInt || b.kind == Kind::kBool)) return repeat(in, a, as_int(b));
    if ((b.is_string() || b.is_list()) && (a.kind == Kind::kInt || a.kind == Kind::kBool)) return repeat(in, b, as_int(a));
    return type_error();
  }
  if (op == "/") {
    if (!nums) return type_error();
    if (b.as_double() == 0) throw Error("division by zero");
    return Value::floating(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) return type_error();
    if (b.as_double() == 0) throw Error("integer division or modulo by zero");
    if (ints) return Value::integer(floor_div(as_int(a), as_int(b)));
    return Value::floating(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (a.is_string()) {
      // printf-style formatting: %s %d %r %%, the argument a value or a tuple of values.
      std::vector<Value> vals = b.is_list() && b.list->tuple ? b.list->items : std::vector<Value>{b};
      std::string out;
      size_t next = 0;
      for (size_t k = 0; k < a.s.size(); ++k) {
        if (a.s[k] != '%' || k + 1 >= a.s.size()) {
          out += a.s[k];
          continue;
        }
        const char c = a.s[++k];
        if (c == '%') {
          out += '%';
          continue;
        }
        if (next >= vals.size()) throw Error("not enough arguments for format string");
        const Value& v = vals[next++];
        if (c == 's') out += to_str(v);
        else if (c == 'r') out += repr(v);
        else if (c == 'd' || c == 'i') out += std::to_string(v.kind == Kind::kFloat ? int64_t(v.f) : as_int(v));
        else throw Error(std::string("unsupported format character '") + c + "'");
      }
      if (next < vals.size() && !b.is_dict()) throw Error("not all arguments converted during string formatting");
      return derived_string(std::move(out), a.untrusted != nullptr || contains_untrusted(b));
    }
    if (!nums) return type_error();
    if (b.as_double() == 0) throw Error("integer division or modulo by zero");
    if (ints) {
      const int64_t x = as_int(a), y = as_int(b);
      return Value::integer(x - floor_div(x, y) * y);
    }
    const double x = a.as_double(), y = b.as_double();
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::floating(r);
  }
  if (op == "**") {
    if (!nums) return type_error();
    if (ints && as_int(b) >= 0) {
      int64_t result = 1, base = as_int(a);
      for (int64_t k = 0; k < as_int(b); ++k) {
        if (__builtin_mul_overflow(result, base, &result)) throw Error("integer overflow");
        if (result == 0 || result == 1) break;
      }
      return Value::integer(result);
    }
    return Value::floating(std::pow(a.as_double(), b.as_double()));
  }
  throw Error("unknown operator " + op);
}

Value Interpreter::eval_binary(const Expr& e, const std::shared_ptr<Scope>& scope) {
  const std::string& op = e.name;
  if (op == "and") {
    Value a = eval(*e.args[0], scope);
    return truthy(a) ? eval(*e.args[1], scope) : a;
  }
  if (op == "or") {
    Value a = eval(*e.args[0], scope);
    return truthy(a) ? a : eval(*e.args[1], scope);
  }
  Value a = eval(*e.args[0], scope);
  Value b = eval(*e.args[1], scope);
  if (op == "~") {
    std::string s;
    ByteRanges ranges;
    append_marked(s, ranges, a);
    append_marked(s, ranges, b);
    check_size(s.size());
    return Value::string(std::move(s), std::move(ranges));
  }
  if (op == "==") return Value::boolean(equals(a, b));
  if (op == "!=") return Value::boolean(!equals(a, b));
  if (op == "<") return Value::boolean(less_than(a, b));
  if (op == ">") return Value::boolean(less_than(b, a));
  if (op == "<=") return Value::boolean(less_than(a, b) || equals(a, b));
  if (op == ">=") return Value::boolean(less_than(b, a) || equals(a, b));
  if (op == "in") return Value::boolean(contains(b, a));
  if (op == "not in") return Value::boolean(!contains(b, a));
  return arithmetic(*this, op, a, b);
}

}  // namespace saker::text::jinja
