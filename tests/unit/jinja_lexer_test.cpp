// Jinja lexer: token kinds, positions, string escapes, whitespace control and errors.
#include <gtest/gtest.h>

#include "text/jinja/lexer.h"
#include "text/jinja/value.h"

namespace saker::text::jinja {
namespace {

std::string kinds(const std::vector<Token>& tokens) {
  std::string out;
  for (const auto& t : tokens) {
    switch (t.type) {
      case Tok::kText: out += "T(" + t.text + ")"; break;
      case Tok::kVarBegin: out += "{{"; break;
      case Tok::kVarEnd: out += "}}"; break;
      case Tok::kBlockBegin: out += "{%"; break;
      case Tok::kBlockEnd: out += "%}"; break;
      case Tok::kName: out += "N(" + t.text + ")"; break;
      case Tok::kString: out += "S(" + t.text + ")"; break;
      case Tok::kInt: out += "I(" + std::to_string(t.int_value) + ")"; break;
      case Tok::kFloat: out += "F(" + t.text + ")"; break;
      case Tok::kOp: out += "O(" + t.text + ")"; break;
      case Tok::kEof: out += "$"; break;
    }
    out += " ";
  }
  return out;
}

TEST(JinjaLexer, TokenKinds) {
  EXPECT_EQ(kinds(tokenize("a{{ x.y[0] | f(1, k='v') }}b")),
            "T(a) {{ N(x) O(.) N(y) O([) I(0) O(]) O(|) N(f) O(() I(1) O(,) N(k) O(=) S(v) O()) }} T(b) $ ");
  EXPECT_EQ(kinds(tokenize("{% if a == 1.5 and b != 2 %}")), "{% N(if) N(a) O(==) F(1.5) N(and) N(b) O(!=) I(2) %} $ ");
  EXPECT_EQ(kinds(tokenize("{{ a // b ** c ~ d <= e }}")), "{{ N(a) O(//) N(b) O(**) N(c) O(~) N(d) O(<=) N(e) }} $ ");
}

TEST(JinjaLexer, StringEscapes) {
  auto t = tokenize(R"({{ 'a\n\t\\\'"' "b\"c" '\u00e9\x41' 'keep\q' }})");
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t[1].text, "a\n\t\\'\"");
  EXPECT_EQ(t[2].text, "b\"c");
  EXPECT_EQ(t[3].text, "\xc3\xa9" "A");
  EXPECT_EQ(t[4].text, "keep\\q");
}

TEST(JinjaLexer, DictLiteralBracesDoNotCloseTheTag) {
  EXPECT_EQ(kinds(tokenize("{{ {'a': {'b': 1}} }}")),
            "{{ O({) S(a) O(:) O({) S(b) O(:) I(1) O(}) O(}) }} $ ");
}

TEST(JinjaLexer, LineAndColumn) {
  auto t = tokenize("ab\n  {{ x }}\n{% if y %}");
  ASSERT_GE(t.size(), 6u);
  EXPECT_EQ(t[1].type, Tok::kVarBegin);
  EXPECT_EQ(t[1].line, 2);
  EXPECT_EQ(t[1].column, 3);
  EXPECT_EQ(t[2].text, "x");
  EXPECT_EQ(t[2].column, 6);
}

TEST(JinjaLexer, WhitespaceControl) {
  // {%- strips all whitespace before, -%} all after; comments vanish.
  EXPECT_EQ(kinds(tokenize("a \n {%- if x -%} \n b{# c #}")), "T(a) {% N(if) N(x) %} T(b) $ ");
  // lstrip_blocks strips indentation before a block tag at line start; trim_blocks the newline after it.
  EXPECT_EQ(kinds(tokenize("a\n    {% if x %}\nb")), "T(a\n) {% N(if) N(x) %} T(b) $ ");
  // Not at line start: kept.
  EXPECT_EQ(kinds(tokenize("a  {% if x %}")), "T(a  ) {% N(if) N(x) %} $ ");
  // Variable tags neither lstrip nor trim.
  EXPECT_EQ(kinds(tokenize("  {{ x }}\nb")), "T(  ) {{ N(x) }} T(\nb) $ ");
  // {%+ and +%} opt out.
  EXPECT_EQ(kinds(tokenize("  {%+ if x +%}\nb")), "T(  ) {% N(if) N(x) %} T(\nb) $ ");
  // Without the options nothing is stripped.
  LexOptions plain;
  plain.trim_blocks = false;
  plain.lstrip_blocks = false;
  EXPECT_EQ(kinds(tokenize("  {% if x %}\nb", plain)), "T(  ) {% N(if) N(x) %} T(\nb) $ ");
}

TEST(JinjaLexer, RawBlock) {
  EXPECT_EQ(kinds(tokenize("{% raw %}{{ x }}{% if %}{% endraw %}!")), "T({{ x }}{% if %}) T(!) $ ");
}

TEST(JinjaLexer, NewlinesNormalizedAndTrailingNewlineDropped) {
  EXPECT_EQ(kinds(tokenize("a\r\nb\rc\n")), "T(a\nb\nc) $ ");
}

TEST(JinjaLexer, ErrorsNameLineAndColumn) {
  const char* bad[] = {"{{ x", "{% if", "{# c", "{{ 'abc }}", "x\n{{ a ? b }}", "{{ '\\u12' }}", "{% raw %}x"};
  for (const char* src : bad) {
    SCOPED_TRACE(src);
    try {
      tokenize(src);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_GE(e.line, 1);
      EXPECT_GE(e.column, 1);
    }
  }
  try {
    tokenize("x\n{{ a ? b }}");
  } catch (const Error& e) {
    EXPECT_EQ(e.line, 2);
    EXPECT_EQ(e.column, 6);
    EXPECT_NE(std::string(e.what()).find("'?'"), std::string::npos);
  }
}

}  // namespace
}  // namespace saker::text::jinja
