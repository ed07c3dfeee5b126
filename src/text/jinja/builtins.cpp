// Builtin tests (`x is defined`, `x is string`, ...) and globals (range, namespace, dict, raise_exception,
// strftime_now).
#include <cmath>
#include <set>

#include "text/jinja/interpreter.h"

namespace saker::text::jinja {
namespace {

const std::set<std::string>& test_names() {
  static const std::set<std::string> k = {
      "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true", "false",
      "mapping", "iterable", "sequence", "callable", "odd", "even", "divisibleby", "eq", "equalto", "==", "ne",
      "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "in", "sameas", "lower",
      "upper", "escaped", "filter", "test"};
  return k;
}

// Python's a % b for the odd/even/divisibleby tests (which accept floats too).
double py_mod(const Value& a, const Value& b, const char* test) {
  if (!a.is_number() || !b.is_number())
    throw Error(std::string("test '") + test + "' needs numbers, not " + type_name(a) + " and " + type_name(b));
  const double y = b.as_double();
  if (y == 0) throw Error("integer division or modulo by zero");
  double r = std::fmod(a.as_double(), y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

}  // namespace

bool Interpreter::has_test(const std::string& name) const { return test_names().count(name) > 0; }

bool Interpreter::apply_test(const std::string& name, const Value& v, CallArgs& args) {
  step();
  const Value* a0 = arg(args, 0, nullptr);
  auto need_arg = [&]() -> const Value& {
    if (!a0) throw Error("test '" + name + "' needs an argument");
    return *a0;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::kInt;
  if (name == "float") return v.kind == Kind::kFloat;
  if (name == "boolean") return v.kind == Kind::kBool;
  if (name == "true") return v.kind == Kind::kBool && v.b;
  if (name == "false") return v.kind == Kind::kBool && !v.b;
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
  if (name == "callable") return v.kind == Kind::kCallable || v.is_undefined();
  if (name == "odd") return py_mod(v, Value::integer(2), "odd") == 1;
  if (name == "even") return py_mod(v, Value::integer(2), "even") == 0;
  if (name == "divisibleby") return py_mod(v, need_arg(), "divisibleby") == 0;
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, need_arg());
  if (name == "ne" || name == "!=") return !equals(v, need_arg());
  if (name == "lt" || name == "lessthan" || name == "<") return less_than(v, need_arg());
  if (name == "le" || name == "<=") return less_than(v, need_arg()) || equals(v, need_arg());
  if (name == "gt" || name == "greaterthan" || name == ">") return less_than(need_arg(), v);
  if (name == "ge" || name == ">=") return less_than(need_arg(), v) || equals(v, need_arg());
  if (name == "in") return contains(need_arg(), v);
  if (name == "sameas") {
    const Value& o = need_arg();
    if (v.kind != o.kind) return false;
    switch (v.kind) {
      case Kind::kList: return v.list == o.list;
      case Kind::kDict:
      case Kind::kNamespace: return v.dict == o.dict;
      case Kind::kCallable: return v.func == o.func;
      default: return equals(v, o);
    }
  }
  if (name == "lower" || name == "upper") {
    CallArgs none;
    return truthy(get_method(Value::string(to_str(v)), name == "lower" ? "islower" : "isupper").func->fn(*this, none));
  }
  if (name == "escaped") return false;
  if (name == "test") return v.is_string() && has_test(v.s);
  if (name == "filter") return v.is_string();
  throw Error("no test named '" + name + "'");
}

void add_globals(Scope& scope) {
  scope.vars["range"] = Value::callable("range", [](Interpreter& in, CallArgs& args) {
    std::vector<int64_t> a;
    for (auto& v : args.positional) {
      if (v.kind != Kind::kInt && v.kind != Kind::kBool) throw Error("range() arguments must be integers");
      a.push_back(v.kind == Kind::kBool ? v.b : v.i);
    }
    if (a.empty() || a.size() > 3) throw Error("range expected 1 to 3 arguments");
    const int64_t start = a.size() == 1 ? 0 : a[0];
    const int64_t stop = a.size() == 1 ? a[0] : a[1];
    const int64_t step = a.size() == 3 ? a[2] : 1;
    if (step == 0) throw Error("range() arg 3 must not be zero");
    // Like jinja2's sandbox (MAX_RANGE), a range may not hold more than 100000 items.
    constexpr int64_t kMaxRange = 100000;
    std::vector<Value> items;
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
      if (int64_t(items.size()) >= kMaxRange) throw Error("range too big, at most 100000 items");
      items.push_back(Value::integer(k));
      if (__builtin_add_overflow(k, step, &k)) break;
    }
    in.step();
    return Value::make_list(std::move(items));
  });
  scope.vars["namespace"] = Value::callable("namespace", [](Interpreter&, CallArgs& args) {
    Value ns = Value::make_namespace();
    for (auto& v : args.positional) {
      if (!v.is_dict()) throw Error("namespace() takes a mapping or keyword arguments");
      for (auto& [k, x] : v.dict->entries) ns.dict->set(k, x);
    }
    for (auto& [k, x] : args.keyword) ns.dict->set(Value::string(k), x);
    return ns;
  });
  scope.vars["dict"] = Value::callable("dict", [](Interpreter&, CallArgs& args) {
    Value d = Value::make_dict();
    for (auto& v : args.positional) {
      if (!v.is_dict()) throw Error("dict() takes a mapping or keyword arguments");
      for (auto& [k, x] : v.dict->entries) d.dict->set(k, x);
    }
    for (auto& [k, x] : args.keyword) d.dict->set(Value::string(k), x);
    return d;
  });
  scope.vars["raise_exception"] = Value::callable("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
    const Value* msg = arg(args, 0, "message");
    throw RaisedError(msg ? to_str(*msg) : std::string("raise_exception() called"));
  });
  scope.vars["strftime_now"] = Value::callable("strftime_now", [](Interpreter& in, CallArgs& args) {
    const Value* fmt = arg(args, 0, "format");
    if (!fmt || !fmt->is_string()) throw Error("strftime_now() needs a format string");
    return derived_string(in.strftime_now(fmt->s), fmt->untrusted != nullptr);
  });
}

}  // namespace saker::text::jinja
