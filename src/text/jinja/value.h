#pragma once
// Value: what a Jinja expression evaluates to. The kinds mirror the Python objects jinja2 templates see
// (Undefined, None, bool, int, float, str, list/tuple, dict, namespace, callables), with Python's semantics
// for truth, equality, ordering, str() and repr(), because chat templates are written against Python.
// Lists, dicts and namespaces are shared by reference like Python objects (append and `ns.x = ...` mutate).
// Strings carry their provenance: which of their bytes came from outside the template (see Origin).
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/byte_ranges.h"

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

// What one render may allocate for values, as a running total never credited back: every Value copy (its
// slot and its string's bytes) and every string and list made is charged to the budget installed on the
// current thread, and a charge past the limit throws Error. This is what stops a template from exhausting
// memory by copying a large string or list over and over (`[s] * n`, appends in a loop), which the size of
// any single value does not bound. Without an installed budget (outside a render) nothing is charged.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit);  // installed on this thread until destroyed
  ~MemoryBudget();
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  static void charge(size_t bytes);
  size_t used() const { return used_; }

 private:
  size_t limit_;
  size_t used_ = 0;
  MemoryBudget* previous_;
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
  // kString: the byte ranges of s that came from outside the template (a request's messages and tools), or
  // null when every byte is the template's own. Shared and never changed in place; null costs nothing.
  std::shared_ptr<const ByteRanges> untrusted;
  std::shared_ptr<ListData> list;      // kList
  std::shared_ptr<DictData> dict;      // kDict, kNamespace
  std::shared_ptr<CallableData> func;  // kCallable

  Value() = default;
  // Copies are charged to the render's MemoryBudget; moves are free. A member added above must be copied in
  // both (value.cpp).
  Value(const Value& other);
  Value& operator=(const Value& other);
  Value(Value&&) noexcept = default;
  Value& operator=(Value&&) noexcept = default;
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value string(std::string v);
  // A string with the given untrusted ranges (well formed for v; none gives a trusted string).
  static Value string(std::string v, ByteRanges untrusted);
  // A string every byte of which came from outside.
  static Value untrusted_string(std::string v);
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

// Where the strings of a JSON context come from: the template's own variables (bos_token) or a request.
enum class Origin { kTemplate, kRequest };

// Throws Error when the JSON nests deeper than 256 levels. kRequest marks every string (keys too) untrusted.
Value from_json(const nlohmann::json& j, Origin origin = Origin::kTemplate);
Value from_json(const nlohmann::ordered_json& j, Origin origin = Origin::kTemplate);  // keeps key order

// Provenance through operations. Joining strings keeps exact ranges; cutting a string keeps the ranges of
// the bytes kept; any other transformation of a string with untrusted bytes is untrusted as a whole (a
// replace or an upper can move or make anything, and guessing would be unsafe).
// Whether v is, or holds anywhere (list items, dict keys and values), a string with untrusted bytes.
bool contains_untrusted(const Value& v);
// str(v) appended to out, its untrusted ranges to ranges: a string's own, every byte of a list or dict that
// contains_untrusted, none for numbers and the like.
void append_marked(std::string& out, ByteRanges& ranges, const Value& v);
// str(v) as a string value with that provenance (v itself when it is a string).
Value to_marked_string(const Value& v);
// A string computed from inputs: untrusted as a whole when from_untrusted (and not empty), else trusted.
Value derived_string(std::string text, bool from_untrusted);
// Bytes [begin, end) of the string v (clamped), with their ranges.
Value substring(const Value& v, size_t begin, size_t end);
// v's characters (by code point, as utf8_chars), each with its provenance.
std::vector<Value> string_chars(const Value& v);

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
