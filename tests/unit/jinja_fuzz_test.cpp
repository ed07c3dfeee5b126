// Jinja robustness: random and mutated templates must come back as a Status (or a render), never a crash,
// a hang or unbounded memory. Seeds are small built-in templates plus the real chat templates when
// ../shared/data/chat_templates is present.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "jinja_test_util.h"
#include "test_paths.h"

namespace saker::testing {
namespace {

const char* kSeeds[] = {
    "{% for m in messages %}{{ m.role }}: {{ m.content|trim }}\n{% endfor %}",
    "{%- set ns = namespace(x=0) %}{% for i in range(5) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}",
    "{% macro f(a, b='x') %}{{ a ~ b }}{% if a|length < 3 %}{{ f(a ~ '.') }}{% endif %}{% endmacro %}{{ f('') }}",
    "{{ tools|tojson(indent=2) }}{% if tools is defined and tools|length > 0 %}T{% endif %}",
    "{{ messages[0]['content'].split(' ')[::-1]|join('-')|upper }}",
    "{% for k, v in d|dictsort %}{{ k }}={{ v|string }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{% if x is none %}n{% elif x is string %}s{% else %}{{ x|int + 1 }}{% endif %}",
    "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}",
    "{% raw %}{{ x }}{% endraw %}{# c #}{{ '%s'|format(1) }}",
};

const char* kFragments[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-%}", "{%-", "if ", "endif", "for ", "endfor",
                            " in ", "set ", "macro ", "endmacro", "(", ")", "[", "]", "{", "}", "|", ".", ",",
                            "'", "\"", "loop.", "ns.", "~", "+", "*", "**", "//", "not ", " is ", "defined",
                            "range(99999)", "messages", "x", "1", "-1", ":", "::", "caller()", "break", "\n",
                            "raise_exception('e')", "tojson", "namespace(", "==", "else", "elif ", "call "};

std::string mutate(std::string s, std::mt19937& rng) {
  const int n_edits = 1 + int(rng() % 4);
  for (int e = 0; e < n_edits; ++e) {
    const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0: {
        std::string out(s, 0, pos);
        out += kFragments[rng() % std::size(kFragments)];
        out.append(s, pos, std::string::npos);
        s = std::move(out);
        break;
      }
      case 1:
        if (!s.empty() && pos < s.size()) s.erase(pos, 1 + rng() % 8);
        break;
      case 2:
        if (!s.empty() && pos < s.size()) s[pos] = char(rng() % 256);
        break;
      case 3: {  // duplicate a slice (nests blocks)
        if (s.empty()) break;
        const size_t from = rng() % s.size();
        const size_t len = std::min<size_t>(s.size() - from, 1 + rng() % 64);
        std::string out;
        out.reserve(s.size() + len);
        out.append(s, 0, pos);
        out.append(s, from, len);
        out.append(s, pos, std::string::npos);
        s = std::move(out);
        break;
      }
      default: {
        std::string out(s, 0, pos);
        out += char(rng() % 256);
        out.append(s, pos, std::string::npos);
        s = std::move(out);
      }
    }
  }
  return s;
}

std::string random_soup(std::mt19937& rng) {
  std::string s;
  const int n = 1 + int(rng() % 40);
  for (int k = 0; k < n; ++k) s += kFragments[rng() % std::size(kFragments)];
  return s;
}

TEST(JinjaFuzz, RandomAndMutatedTemplatesNeverCrash) {
  std::vector<std::string> seeds(std::begin(kSeeds), std::end(kSeeds));
  const auto dir = shared_data_dir("chat_templates");
  if (!dir.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(dir / "templates")) {
      std::ifstream f(e.path());
      std::stringstream ss;
      ss << f.rdbuf();
      seeds.push_back(ss.str());
    }
  }
  const std::string context = R"({"messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "<think>x</think>Hello",
      "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
      {"role": "tool", "content": "{\"r\": 2}"}], "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}], "add_generation_prompt": true,
      "bos_token": "<s>", "eos_token": "</s>", "d": {"b": 1, "a": [1, 2]}, "x": null})";
  auto options = frozen_render_options();
  options.limits.max_steps = 200000;
  options.limits.max_output_bytes = 1 << 20;
  std::mt19937 rng(1234);
  int parsed = 0, rendered = 0, failed = 0;
  constexpr int kIterations = 3000;
  for (int it = 0; it < kIterations; ++it) {
    const std::string src = it % 4 == 3 ? random_soup(rng) : mutate(seeds[rng() % seeds.size()], rng);
    auto t = text::jinja::Template::parse(src);
    if (!t.ok()) {
      ++failed;
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().to_string() << "\n" << src;
      continue;
    }
    ++parsed;
    auto r = t.value()->render(text::jinja::from_json(nlohmann::ordered_json::parse(context)), options);
    if (r.ok()) ++rendered;
    else EXPECT_NE(r.status().code(), StatusCode::kInternal) << r.status().to_string() << "\n" << src;
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
  std::printf("jinja fuzz: %d templates, %d failed to parse, %d parsed, %d rendered\n", kIterations, failed, parsed,
              rendered);
}

}  // namespace
}  // namespace saker::testing
