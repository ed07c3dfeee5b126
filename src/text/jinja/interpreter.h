#pragma once
// Interpreter: walks the syntax tree against a context and writes the output. Scoping follows jinja2: a
// for-loop iteration and a macro call open a scope (sets inside do not leak out), if-blocks do not;
// namespaces are how templates carry state out of loops. Calls, loop steps and output size are bounded.
// The output keeps the provenance of what was written: literal text is trusted, a string value brings its
// untrusted ranges along (see value.h).
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace saker::text::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t(32) << 20;  // also bounds any single string or list built on the way
  int max_call_depth = 64;                     // nested macro calls
  uint64_t max_steps = 20'000'000;             // loop iterations, calls and outputs
  // Bytes of values a render may copy or make in all (see MemoryBudget): real chat templates use a few MiB.
  size_t max_memory_bytes = size_t(256) << 20;
};

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};

class Interpreter {
 public:
  // strftime: formats the template's notion of now (strftime_now).
  Interpreter(RenderLimits limits, std::function<std::string(const std::string&)> strftime);

  // Renders body with the variables of context (a dict). Throws Error.
  std::string render(const Body& body, const Value& context);
  // The same, with the byte ranges of the output that came from untrusted strings.
  MarkedText render_marked(const Body& body, const Value& context);

  // Used by filters, tests and methods.
  Value call(const Value& callee, CallArgs& args);
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);
  Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
  bool apply_test(const std::string& name, const Value& input, CallArgs& args);
  bool has_test(const std::string& name) const;
  void check_size(size_t bytes) const;
  void step();
  const RenderLimits& limits() const { return limits_; }
  std::string strftime_now(const std::string& format) const { return strftime_(format); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Value make_macro(const Stmt& s, const std::shared_ptr<Scope>& scope);
  // What body writes, as a string value with its provenance.
  Value capture(const Body& body, const std::shared_ptr<Scope>& scope);
  void write(const std::string& text);  // the template's own text
  void write_value(const Value& v);     // str(v) with its provenance

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_binary(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_call(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_slice(const Expr& e, const std::shared_ptr<Scope>& scope);
  CallArgs eval_args(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value lookup(const std::string& name, const Scope& scope) const;

  RenderLimits limits_;
  std::function<std::string(const std::string&)> strftime_;
  std::string* out_ = nullptr;
  ByteRanges* out_untrusted_ = nullptr;  // the untrusted ranges of *out_
  int call_depth_ = 0;
  uint64_t steps_ = 0;
};

// Builtin globals: range, namespace, dict, raise_exception, strftime_now.
void add_globals(Scope& scope);
// obj.name for str, list and dict methods (a bound callable), or Undefined when there is none.
Value get_method(const Value& obj, const std::string& name);
// Python binary operators shared by the interpreter and filters (sum): + - * / // % **.
Value arithmetic(Interpreter& in, const std::string& op, const Value& a, const Value& b);
// Python's `item in container`.
bool contains(const Value& container, const Value& item);

// Python's str.strip/lstrip/rstrip (chars null: whitespace).
std::string py_strip(const std::string& s, const Value* chars, bool left, bool right);
// The byte range [first, second) of s that py_strip keeps.
std::pair<size_t, size_t> py_strip_bounds(const std::string& s, const Value* chars, bool left, bool right);
// A dotted attribute path ("function.name", "items.0") the way filters' attribute= arguments read it.
Value get_path(Interpreter& in, const Value& obj, const std::string& path);

// Argument helpers for builtins: the i-th positional or the keyword `name`, else fallback.
const Value* arg(const CallArgs& args, size_t index, const char* name);
Value arg_or(const CallArgs& args, size_t index, const char* name, Value fallback);
// Whether any argument is or holds untrusted text (a transformation that takes one is untrusted as a whole).
bool args_untrusted(const CallArgs& args);

}  // namespace saker::text::jinja
