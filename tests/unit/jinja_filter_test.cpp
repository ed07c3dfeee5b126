// Jinja interpreter: filters, tests and methods, checked against Python jinja2.
#include <gtest/gtest.h>

#include <iterator>

#include "jinja_test_util.h"

namespace saker::testing {
namespace {

// The expected strings below are what Python jinja2 3.1 rendered for each template (the environment
// transformers uses: trim_blocks, lstrip_blocks, loopcontrols, tojson as json.dumps).

// builtin filters and tojson as json.dumps.
TEST(JinjaFilters, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ [1, 2, 3]|length }}|{{ {'a': 1}|count }}|{{ 'héllo'|length }}",
       "{}",
       "x|hi|3|1|5"},
      {"{{ x|tojson }} {{ x|tojson(indent=2) }} {{ x|tojson(sort_keys=true) }} {{ x|tojson(separators=(',', ':')) }}",
       "{\"x\": {\"b\": [1, 2.5, \"é\\n\\\"q\\\"\"], \"a\": null, \"c\": {}, \"d\": [], \"e\": true}}",
       "{\"b\": [1, 2.5, \"é\\n\\\"q\\\"\"], \"a\": null, \"c\": {}, \"d\": [], \"e\": true} {\n  \"b\": [\n    1,\n    2.5,\n    \"é\\n\\\"q\\\"\"\n  ],\n  \"a\": null,\n  \"c\": {},\n  \"d\": [],\n  \"e\": true\n} {\"a\": null, \"b\": [1, 2.5, \"é\\n\\\"q\\\"\"], \"c\": {}, \"d\": [], \"e\": true} {\"b\":[1,2.5,\"é\\n\\\"q\\\"\"],\"a\":null,\"c\":{},\"d\":[],\"e\":true}"},
      {"{{ x|tojson(ensure_ascii=true) }} {{ 'a\\u0001b'|tojson }} {{ 1.0|tojson }} {{ 'x'|tojson(indent=4) }}",
       "{\"x\": \"é🚀\"}",
       "\"\\u00e9\\ud83d\\ude80\" \"a\\u0001b\" 1.0 \"x\""},
      {"{{ xs|selectattr('role', 'equalto', 'user')|map(attribute='c')|join(',') }} {{ xs|rejectattr('role', 'eq', 'user')|list|length }} {{ xs|map(attribute='role')|unique|list }}",
       "{\"xs\": [{\"role\": \"user\", \"c\": \"a\"}, {\"role\": \"bot\", \"c\": \"b\"}, {\"role\": \"user\", \"c\": \"c\"}]}",
       "a,c 1 ['user', 'bot']"},
      {"{{ xs|selectattr('flag')|list|length }} {{ [1, 0, 2]|select|list }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ ['a', 'b']|reject('equalto', 'a')|list }}",
       "{\"xs\": [{\"flag\": true}, {\"flag\": false}, {}]}",
       "1 [1, 2] [1, 3] ['b']"},
      {"{{ [1, 2]|first }} {{ [1, 2]|last }} {{ 'abc'|first }} {{ []|first }}|{{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }}",
       "{}",
       "1 2 a |d  d None"},
      {"{{ 5|string }} {{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '2.5'|float }} {{ 3|float }}",
       "{}",
       "5 43 4 0 7 2.5 3.0"},
      {"{{ 'Hello World'|upper }} {{ 'Hello World'|lower }} {{ 'hello wORLD'|title }} {{ 'hELLO'|capitalize }} {{ 'aXa'|replace('a', 'b') }}",
       "{}",
       "HELLO WORLD hello world Hello World Hello bXb"},
      {"{{ ['B', 'a', 'c']|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ xs|sort(attribute='n')|map(attribute='n')|list }} {{ ['b', 'A', 'a', 'B']|unique|list }}",
       "{\"xs\": [{\"n\": 2}, {\"n\": 1}]}",
       "['a', 'B', 'c'] [3, 2, 1] [1, 2] ['b', 'A']"},
      {"{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(by='value') }}",
       "{\"d\": {\"b\": 1, \"A\": 3, \"c\": 2}}",
       "[('A', 3), ('b', 1), ('c', 2)] [('c', 2), ('b', 1), ('A', 3)] [('b', 1), ('c', 2), ('A', 3)]"},
      {"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'x'|indent }}",
       "{}",
       "a\n  b\n\n  c|  a\n  b|a\n  \n  b|x"},
      {"{{ 'one two  three'|wordcount }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ [1, 2, 3]|sum }}",
       "{}",
       "3 [2, 1] cba 3 1 6"},
      {"{{ '<a href=\"x\">&\\''|e }} {{ x|safe }} {{ -3|abs }} {{ ['a', 'b']|map('upper')|join }} {{ [1, 2]|join(', ') }}",
       "{\"x\": \"<b>\"}",
       "&lt;a href=&#34;x&#34;&gt;&amp;&#39; <b> 3 AB 1, 2"},
      {"{{ {'a': 1, 'b': 2}|items|list }} {{ x|items|list }} {{ 'abc'|list }} {{ '%s=%s'|format('a', 1) }}",
       "{}",
       "[('a', 1), ('b', 2)] [] ['a', 'b', 'c'] a=1"},
      {"{{ 'hello world this is long'|truncate(9) }} {{ 'abc'|center(7) }}|",
       "{}",
       "hello...   abc  |"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

// builtin tests (is defined, is string, ...).
TEST(JinjaTests, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"{{ x is defined }} {{ y is undefined }} {{ n is none }} {{ s is string }} {{ i is number }} {{ f is float }} {{ i is integer }} {{ b is boolean }} {{ b is true }} {{ b is false }}",
       "{\"x\": 1, \"n\": null, \"s\": \"s\", \"i\": 3, \"f\": 1.5, \"b\": true}",
       "True True True True True True True True True False"},
      {"{{ d is mapping }} {{ l is mapping }} {{ d is iterable }} {{ s is iterable }} {{ i is iterable }} {{ l is sequence }} {{ s is sequence }} {{ d is sequence }} {{ i is sequence }}",
       "{\"d\": {}, \"l\": [], \"s\": \"\", \"i\": 1}",
       "True False True True False True True True False"},
      {"{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ 'a' is in 'abc' }} {{ 2 is in [1] }} {{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 3 is ge 3 }}",
       "{}",
       "True True True False True False True True True True"},
      {"{{ true is number }} {{ true is integer }} {{ none is sameas none }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ range is callable }} {{ 'x' is not string }}",
       "{}",
       "True False True True True True False"},
      {"{{ x is none or x is string }} {{ not x is defined }} {{ x is defined and x }}",
       "{}",
       "False True False"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

// Python str/list/dict methods.
TEST(JinjaMethods, MatchesJinja2) {
  static const JinjaCase kCases[] = {
      {"{{ s.startswith('he') }} {{ s.endswith('lo') }} {{ s.startswith(('x', 'h')) }} {{ s.upper() }} {{ s.title() }} {{ s.capitalize() }} {{ s.find('l') }} {{ s.rfind('l') }} {{ s.count('l') }} {{ s.find('z') }}",
       "{\"s\": \"hello\"}",
       "True True True HELLO Hello Hello 2 3 2 -1"},
      {"{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ '--x--'.strip('-') }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|",
       "{\"s\": \"  a b  \"}",
       "a b|a b  |  a b|x|x\n|"},
      {"{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a</think>b</think>c'.split('</think>')[-1] }} {{ 'x'.split('</think>', 1) }}",
       "{}",
       "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a,b', 'c'] c ['x']"},
      {"{{ 'aaa'.replace('a', 'b', 2) }} {{ '{} and {}'.format(1, 'x') }} {{ '{0}{name}'.format('a', name='b') }} {{ '-'.join(['a', 'b']) }} {{ 'a b'.split(' ')|length }}",
       "{}",
       "bba 1 and x ab a-b 2"},
      {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
       "{\"d\": {\"a\": 1, \"b\": 2}}",
       "1 None 5 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]"},
      {"{{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'x'.zfill(3) }} {{ 'abc'.removeprefix('a') }}",
       "{}",
       "True True True True 00x bc"},
      {"{% set xs = [3, 1] %}{{ xs.index(1) }} {{ xs.count(3) }} {{ xs|length }}",
       "{}",
       "1 1 2"},
  };
  expect_jinja_cases(kCases, std::size(kCases));
}

}  // namespace
}  // namespace saker::testing
