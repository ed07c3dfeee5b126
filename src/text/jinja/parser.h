#pragma once
// Parser: tokens to a syntax tree, by recursive descent over jinja2's grammar and operator precedence
// (conditional < or < and < not < comparisons/in < + - < ~ < * / // % < ** < unary < filters/tests <
// attribute, subscript, call). Nesting is bounded so hostile input cannot exhaust the stack.
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace saker::text::jinja {

inline constexpr int kMaxParseDepth = 200;

// Throws Error with the line and column of the offending token.
Body parse(const std::vector<Token>& tokens);

}  // namespace saker::text::jinja
