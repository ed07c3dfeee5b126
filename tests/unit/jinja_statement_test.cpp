// Jinja interpreter: statements, scoping and globals, checked against Python jinja2.
#include <gtest/gtest.h>

#include <iterator>

#include "jinja_test_util.h"

namespace saker::testing {
namespace {

// The expected strings below are what Python jinja2 3.1 rendered for each template (the environment
// transformers uses: trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps).

// for/loop.*, break/continue, set and scoping, namespace, macros, call, filter, with.
TEST(JinjaStatements, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "{\"xs\": \"abc\"}",
       "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;"},
      {"{% for x in xs %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }}|{% endfor %}",
       "{\"xs\": [1, 2, 3]}",
       ">1>2|1>2>3|2>3>|"},
      {"{% for x in xs if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% else %}none{% endfor %}",
       "{\"xs\": [1, 2, 3]}",
       "1/2:2 2/2:3 "},
      {"{% for x in [] %}x{% else %}empty{% endfor %}",
       "{}",
       "empty"},
      {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
       "{\"d\": {\"b\": 1, \"a\": 2}}",
       "b=1;a=2;ba"},
      {"{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}",
       "{\"d\": {\"b\": 1, \"a\": 2}}",
       "b=1;a=2;37"},
      {"{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
       "{}",
       "0134"},
      {"{% for i in range(3) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}",
       "{}",
       "121|122|123|"},
      {"{{ range(5)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }}",
       "{}",
       "[0, 1, 2, 3, 4] [1, 3, 5] [3, 2, 1]"},
      {"{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
       "{}",
       "12121"},
      {"{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}",
       "{}",
       "2"},
      {"{% set ns = namespace(n=0, items=[]) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
       "{}",
       "3"},
      {"{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}{{ ns.b is defined }}",
       "{}",
       "xFalse"},
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (3, 4) %}{{ c[1] }}",
       "{}",
       "124"},
      {"{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]",
       "{}",
       "[inner 2]"},
      {"{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}other{% endif %}",
       "{\"x\": 3}",
       "three"},
      {"{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', 'Hi') }} {{ greet(name='C', punct='?') }} {{ greet() }}",
       "{}",
       "Hello, A! Hi, B! Hello, C? Hello, !"},
      {"{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}",
       "{}",
       "4321"},
      {"{% macro m() %}{{ top }}{{ varargs }}{{ kwargs }}{% endmacro %}{% set top = 'T' %}{{ m(1, 2, k=3) }}",
       "{}",
       "T(1, 2){'k': 3}"},
      {"{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body{% endcall %}",
       "{}",
       "<body>"},
      {"{% macro wrap() %}<{{ caller('x') }}>{% endmacro %}{% call(v) wrap() %}got {{ v }}{% endcall %}",
       "{}",
       "<got x>"},
      {"{% filter upper %}shout {{ 'this' }}{% endfilter %}",
       "{}",
       "SHOUT THIS"},
      {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}",
       "{}",
       "3False"},
      {"{% for m in messages %}{% set content = m.content %}{% endfor %}{{ content is defined }}",
       "{\"messages\": [{\"content\": \"x\"}]}",
       "False"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

// range, namespace, dict, strftime_now.
TEST(JinjaGlobals, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"{{ strftime_now('%Y-%m-%d %H:%M') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %-d') }}",
       "{}",
       "2026-01-15 09:30 15 Jan 2026 Thursday 15"},
      {"{{ namespace(a=1).a }} {{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }}",
       "{}",
       "1 {'a': 1, 'b': 2} {'x': 1, 'y': 2}"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

}  // namespace
}  // namespace saker::testing
