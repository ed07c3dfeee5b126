// Output parser: the JSON scanner and the OpenAI / Anthropic mappings of parsed output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "output_parser_test_util.h"
#include "server/output_parser/json_scanner.h"
#include "server/output_parser/message_mapping.h"

namespace saker::server {
namespace {

using testing::options_for;

// Feeds text; returns the step of the last byte fed (stopping at the first non-kAccepted step).
JsonScanner::Step scan(const std::string& text, std::string* out = nullptr, size_t* consumed = nullptr) {
  JsonScanner scanner;
  std::string sink;
  JsonScanner::Step step = JsonScanner::Step::kAccepted;
  size_t i = 0;
  for (; i < text.size(); ++i) {
    step = scanner.push(text[i], sink);
    if (step != JsonScanner::Step::kAccepted) break;
  }
  if (out) *out = sink;
  if (consumed) *consumed = i;
  return step;
}

TEST(OutputParserJsonScanner, AcceptsValidValues) {
  for (std::string text : {"{}", "[]", "{\"a\": [1, -2.5e+3, 0.5, true, false, null, \"x\\\"\\u00e9\"]}",
                           "\"str\"", "true", "[[[]],{}]", "{ \"k\" : { \"n\" : 0 } }"}) {
    std::string out;
    EXPECT_EQ(scan(text, &out), JsonScanner::Step::kComplete) << text;
    EXPECT_EQ(out, text);
    EXPECT_FALSE(nlohmann::json::parse(out, nullptr, false).is_discarded()) << text;
  }
}

TEST(OutputParserJsonScanner, RejectsAtTheBadByte) {
  struct Case {
    std::string text;
    size_t bad;
  };
  for (const Case& c : {Case{"{\"a\": }", 6}, Case{"[1,]", 3}, Case{"{'a': 1}", 1}, Case{"[01]", 2},
                        Case{"[1 2]", 3}, Case{"{\"a\" 1}", 5}, Case{"tru]", 3}, Case{"\"\\x\"", 2},
                        Case{"[-]", 2}, Case{"{\"a\":1,}", 7}, Case{"[1.]", 3}, Case{"]", 0}}) {
    size_t consumed = 0;
    EXPECT_EQ(scan(c.text, nullptr, &consumed), JsonScanner::Step::kRejected) << c.text;
    EXPECT_EQ(consumed, c.bad) << c.text;
  }
}

TEST(OutputParserJsonScanner, TopLevelNumbersEndBeforeTheDelimiter) {
  size_t consumed = 0;
  EXPECT_EQ(scan("12.5}", nullptr, &consumed), JsonScanner::Step::kCompleteBefore);
  EXPECT_EQ(consumed, 4u);
  JsonScanner scanner;
  std::string out;
  for (char c : std::string("-3e7")) scanner.push(c, out);
  EXPECT_TRUE(scanner.complete_at_end());
  JsonScanner open;
  open.push('[', out);
  EXPECT_FALSE(open.complete_at_end());
}

TEST(OutputParserJsonScanner, EscapesRawControlCharactersInStrings) {
  std::string out;
  EXPECT_EQ(scan(std::string("\"a\nb\x01\""), &out), JsonScanner::Step::kComplete);
  EXPECT_EQ(out, "\"a\\nb\\u0001\"");
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), std::string("a\nb\x01"));
}

ParsedOutput sample_output() {
  std::string text = "<think>Plan.</think>Checking.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": "
                     "{\"city\": \"Paris\"}}</tool_call>";
  return OutputParser::parse(text, options_for(ToolCallFormat::kHermes));
}

TEST(OutputParserMapping, OpenAiMessage) {
  ParsedOutput output = sample_output();
  nlohmann::json m = openai_message(output);
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["content"], "Checking.");
  EXPECT_EQ(m["reasoning_content"], "Plan.");
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["id"], output.tool_calls[0].id);
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\"}");
  EXPECT_EQ(openai_finish_reason(output, "stop"), "tool_calls");
  EXPECT_EQ(openai_finish_reason(output, "length"), "length");

  ParsedOutput only_call = OutputParser::parse("<tool_call>{\"name\": \"f\"}</tool_call>",
                                               options_for(ToolCallFormat::kHermes));
  nlohmann::json m2 = openai_message(only_call);
  EXPECT_TRUE(m2["content"].is_null());
  EXPECT_FALSE(m2.contains("reasoning_content"));
  nlohmann::json plain = openai_message(OutputParser::parse("hi", options_for(ToolCallFormat::kHermes)));
  EXPECT_EQ(plain["content"], "hi");
  EXPECT_FALSE(plain.contains("tool_calls"));
  EXPECT_EQ(openai_finish_reason(OutputParser::parse("hi", options_for(ToolCallFormat::kNone)), "stop"), "stop");
}

TEST(OutputParserMapping, OpenAiDeltasRebuildTheMessage) {
  OutputParser parser(options_for(ToolCallFormat::kHermes));
  std::vector<OutputEvent> events = parser.feed("<think>Plan.</think>Checking.\n<tool_call>{\"name\": \"f\", ");
  std::vector<OutputEvent> more = parser.feed("\"arguments\": {\"a\": 1}}</tool_call>");
  events.insert(events.end(), more.begin(), more.end());
  ParsedOutput output = parser.finish(&events);
  std::string content, reasoning, name, id, arguments;
  for (const OutputEvent& e : events) {
    nlohmann::json d = openai_delta(e);
    if (e.type == OutputEventType::kToolCallEnd) {
      EXPECT_TRUE(d.is_null());
      continue;
    }
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("tool_calls")) {
      const nlohmann::json& call = d["tool_calls"][0];
      EXPECT_EQ(call["index"], 0);
      if (call.contains("id")) id = call["id"];
      if (call["function"].contains("name")) name = call["function"]["name"];
      arguments += call["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(content, "Checking.");
  EXPECT_EQ(reasoning, "Plan.");
  EXPECT_EQ(name, "f");
  EXPECT_EQ(id, output.tool_calls[0].id);
  EXPECT_EQ(arguments, "{\"a\": 1}");
}

TEST(OutputParserMapping, AnthropicBlocks) {
  ParsedOutput output = sample_output();
  nlohmann::json blocks = anthropic_content_blocks(output);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0]["type"], "thinking");
  EXPECT_EQ(blocks[0]["thinking"], "Plan.");
  EXPECT_EQ(blocks[1]["type"], "text");
  EXPECT_EQ(blocks[1]["text"], "Checking.");
  EXPECT_EQ(blocks[2]["type"], "tool_use");
  EXPECT_EQ(blocks[2]["name"], "get_weather");
  EXPECT_EQ(blocks[2]["id"], output.tool_calls[0].id);
  EXPECT_EQ(blocks[2]["input"], nlohmann::json::parse("{\"city\": \"Paris\"}"));
  EXPECT_EQ(anthropic_stop_reason(output, "stop"), "tool_use");
  EXPECT_EQ(anthropic_stop_reason(output, "length"), "max_tokens");
  ParsedOutput empty;
  EXPECT_EQ(anthropic_content_blocks(empty), nlohmann::json::parse("[{\"type\": \"text\", \"text\": \"\"}]"));
  EXPECT_EQ(anthropic_stop_reason(empty, "stop"), "end_turn");
  EXPECT_EQ(anthropic_stop_reason(empty, "stop_sequence"), "stop_sequence");
  EXPECT_EQ(anthropic_tool_input("{\"a\": "), nlohmann::json::object());
  EXPECT_EQ(anthropic_tool_input("[1]"), nlohmann::json::object());
}

TEST(OutputParserMapping, AnthropicStream) {
  OutputParser parser(options_for(ToolCallFormat::kHermes));
  AnthropicStreamMapper mapper;
  std::vector<nlohmann::json> sse;
  std::string text = "<think>Plan.</think>Checking.\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}"
                     "</tool_call><tool_call>{\"name\": \"g\"}</tool_call>";
  std::vector<OutputEvent> events;
  for (char c : text) {
    std::vector<OutputEvent> e = parser.feed(std::string(1, c));
    events.insert(events.end(), e.begin(), e.end());
  }
  parser.finish(&events);
  for (const OutputEvent& e : events) {
    for (nlohmann::json& j : mapper.on_event(e)) sse.push_back(std::move(j));
  }
  for (nlohmann::json& j : mapper.finish()) sse.push_back(std::move(j));
  EXPECT_EQ(mapper.block_count(), 4);
  // Rebuild the blocks from the stream.
  nlohmann::json blocks = nlohmann::json::array();
  std::vector<std::string> partial(4);
  int open = -1;
  for (const nlohmann::json& j : sse) {
    if (j["type"] == "content_block_start") {
      EXPECT_EQ(open, -1);
      open = j["index"];
      EXPECT_EQ(open, static_cast<int>(blocks.size()));
      blocks.push_back(j["content_block"]);
    } else if (j["type"] == "content_block_delta") {
      EXPECT_EQ(j["index"], open);
      const nlohmann::json& d = j["delta"];
      auto append = [&](const char* field) {
        blocks[open][field] = blocks[open][field].get<std::string>() + d[field].get<std::string>();
      };
      if (d["type"] == "thinking_delta") append("thinking");
      if (d["type"] == "text_delta") append("text");
      if (d["type"] == "input_json_delta") partial[open] += d["partial_json"].get<std::string>();
    } else {
      EXPECT_EQ(j["type"], "content_block_stop");
      EXPECT_EQ(j["index"], open);
      open = -1;
    }
  }
  EXPECT_EQ(open, -1);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0]["thinking"], "Plan.");
  EXPECT_EQ(blocks[1]["text"], "Checking.");
  EXPECT_EQ(blocks[2]["name"], "f");
  EXPECT_EQ(nlohmann::json::parse(partial[2]), nlohmann::json::parse("{\"a\": [1, 2]}"));
  EXPECT_EQ(blocks[3]["name"], "g");
  EXPECT_EQ(partial[3], "{}");
}

}  // namespace
}  // namespace saker::server
