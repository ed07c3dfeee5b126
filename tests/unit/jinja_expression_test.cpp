// Jinja interpreter: expressions and operators, checked against Python jinja2.
#include <gtest/gtest.h>

#include <iterator>

#include "jinja_test_util.h"

namespace saker::testing {
namespace {

// The expected strings below are what Python jinja2 3.1 rendered for each template (the environment
// transformers uses: trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps).

// operators, precedence, literals, Python str() of values, slicing, undefined.
TEST(JinjaExpressions, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 10 / 5 }}",
       "{}",
       "7 9 64 3 -4 2 3.5 2.0"},
      {"{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1.5e-5 }} {{ 3.0 * 2 }} {{ 1 + true }} {{ -0.0 }}",
       "{}",
       "1.0 0.30000000000000004 1e+16 1.5e-05 6.0 2 -0.0"},
      {"{{ 'a' ~ 1 ~ none ~ true ~ 2.50 }}",
       "{}",
       "a1NoneTrue2.5"},
      {"{{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1, 2] + [3] }}",
       "{}",
       "ababab [1, 1] [1, 2, 3]"},
      {"{{ x }} {{ y }} {{ t }} {{ n }}",
       "{\"x\": [1, \"a\", \"it's\", null, true, 1.0, {\"k\": []}], \"y\": {\"a\": \"b\\n\"}, \"t\": true, \"n\": null}",
       "[1, 'a', \"it's\", None, True, 1.0, {'k': []}] {'a': 'b\\n'} True None"},
      {"{{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 1 < 2 < 3 }} {{ 'b' > 'a' }} {{ [1,2] == [1,2] }} {{ 1 == true }}",
       "{}",
       "True True True True True True"},
      {"{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }}",
       "{}",
       "True True True True"},
      {"{{ 'yes' if x else 'no' }}|{{ 'yes' if y }}|{{ x and y }}|{{ x or y }}|{{ not x }}",
       "{\"x\": 0, \"y\": \"s\"}",
       "no|yes|0|s|True"},
      {"{{ x[0] }} {{ x[-1] }} {{ x[1:] }} {{ x[::-1] }} {{ x[:-1] }} {{ x[10] }}|{{ s[1:3] }} {{ s[::-1] }} {{ s|length }}",
       "{\"x\": [1, 2, 3], \"s\": \"héllo\"}",
       "1 3 [2, 3] [3, 2, 1] [1, 2] |él olléh 5"},
      {"{{ d.a }} {{ d['a'] }} {{ d.missing }}|{{ d.b.c }} {{ d['b']['c'] }}",
       "{\"d\": {\"a\": 1, \"b\": {\"c\": 2}}}",
       "1 1 |2 2"},
      {"{{ (1, 2) }} {{ (1,) }} {{ () }} {{ [] }} {{ {} }} {{ {'a': [1, (2, 3)]} }}",
       "{}",
       "(1, 2) (1,) () [] {} {'a': [1, (2, 3)]}"},
      {"{{ \"it's\" }} {{ 'say \"hi\"' }} {{ 'tab\\there' }} {{ '\\u00e9\\x41' }} {{ 'a' 'b' }}",
       "{}",
       "it's say \"hi\" tab\there éA ab"},
      {"{{ -x }} {{ +x }} {{ - 2 ** 2 }}",
       "{\"x\": 3}",
       "-3 3 4"},
      {"{{ none is none }} {{ x is none }} {{ x is not defined }} {{ none is not none }}",
       "{}",
       "True False True False"},
      {"{{ x|length > 1 and x[0] == 1 }}",
       "{\"x\": [1, 2]}",
       "True"},
      {"{{ 'a' + 'b' | upper }} {{ '\\n' + ' x ' | trim + '\\n' }}",
       "{}",
       "aB \nx\n"},
      {"{{ '%s-%d' % ('a', 3) }} {{ '%s' % 'x' }} {{ '100%%' % () }}",
       "{}",
       "a-3 x 100%"},
      {"{{ 1.5|round }} {{ 2.5|round }} {{ 3|round }} {{ 1.25|round(1) }} {{ 2.7|round(method='floor') }}",
       "{}",
       "2.0 2.0 3 1.2 2.0"},
      {"{{ undefined_thing }}|{{ undefined_thing ~ 'x' }}|{{ undefined_thing|length }}",
       "{}",
       "|x|0"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

}  // namespace
}  // namespace saker::testing
