// Jinja interpreter: whitespace control, checked against Python jinja2.
#include <gtest/gtest.h>

#include <iterator>

#include "jinja_test_util.h"

namespace saker::testing {
namespace {

// The expected strings below are what Python jinja2 3.1 rendered for each template (the environment
// transformers uses: trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps).

// whitespace control: {%- -%}, trim_blocks, lstrip_blocks, {%+, raw, newlines.
TEST(JinjaWhitespace, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"a\n  {% if true %}\n    b\n  {% endif %}\nc",
       "{}",
       "a\n    b\nc"},
      {"x {% if 1 %}y{% endif %} z",
       "{}",
       "x y z"},
      {"{% if 1 %}  {% endif %}|",
       "{}",
       "  |"},
      {"{% if 1 %}\n  {% endif %}|",
       "{}",
       "|"},
      {"  {# comment #}\nx",
       "{}",
       "x"},
      {"a\n  {{ 1 }}\nb",
       "{}",
       "a\n  1\nb"},
      {"{% if 1 -%}\n\n  x  {%- endif %}|",
       "{}",
       "x|"},
      {"a  {%+ if 1 %}b{% endif %}",
       "{}",
       "a  b"},
      {"{% if 1 +%}\nb{% endif %}",
       "{}",
       "\nb"},
      {"a {{- ' b ' -}} c",
       "{}",
       "a b c"},
      {"a\n{#- c -#}\nb",
       "{}",
       "ab"},
      {"{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n",
       "{}",
       "  1\n  2\n"},
      {"{% raw %}{{ not evaluated }}{% endraw %}",
       "{}",
       "{{ not evaluated }}"},
      {"line\r\n{% if 1 %}\r\nx{% endif %}",
       "{}",
       "line\nx"},
      {"\t{% if 1 %}tab{% endif %}",
       "{}",
       "tab"},
      {"{{ 1 }}\n{{ 2 }}\n",
       "{}",
       "1\n2"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

}  // namespace
}  // namespace saker::testing
