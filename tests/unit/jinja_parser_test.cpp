// Jinja parser: syntax errors come back as Status naming line and column; nesting is bounded.
#include <gtest/gtest.h>

#include "jinja_test_util.h"
#include "text/jinja/template.h"

namespace saker::testing {
namespace {

using text::jinja::Template;

TEST(JinjaParser, SyntaxErrorsNameLineAndColumn) {
  struct Bad {
    const char* source;
    const char* needle;
  };
  const Bad cases[] = {
      {"{% if x %}a", "expected 'endif'"},
      {"{% for x in y %}", "expected 'endfor'"},
      {"{% endif %}", "unknown tag 'endif'"},
      {"{% if x %}{% endfor %}", "unknown tag 'endfor'"},
      {"{{ 1 + }}", "unexpected '}}'"},
      {"{{ (1, 2 }}", "unexpected '}', expected ')'"},
      {"{{ (1, 2 ", "unclosed '('"},
      {"{{ [1, 2) }}", "expected ']'"},
      {"{% for in x %}{% endfor %}", "expected 'in'"},
      {"{% set %}", "expected a name"},
      {"{% break %}", "outside a loop"},
      {"{% include 'x.jinja' %}", "unsupported tag 'include'"},
      {"{% frobnicate %}", "unknown tag 'frobnicate'"},
      {"{{ f(a=1, 2) }}", "positional argument after keyword"},
      {"{{ x[1:2:3:4] }}", "too many ':'"},
      {"{% macro m(a %}{% endmacro %}", "unexpected '}', expected ')'"},
      {"{% macro m(a) %}{% endmacro x %}", "expected '%}'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.source);
    auto t = Template::parse(c.source);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.needle), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find("line "), std::string::npos) << t.status().message();
  }
  auto t = Template::parse("ok\n{% if x %}\n  {{ a b }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 3, column 8"), std::string::npos) << t.status().message();
}

TEST(JinjaParser, Precedence) {
  // Filters bind tighter than arithmetic; `not` looser than comparisons; tests after filters.
  auto r = render_jinja(
      "{{ 'a' + ' b '|trim }}|{{ not 1 == 2 }}|{{ -2|abs }}|{{ 2 + 3 * 4 ** 2 }}|{{ 'x' ~ 2 * 3 }}|"
      "{{ [1,2]|length is odd }}|{{ 1 if 0 else 2 if 0 else 3 }}|{{ not x is defined }}");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value(), "ab|True|2|50|x6|False|3|True");
}

TEST(JinjaParser, UnknownTagsThatOnlyWrapABody) {
  auto r = render_jinja("{% generation %}kept{% endgeneration %}|{% block b %}also{% endblock %}");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value(), "kept|also");
}

TEST(JinjaParser, DeepNestingIsAnErrorNotACrash) {
  const std::pair<std::string, std::string> nests[] = {{"(", ")"}, {"[", "]"}, {"not ", ""}, {"-", ""}, {"x(", ")"}};
  for (const auto& [open, close] : nests) {
    std::string src = "{{ ";
    for (int k = 0; k < 100000; ++k) src += open;
    src += "1";
    for (int k = 0; k < 100000; ++k) src += close;
    src += " }}";
    auto t = Template::parse(src);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("nested too deeply"), std::string::npos) << t.status().message();
  }
  std::string blocks;
  for (int k = 0; k < 10000; ++k) blocks += "{% if x %}";
  EXPECT_FALSE(Template::parse(blocks).ok());
}

}  // namespace
}  // namespace saker::testing
