// Limits on what strangers control, one test per fuzzing finding (tests/fuzz): a chat template that copies a
// large value until memory runs out or names an index past int64, and model output whose tool calls nest without bound or carry an escape
// nlohmann::json refuses. The inputs are the sizes that broke things (the fuzz seeds are smaller versions).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "jinja_test_util.h"
#include "output_parser_test_util.h"
#include "server/output_parser/json_scanner.h"
#include "server/output_parser/message_mapping.h"

namespace saker {
namespace {

using server::JsonScanner;
using server::OutputParser;
using server::ParsedOutput;
using server::ToolCallFormat;
using server::testing::options_for;

void expect_memory_budget_error(const std::string& templ) {
  SCOPED_TRACE(templ);
  auto r = testing::render_jinja(templ);
  ASSERT_FALSE(r.ok()) << "rendered " << r.value().size() << " bytes";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("memory budget"), std::string::npos) << r.status().message();
}

TEST(UntrustedInputLimits, JinjaCopiesAreChargedToTheMemoryBudget) {
  // Every value within the size limit, but copied until the process dies (terabytes before the budget).
  expect_memory_budget_error("{{ (['x' * 30000000] * 30000000) | length }}");
  expect_memory_budget_error("{% set s = 'x' * 30000000 %}{% set l = [] %}{% for i in range(100000) %}"
                             "{% set _ = l.append(s) %}{% endfor %}{{ l | length }}");
  expect_memory_budget_error("{% set l = [] %}{% for i in range(100000) %}{% set _ = l.append(range(99999)) %}"
                             "{% endfor %}{{ l | length }}");
  // A render well inside the budget is unaffected, and the budget is a render's own (the next one starts
  // from zero).
  auto r = testing::render_jinja("{% set l = [] %}{% for i in range(1000) %}{% set _ = l.append('x' * 1000) %}"
                                 "{% endfor %}{{ l | join | length }}");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value(), "1000000");
  text::jinja::RenderOptions small = testing::frozen_render_options();
  small.limits.max_memory_bytes = 1 << 20;
  EXPECT_FALSE(testing::render_jinja("{{ ('x' * 2000000) | length }}", "{}", small).ok());
  EXPECT_TRUE(testing::render_jinja("{{ ('x' * 2000) | length }}", "{}", small).ok());
}

TEST(UntrustedInputLimits, JinjaAttributePathIndexPastInt64) {
  // Python's int() has no limit and such an index only misses; std::stoll threw out_of_range (kInternal).
  auto r = testing::render_jinja("{{ items | map(attribute='99999999999999999999') | list | length }}"
                                 "{{ items | selectattr('99999999999999999999') | list | length }}",
                                 R"({"items": [[1], {"a": 2}]})");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value(), "20");
}

TEST(UntrustedInputLimits, ScannerBoundsNestingAndPairsSurrogates) {
  EXPECT_TRUE(JsonScanner::accepts(std::string(JsonScanner::kMaxDepth, '[') + std::string(JsonScanner::kMaxDepth, ']')));
  EXPECT_FALSE(JsonScanner::accepts(std::string(JsonScanner::kMaxDepth + 1, '[') +
                                    std::string(JsonScanner::kMaxDepth + 1, ']')));
  EXPECT_TRUE(JsonScanner::accepts(" \"\\ud83d\\ude00\" "));
  EXPECT_TRUE(JsonScanner::accepts("12 "));
  for (const char* lone : {"\"\\ud800\"", "\"\\udc00\"", "\"\\ud800x\"", "\"\\ud800\\n\"", "\"\\ud800\\ud800\""}) {
    EXPECT_FALSE(JsonScanner::accepts(lone)) << lone;
    EXPECT_TRUE(nlohmann::json::parse(lone, nullptr, false).is_discarded()) << lone;  // what the scanner matches
  }
  EXPECT_FALSE(JsonScanner::accepts("{} x"));
  EXPECT_FALSE(JsonScanner::accepts("[1"));
}

// 200000 nested arrays: nlohmann::json's parser and dump recurse, and this overflowed the stack.
const std::string kDeep = std::string(200000, '[') + std::string(200000, ']');

TEST(UntrustedInputLimits, DeeplyNestedToolCallArguments) {
  // Qwen3-Coder: a parameter value too deep to be JSON stays a string.
  ParsedOutput xml = OutputParser::parse("<tool_call><function=run><parameter=code>" + kDeep +
                                             "</parameter></function></tool_call>",
                                         options_for(ToolCallFormat::kQwen3Coder));
  ASSERT_EQ(xml.tool_calls.size(), 1u);
  const nlohmann::json args = nlohmann::json::parse(xml.tool_calls[0].arguments);
  EXPECT_EQ(args["code"], kDeep);
  EXPECT_EQ(server::anthropic_tool_input(xml.tool_calls[0].arguments)["code"], kDeep);
  // Hermes: arguments too deep are not a valid call; the text comes back as content.
  auto whole = options_for(ToolCallFormat::kHermes);
  whole.stream_tool_arguments = false;
  ParsedOutput hermes =
      OutputParser::parse("<tool_call>{\"name\": \"run\", \"arguments\": {\"a\": " + kDeep + "}}</tool_call>", whole);
  EXPECT_TRUE(hermes.tool_calls.empty());
  EXPECT_FALSE(hermes.errors.empty());
  // A string-encoded arguments value that is too deep stays the string it was.
  ParsedOutput encoded = OutputParser::parse(
      "<tool_call>{\"name\": \"run\", \"arguments\": \"" + kDeep + "\"}</tool_call>", whole);
  ASSERT_EQ(encoded.tool_calls.size(), 1u);
  EXPECT_EQ(encoded.tool_calls[0].arguments, "\"" + kDeep + "\"");
  EXPECT_TRUE(server::anthropic_tool_input(encoded.tool_calls[0].arguments).empty());
  EXPECT_TRUE(server::anthropic_tool_input(kDeep).empty());
}

TEST(UntrustedInputLimits, LoneSurrogateIsNotAValidCall) {
  // Sent whole, a call is complete and valid: arguments nlohmann::json cannot parse are not a call.
  auto whole = options_for(ToolCallFormat::kHermes);
  whole.stream_tool_arguments = false;
  ParsedOutput r = OutputParser::parse("<tool_call>{\"name\": \"run\", \"arguments\": {\"\\ud800\": 1}}</tool_call>",
                                       whole);
  EXPECT_TRUE(r.tool_calls.empty());
  // A well-formed pair is fine.
  ParsedOutput pair = OutputParser::parse(
      "<tool_call>{\"name\": \"run\", \"arguments\": {\"\\ud83d\\ude00\": 1}}</tool_call>", whole);
  ASSERT_EQ(pair.tool_calls.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(pair.tool_calls[0].arguments).begin().key(), "\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace saker
