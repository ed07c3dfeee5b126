#pragma once
// The syntax tree the parser builds and the interpreter walks. Nodes are plain structs tagged by kind; the
// interpreter switches on the kind. Every node keeps the line and column where it starts, for errors.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace saker::text::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kLiteral,   // value
  kName,      // name
  kList,      // args
  kTuple,     // args
  kDict,      // args: key, value, key, value...
  kAttr,      // target.name
  kItem,      // target[args[0]]
  kSlice,     // target[a:b:c]; args[0..2] may be null
  kCall,      // target(args, kwargs)
  kFilter,    // target | name(args, kwargs); target is null inside {% filter %}
  kTest,      // target is [not] name(args)
  kUnary,     // op target: "not", "-", "+"
  kBinary,    // args[0] op args[1]
  kCondition  // args[0] if args[1] else args[2] (args[2] may be null)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  int column = 0;
  Value value;
  std::string name;  // kName, kAttr, kFilter, kTest, and the operator of kUnary/kBinary
  bool negated = false;  // kTest: `is not`
  ExprPtr target;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

enum class StmtKind {
  kText,       // text
  kOutput,     // {{ expr }}
  kIf,         // conditions[i] -> bodies[i]; else_body
  kFor,        // targets in expr [if condition] body [else else_body]
  kSet,        // targets (or ns.attr via attr) = expr
  kSetBlock,   // {% set name %}body{% endset %}
  kMacro,      // name(params) body
  kCallBlock,  // {% call(params) expr %}body{% endcall %}
  kFilterBlock,  // {% filter f %}body{% endfilter %}; expr is the filter chain with a null innermost target
  kWith,       // {% with a = 1 %}body{% endwith %}
  kBreak,
  kContinue,
  kScope,      // unknown but harmless block tags (generation): just the body
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 0;
  int column = 0;
  std::string text;                 // kText; kSet/kSetBlock/kMacro: the name; kSet with attr: the object name
  std::string attr;                 // kSet: `set ns.attr = ...`
  std::vector<std::string> targets;  // kFor loop variables; kSet unpacking
  ExprPtr expr;                     // kOutput, kFor iterable, kSet value, kCallBlock call, kFilterBlock filter
  ExprPtr condition;                // kFor filter
  std::vector<ExprPtr> conditions;  // kIf
  std::vector<Body> bodies;         // kIf
  Body body;
  Body else_body;
  std::vector<MacroParam> params;   // kMacro, kCallBlock (caller's params)
  std::vector<std::pair<std::string, ExprPtr>> assignments;  // kWith
  bool recursive = false;           // kFor
};

}  // namespace saker::text::jinja
