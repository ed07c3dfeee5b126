// Output parser: Qwen3-Coder XML, Llama 3 JSON and Mistral tool calls, format detection, random outputs.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "output_parser_test_util.h"

namespace saker::server {
namespace {

using testing::check_all_splits;
using testing::options_for;
using testing::run_chunks;

TEST(OutputParserFormat, DetectsFromTheChatTemplate) {
  EXPECT_EQ(detect_tool_call_format("{% for tool in tools %}...<tool_call>\n{\"name\": ...}</tool_call>"),
            ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("<tool_call>\n<function=name>\n<parameter=p>"), ToolCallFormat::kQwen3Coder);
  EXPECT_EQ(detect_tool_call_format("{{ '[AVAILABLE_TOOLS]' }}...{{ '[TOOL_CALLS]' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(detect_tool_call_format("{{- '<|python_tag|>' }}"), ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_tool_call_format("{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}"),
            ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_tool_call_format("{{ '<|im_start|>' + role }}"), ToolCallFormat::kNone);
  EXPECT_EQ(detect_tool_call_format(""), ToolCallFormat::kNone);
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kHermes, ToolCallFormat::kQwen3Coder,
                           ToolCallFormat::kLlama3, ToolCallFormat::kMistral}) {
    ToolCallFormat back = ToolCallFormat::kNone;
    EXPECT_TRUE(parse_tool_call_format(tool_call_format_name(f), &back));
    EXPECT_EQ(back, f);
  }
  ToolCallFormat unused;
  EXPECT_FALSE(parse_tool_call_format("bogus", &unused));
}

TEST(OutputParserFormat, IdGenerator) {
  ToolCallIdGenerator a(7), b(7), c(8);
  std::string id = a.next();
  EXPECT_EQ(id, b.next());
  EXPECT_NE(id, c.next());
  EXPECT_NE(id, a.next());
  ASSERT_EQ(id.size(), 29u);
  EXPECT_EQ(id.substr(0, 5), "call_");
}

TEST(OutputParserQwen3Coder, XmlCallWithTypesFromTheSchema) {
  OutputParserOptions options = options_for(ToolCallFormat::kQwen3Coder);
  options.tools = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"},
      "days": {"type": "integer"}, "opts": {"type": "object"}}}}}])");
  std::string text =
      "Let me look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n"
      "<parameter=zip>\n01000\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"a\": [1]}\n"
      "</parameter>\n</function>\n</tool_call>";
  ParsedOutput r = check_all_splits(text, options, true, /*three_way=*/false);
  EXPECT_EQ(r.content, "Let me look.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments,
            "{\"city\": \"São Paulo\", \"zip\": \"01000\", \"days\": 3, \"opts\": {\"a\":[1]}}");
}

TEST(OutputParserQwen3Coder, WithoutSchemaValuesAreJsonWhenTheyParse) {
  OutputParserOptions options = options_for(ToolCallFormat::kQwen3Coder);
  std::string text = "<tool_call>\n<function=run>\n<parameter=code>\nif a < b:\n    print(\"x\")\n</parameter>\n"
                     "<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=now>\n"
                     "</function>\n</tool_call>";
  ParsedOutput r = check_all_splits(text, options, true, false);
  ASSERT_EQ(r.tool_calls.size(), 2u);
  nlohmann::json args = nlohmann::json::parse(r.tool_calls[0].arguments);
  EXPECT_EQ(args["code"], "if a < b:\n    print(\"x\")");
  EXPECT_EQ(args["n"], 2);
  EXPECT_EQ(r.tool_calls[1].name, "now");
  EXPECT_EQ(r.tool_calls[1].arguments, "{}");
  EXPECT_EQ(r.content, "");
}

TEST(OutputParserQwen3Coder, HermesFormatAlsoReadsXmlBodiesAndViceVersa) {
  std::string xml = "<tool_call><function=f><parameter=x>1</parameter></function></tool_call>";
  std::string json = "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>";
  for (ToolCallFormat format : {ToolCallFormat::kHermes, ToolCallFormat::kQwen3Coder}) {
    ParsedOutput a = check_all_splits(xml, options_for(format));
    ParsedOutput b = check_all_splits(json, options_for(format));
    ASSERT_EQ(a.tool_calls.size(), 1u);
    ASSERT_EQ(b.tool_calls.size(), 1u);
    EXPECT_EQ(nlohmann::json::parse(a.tool_calls[0].arguments), nlohmann::json::parse(b.tool_calls[0].arguments));
  }
}

TEST(OutputParserQwen3Coder, MalformedXmlFallsBackOrIsCut) {
  OutputParserOptions options = options_for(ToolCallFormat::kQwen3Coder);
  std::string bad = "<tool_call>\n<func=f>\n</tool_call>";
  ParsedOutput r = check_all_splits(bad, options, false);
  EXPECT_EQ(r.content, bad);
  EXPECT_TRUE(r.tool_calls.empty());
  // The start was sent at <function=f>: a broken parameter closes the call, the block is dropped.
  r = check_all_splits("<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\noops</tool_call>ok", options, false);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"x\": 1");
  EXPECT_EQ(r.content, "ok");
  EXPECT_EQ(r.errors.size(), 1u);
}

TEST(OutputParserLlama3, BareJsonCall) {
  OutputParserOptions options = options_for(ToolCallFormat::kLlama3);
  std::string text = "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Tōkyō\", \"days\": 2}}";
  ParsedOutput r = check_all_splits(text, options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"location\": \"Tōkyō\", \"days\": 2}");
  EXPECT_EQ(r.content, "");
  r = check_all_splits("\n {\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{}");
}

TEST(OutputParserLlama3, PythonTagAndSeveralCalls) {
  OutputParserOptions options = options_for(ToolCallFormat::kLlama3);
  std::string text =
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"arguments\": {}}";
  ParsedOutput r = check_all_splits(text, options);
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "a");
  EXPECT_EQ(r.tool_calls[1].name, "b");
  EXPECT_EQ(r.content, "");
}

TEST(OutputParserLlama3, JsonThatIsNotACallAndPlainTextAreContent) {
  OutputParserOptions options = options_for(ToolCallFormat::kLlama3);
  for (std::string text : {std::string("{\"answer\": 42}"), std::string("{\"name\": \"Ada\", \"born\": 1815}"),
                           std::string("The answer is {\"name\": \"f\", \"parameters\": {}}"),
                           std::string("  plain text\n"), std::string("{\"name\": \"f\"")}) {
    ParsedOutput r = check_all_splits(text, options, false);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.tool_calls.empty()) << text;
  }
}

TEST(OutputParserLlama3, ReasoningThenCall) {
  OutputParserOptions options = options_for(ToolCallFormat::kLlama3);
  ParsedOutput r = check_all_splits("<think>plan</think>\n{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}}", options);
  EXPECT_EQ(r.reasoning_content, "plan");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"q\": \"x\"}");
}

TEST(OutputParserMistral, ArrayOfCalls) {
  OutputParserOptions options = options_for(ToolCallFormat::kMistral);
  std::string text = "Sure.[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Köln\"}}, "
                     "{\"name\": \"get_time\", \"arguments\": {}, \"id\": \"a1b2c3d4e\"}]";
  ParsedOutput r = check_all_splits(text, options, true, false);
  EXPECT_EQ(r.content, "Sure.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Köln\"}");
  EXPECT_EQ(r.tool_calls[1].name, "get_time");
  r = check_all_splits("[TOOL_CALLS] [{\"name\":\"f\",\"arguments\":{\"a\":true}}]", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"a\":true}");
}

TEST(OutputParserMistral, NamedCalls) {
  OutputParserOptions options = options_for(ToolCallFormat::kMistral);
  std::string text = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[CALL_ID]abc123XYZ"
                     "[ARGS]{}";
  ParsedOutput r = check_all_splits(text, options, true, false);
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(r.tool_calls[1].name, "get_time");
  EXPECT_EQ(r.tool_calls[1].arguments, "{}");
  EXPECT_EQ(r.content, "");
  r = check_all_splits("[TOOL_CALLS]f[ARGS]{\"x\": [1]}", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
}

TEST(OutputParserMistral, MalformedFallsBack) {
  OutputParserOptions options = options_for(ToolCallFormat::kMistral);
  for (std::string text : {std::string("[TOOL_CALLS]"), std::string("[TOOL_CALLS] nope"),
                           std::string("[TOOL_CALLS][{\"nam"), std::string("[TOOL_CALLS]f[ARG]{}"),
                           std::string("[TOOL_CALLS]f[ARGS]7")}) {
    ParsedOutput r = check_all_splits(text, options, false);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.tool_calls.empty()) << text;
  }
}

// Random outputs built from markup fragments: never a crash, and the same answer however they are cut.
TEST(OutputParserRandom, FragmentSoupIsSplitInvariant) {
  const std::vector<std::string> fragments = {
      "<tool_call>", "</tool_call>", "<think>", "</think>", "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>", "{", "}",
      "[", "]", ",", ":", ";", " ", "\n", "\"name\"", "\"arguments\"", "\"parameters\"", "\"f\"", "\"x\"", "1",
      "-2.5e3", "true", "null", "<function=f>", "</function>", "<parameter=p>", "</parameter>", "ü", "🦙", "text",
      "<", "<tool", "\\", "\"", "\"\\u00e9\"", "\t", "get"};
  std::mt19937 rng(42);
  for (ToolCallFormat format : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral,
                                ToolCallFormat::kNone}) {
    for (bool stream : {true, false}) {
      for (int trial = 0; trial < 150; ++trial) {
        OutputParserOptions options = options_for(format);
        options.stream_tool_arguments = stream;
        options.starts_in_reasoning = trial % 5 == 0;
        std::string text;
        int n = 1 + static_cast<int>(rng() % 24);
        for (int i = 0; i < n; ++i) text += fragments[rng() % fragments.size()];
        if (trial % 3 == 0) text = "<tool_call>{\"name\": \"f\", \"arguments\": {" + text;
        if (trial % 7 == 0) text = "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": " + text;
        check_all_splits(text, options, /*check_markup=*/false, /*three_way=*/false);
        if (::testing::Test::HasFailure()) {
          ADD_FAILURE() << "format " << tool_call_format_name(format) << " text: " << text;
          return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace saker::server
