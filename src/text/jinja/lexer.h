#pragma once
// Lexer: template source to tokens. Applies whitespace control as jinja2 does with trim_blocks and
// lstrip_blocks on: `{%-`/`-%}` strip all whitespace on that side, a block or comment tag alone on its line
// loses its indentation, the newline after a block or comment tag is dropped, and `{%+`/`+%}` opt out.
// Comments vanish here and `{% raw %}` bodies come out as plain text. Newlines are normalized to "\n" and
// one trailing newline of the template is dropped, as jinja2 does by default.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace saker::text::jinja {

enum class Tok {
  kText,        // template data
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,
  kInt,
  kFloat,
  kOp,  // punctuation and operators: + - * / // % ** ~ ( ) [ ] { } . , : | = == != < > <= >=
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;  // kText, kName, kString (unescaped), kOp
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws Error (with line and column) on unterminated tags, strings or comments and stray characters.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options = {});

}  // namespace saker::text::jinja
