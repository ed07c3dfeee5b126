// Output parser: content, reasoning and Hermes / Qwen <tool_call> JSON calls, whole and cut into chunks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "output_parser_test_util.h"

namespace saker::server {
namespace {

using testing::check_all_splits;
using testing::options_for;
using testing::run_whole;

TEST(OutputParserText, PlainContentPassesThrough) {
  OutputParserOptions options = options_for(ToolCallFormat::kNone, /*reasoning=*/false);
  std::string text = "Hello, world! a < b and <b>bold</b> [x] {\"k\": 1}\n";
  ParsedOutput r = check_all_splits(text, options);
  EXPECT_EQ(r.content, text);
  EXPECT_EQ(r.reasoning_content, "");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_TRUE(r.errors.empty());
}

TEST(OutputParserText, EmptyOutput) {
  ParsedOutput r = OutputParser::parse("", options_for(ToolCallFormat::kHermes));
  EXPECT_EQ(r.content, "");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(OutputParserText, FinishAppendsWithoutTouchingEarlierEvents) {
  OutputParser parser(options_for(ToolCallFormat::kHermes));
  std::vector<OutputEvent> events = parser.feed("Hello <tool");
  ASSERT_EQ(events.size(), 1u);
  parser.finish(&events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].text, "Hello");
  EXPECT_EQ(events[1].text, " <tool");
}

TEST(OutputParserText, PartialTagAtTheEndIsContent) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  EXPECT_EQ(OutputParser::parse("see <tool", options).content, "see <tool");
  EXPECT_EQ(OutputParser::parse("see </thi", options).content, "see </thi");
  EXPECT_EQ(OutputParser::parse("a <tool_cal> b", options).content, "a <tool_cal> b");
}

TEST(OutputParserText, HoldsBackOnlyWhatCouldBeATag) {
  OutputParser parser(options_for(ToolCallFormat::kHermes));
  std::vector<OutputEvent> events = parser.feed("Hello <tool_");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "Hello");  // " " waits with "<tool_" (whitespace before a call is dropped)
  events = parser.feed("x> more");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, " <tool_x> more");
}

TEST(OutputParserReasoning, ThinkBlockBecomesReasoning) {
  std::string text = "<think>\nThe user wants 2+2.\nThat is 4.\n</think>\n\nThe answer is 4.";
  ParsedOutput r = check_all_splits(text, options_for(ToolCallFormat::kNone));
  EXPECT_EQ(r.reasoning_content, "The user wants 2+2.\nThat is 4.");
  EXPECT_EQ(r.content, "The answer is 4.");
}

TEST(OutputParserReasoning, StartsInsideReasoningWhenThePromptOpenedThink) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  options.starts_in_reasoning = true;
  std::string text = "Okay, let me think.\n</think>\n\nIt is sunny.";
  ParsedOutput r = check_all_splits(text, options);
  EXPECT_EQ(r.reasoning_content, "Okay, let me think.");
  EXPECT_EQ(r.content, "It is sunny.");
  // A model that writes <think> anyway.
  r = OutputParser::parse("<think>\nHmm.</think>Yes.", options);
  EXPECT_EQ(r.reasoning_content, "Hmm.");
  EXPECT_EQ(r.content, "Yes.");
}

TEST(OutputParserReasoning, PromptEndsInReasoning) {
  EXPECT_TRUE(prompt_ends_in_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_ends_in_reasoning("<think>"));
  EXPECT_FALSE(prompt_ends_in_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_ends_in_reasoning("<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_ends_in_reasoning(""));
}

TEST(OutputParserReasoning, CutInsideReasoning) {
  OutputParserOptions options = options_for(ToolCallFormat::kNone);
  options.starts_in_reasoning = true;
  ParsedOutput r = check_all_splits("still thinking </thi", options, /*check_markup=*/false);
  EXPECT_EQ(r.reasoning_content, "still thinking </thi");
  EXPECT_EQ(r.content, "");
}

TEST(OutputParserReasoning, OffLeavesTagsInContent) {
  std::string text = "<think>x</think>y";
  ParsedOutput r = OutputParser::parse(text, options_for(ToolCallFormat::kNone, /*reasoning=*/false));
  EXPECT_EQ(r.content, text);
  EXPECT_EQ(r.reasoning_content, "");
}

TEST(OutputParserReasoning, EmptyThinkBlock) {
  ParsedOutput r = check_all_splits("<think>\n\n</think>\n\nHi!", options_for(ToolCallFormat::kHermes));
  EXPECT_EQ(r.reasoning_content, "");
  EXPECT_EQ(r.content, "Hi!");
}

TEST(OutputParserHermes, OneCallAfterText) {
  std::string text =
      "I'll check the weather.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"unit\": \"celsius\"}}\n</tool_call>";
  ParsedOutput r = check_all_splits(text, options_for(ToolCallFormat::kHermes));
  EXPECT_EQ(r.content, "I'll check the weather.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Paris\", \"unit\": \"celsius\"}");
  EXPECT_EQ(r.tool_calls[0].id.substr(0, 5), "call_");
  EXPECT_EQ(r.tool_calls[0].id.size(), 29u);
  EXPECT_TRUE(r.errors.empty());
}

TEST(OutputParserHermes, ReasoningThenSeveralCallsThenText) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  options.starts_in_reasoning = true;
  std::string text =
      "Need two lookups.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"n\": [1, 2.5e3, "
      "-0]}}\n</tool_call>\nDone.";
  ParsedOutput r = check_all_splits(text, options, true, /*three_way=*/false);
  EXPECT_EQ(r.reasoning_content, "Need two lookups.");
  EXPECT_EQ(r.content, "Done.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(r.tool_calls[1].name, "get_time");
  EXPECT_EQ(r.tool_calls[1].arguments, "{\"tz\": \"CET\", \"n\": [1, 2.5e3, -0]}");
  EXPECT_NE(r.tool_calls[0].id, r.tool_calls[1].id);
}

TEST(OutputParserHermes, TextBeforeAndAfterACallStaysApart) {
  std::string text = "Sure!\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n\nLet me know.\n";
  ParsedOutput r = check_all_splits(text, options_for(ToolCallFormat::kHermes));
  EXPECT_EQ(r.content, "Sure!\n\n\nLet me know.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
}

TEST(OutputParserHermes, ThreeWaySplitsOfTwoCalls) {
  std::string text = "<tool_call>{\"name\":\"a\",\"arguments\":{\"x\":1}}</tool_call><tool_call>{\"name\":\"b\","
                     "\"arguments\":{}}</tool_call>";
  ParsedOutput r = check_all_splits(text, options_for(ToolCallFormat::kHermes));
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(r.tool_calls[1].arguments, "{}");
  EXPECT_EQ(r.content, "");
}

TEST(OutputParserHermes, UnicodeArguments) {
  std::string text =
      "Voilà 🙂\n<tool_call>\n{\"name\": \"translate\", \"arguments\": {\"text\": \"Zürich — 日本語 🦙\", "
                     "\"esc\": \"\\u00e9\\n\"}}\n</tool_call>";
  ParsedOutput r = check_all_splits(text, options_for(ToolCallFormat::kHermes));
  EXPECT_EQ(r.content, "Voilà 🙂");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  nlohmann::json args = nlohmann::json::parse(r.tool_calls[0].arguments);
  EXPECT_EQ(args["text"], "Zürich — 日本語 🦙");
  EXPECT_EQ(args["esc"], "é\n");
}

TEST(OutputParserHermes, StreamsArgumentsBeforeTheCallEnds) {
  OutputParser parser(options_for(ToolCallFormat::kHermes));
  std::vector<OutputEvent> events = parser.feed("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"code\": \"pri");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, OutputEventType::kToolCallStart);
  EXPECT_EQ(events[0].tool_call_name, "f");
  EXPECT_EQ(events[1].type, OutputEventType::kToolCallArguments);
  EXPECT_EQ(events[1].text, "{\"code\": \"pri");
  events = parser.feed("nt(1)\"}}\n</tool_");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].text, "nt(1)\"}");
  EXPECT_EQ(events[1].type, OutputEventType::kToolCallEnd);
  events = parser.feed("call>");
  EXPECT_TRUE(events.empty());
  ParsedOutput r = parser.finish();
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"code\": \"print(1)\"}");
}

TEST(OutputParserHermes, NonStreamingModeSendsWholeCalls) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  options.stream_tool_arguments = false;
  OutputParser parser(options);
  EXPECT_TRUE(parser.feed("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1").empty());
  std::vector<OutputEvent> events = parser.feed("}}</tool_call>");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].text, "{\"a\": 1}");
  check_all_splits("x <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [true, null]}}</tool_call>", options);
}

TEST(OutputParserHermes, ArgumentsBeforeNameStringArgumentsAndNoArguments) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  ParsedOutput r = check_all_splits("<tool_call>{\"arguments\": {\"x\": 1}, \"name\": \"f\"}</tool_call>", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"x\": 1}");
  r = check_all_splits("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"x\": 1}");
  r = check_all_splits("<tool_call>\n{\"name\": \"now\"}\n</tool_call>", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{}");
  r = check_all_splits("<tool_call>{\"id\": 7, \"name\": \"f\", \"parameters\": {}, \"extra\": [1]}</tool_call>",
                       options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{}");
}

TEST(OutputParserHermes, RawControlCharactersInStringsAreEscaped) {
  std::string text = "<tool_call>{\"name\": \"w\", \"arguments\": {\"code\": \"a\n\tb\"}}</tool_call>";
  ParsedOutput r = check_all_splits(text, options_for(ToolCallFormat::kHermes));
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"code\": \"a\\n\\tb\"}");
  EXPECT_EQ(nlohmann::json::parse(r.tool_calls[0].arguments)["code"], "a\n\tb");
}

TEST(OutputParserHermes, MalformedCallsFallBackToContent) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  for (std::string text : {std::string("<tool_call>not json</tool_call>"),
                           std::string("<tool_call>\n{\"arguments\": {}}\n</tool_call>"),
                           std::string("<tool_call>{\"name\": 5, \"arguments\": {}}</tool_call>"),
                           std::string("<tool_call>{\"name\": \"\"}</tool_call>"),
                           std::string("<tool_call>{\"name\": \"f\" \"arguments\": {}}</tool_call>"),
                           std::string("<tool_call>\n{\"name\": \"f\", \"argu"),
                           std::string("<tool_call>\n")}) {
    ParsedOutput r = check_all_splits(text, options, /*check_markup=*/false);
    EXPECT_EQ(r.content, text);
    EXPECT_TRUE(r.tool_calls.empty()) << text;
    EXPECT_EQ(r.errors.size(), 1u) << text;
  }
  // Text around a malformed call stays, and a good call after it still parses.
  ParsedOutput r = check_all_splits("A <tool_call>oops</tool_call> B <tool_call>{\"name\": \"f\"}</tool_call>", options,
                                    false, false);
  EXPECT_EQ(r.content, "A <tool_call>oops</tool_call> B");
  ASSERT_EQ(r.tool_calls.size(), 1u);
}

TEST(OutputParserHermes, ArgumentsThatBreakAfterTheStartCloseTheCall) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>\nAfter.";
  ParsedOutput r = check_all_splits(text, options, false);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"a\": ");
  EXPECT_EQ(r.content, "After.");
  EXPECT_EQ(r.errors.size(), 1u);
  // Cut by the end of the output (max_tokens), like OpenAI's finish_reason "length".
  r = check_all_splits("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2", options, false);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"a\": [1, 2");
  // Without streaming, the same outputs are content.
  options.stream_tool_arguments = false;
  r = check_all_splits(text, options, false);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>\nAfter.");
}

TEST(OutputParserHermes, MissingCloseTagIsTolerated) {
  OutputParserOptions options = options_for(ToolCallFormat::kHermes);
  ParsedOutput r = check_all_splits("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.content, "");
  r = check_all_splits("<tool_call>{\"name\": \"f\"}\n</tool_", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.content, "");
  r = check_all_splits("<tool_call>{\"name\": \"f\"} then text", options);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.content, "then text");
}

TEST(OutputParserHermes, NoFormatMeansNoToolParsing) {
  std::string text = "<tool_call>{\"name\": \"f\"}</tool_call>";
  ParsedOutput r = OutputParser::parse(text, options_for(ToolCallFormat::kNone));
  EXPECT_EQ(r.content, text);
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(OutputParserHermes, IdsAreSeededAndDistinct) {
  std::string text = "<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>";
  ParsedOutput a = OutputParser::parse(text, options_for(ToolCallFormat::kHermes));
  ParsedOutput b = OutputParser::parse(text, options_for(ToolCallFormat::kHermes));
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].id, b.tool_calls[0].id);
  EXPECT_NE(a.tool_calls[0].id, a.tool_calls[1].id);
  OutputParserOptions random = options_for(ToolCallFormat::kHermes);
  random.tool_call_id_seed = 0;
  ParsedOutput c = OutputParser::parse(text, random);
  EXPECT_NE(a.tool_calls[0].id, c.tool_calls[0].id);
  for (char ch : a.tool_calls[0].id.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)));
}

TEST(OutputParserHermes, FeedAfterFinishIsIgnored) {
  OutputParser parser(options_for(ToolCallFormat::kHermes));
  parser.feed("hi");
  ParsedOutput r = parser.finish();
  EXPECT_TRUE(parser.feed("more").empty());
  EXPECT_EQ(parser.finish().content, r.content);
}

}  // namespace
}  // namespace saker::server
