#pragma once
// Value: what a Jinja expression evaluates to. The kinds mirror the Python objects jinja2 templates see
// (Undefined, None, bool, int, float, str, list/tuple, dict, namespace, callables), with Python's semantics
// for truth, equality, ordering, str() and repr(), because chat templates are written against Python.
// Lists, dicts and namespaces are shared by reference like Python objects (append and `ns.x = ...` mutate).
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace saker::text::jinja {

// Raised inside the interpreter; Template turns it into a Status naming the line and column.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int line = 0, int column = 0)
      : std::runtime_error(message), line(line), column(column) {}
  int line;
  int column;
};

// raise_exception() from the template: its message is reported as is.
class RaisedError : public Error {
 public:
  using Error::Error;
};

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

struct Value;
struct ListData;
struct DictData;
struct CallableData;
class Interpreter;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Value {
  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // kString; for kUndefined, the name that was looked up (for error messages)
  std::shared_ptr<ListData> list;      // kList
  std::shared_ptr<DictData> dict;      // kDict, kNamespace
  std::shared_ptr<CallableData> func;  // kCallable

  Value() = default;
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value string(std::string v);
  static Value make_list(std::vector<Value> items = {});
  static Value make_tuple(std::vector<Value> items);
  static Value make_dict();
  static Value make_namespace();
  static Value callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  double as_double() const { return kind == Kind::kFloat ? f : kind == Kind::kBool ? (b ? 1 : 0) : double(i); }
};

struct ListData {
  std::vector<Value> items;
  bool tuple = false;
};

// Insertion-ordered like a Python dict; keys compare with Python equality.
struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  Value* find(const Value& key);
  Value* find(std::string_view key);
  void set(const Value& key, Value value);
  bool erase(const Value& key);
};

struct CallableData {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

// Python truthiness.
bool truthy(const Value& v);
// Python ==.
bool equals(const Value& a, const Value& b);
// Python <; throws Error for unorderable types.
bool less_than(const Value& a, const Value& b);
// Python str() (Undefined prints as "").
std::string to_str(const Value& v);
// Python repr().
std::string repr(const Value& v);
// Python's float repr: shortest round trip, "1.0", "1e+16", "1.5e-05", "inf", "nan".
std::string python_float_repr(double d);
// "str", "int", "dict", ... as Python would name the type.
std::string type_name(const Value& v);

// Throws Error when the JSON nests deeper than 256 levels.
// Throws Error when the JSON nests deeper than 256 levels.
Value from_json(const nlohmann::json& j);
Value from_json(const nlohmann::ordered_json& j);  // keeps key order, like Python's json

// Before storing item inside container (append, ns.x = ...): throws Error when container is reachable from item,
// since a value that contains itself could never be printed and never freed.
void check_no_cycle(const Value& container, const Value& item);

// Iterates a value the way Python's iter() does: list items, dict keys, string characters; Undefined is
// empty. Throws Error for non-iterables.
std::vector<Value> iterate(const Value& v);

// Strings index by code point, like Python's str.
std::vector<std::string> utf8_chars(std::string_view s);
size_t utf8_length(std::string_view s);

}  // namespace saker::text::jinja
