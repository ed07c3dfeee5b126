#pragma once
// Helpers for the output parser tests: run a parser over chunks and rebuild the answer from its events.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/output_parser/output_parser.h"

namespace saker::server::testing {

struct Run {
  std::vector<OutputEvent> events;
  ParsedOutput result;         // what finish() returned
  std::string content;         // rebuilt from the events
  std::string reasoning;
  std::vector<ParsedToolCall> calls;
};

inline bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// Feeds the chunks, checks that the events are well formed and agree with finish()'s aggregate.
inline Run run_chunks(const std::vector<std::string>& chunks, const OutputParserOptions& options) {
  Run run;
  OutputParser parser(options);
  for (const std::string& chunk : chunks) {
    std::vector<OutputEvent> events = parser.feed(chunk);
    run.events.insert(run.events.end(), events.begin(), events.end());
  }
  run.result = parser.finish(&run.events);
  int open_call = -1;
  for (const OutputEvent& e : run.events) {
    switch (e.type) {
      case OutputEventType::kContent:
        EXPECT_EQ(open_call, -1) << "content inside a tool call";
        run.content += e.text;
        break;
      case OutputEventType::kReasoning:
        EXPECT_EQ(open_call, -1) << "reasoning inside a tool call";
        run.reasoning += e.text;
        break;
      case OutputEventType::kToolCallStart:
        EXPECT_EQ(open_call, -1) << "a call started inside another";
        EXPECT_EQ(e.tool_call_index, static_cast<int>(run.calls.size()));
        run.calls.push_back({e.tool_call_id, e.tool_call_name, ""});
        open_call = e.tool_call_index;
        break;
      case OutputEventType::kToolCallArguments:
        EXPECT_EQ(e.tool_call_index, open_call);
        if (!run.calls.empty()) run.calls.back().arguments += e.text;
        break;
      case OutputEventType::kToolCallEnd:
        EXPECT_EQ(e.tool_call_index, open_call);
        open_call = -1;
        break;
    }
  }
  EXPECT_EQ(open_call, -1) << "a call was never ended";
  EXPECT_EQ(run.content, run.result.content);
  EXPECT_EQ(run.reasoning, run.result.reasoning_content);
  EXPECT_EQ(run.calls.size(), run.result.tool_calls.size());
  for (size_t i = 0; i < run.calls.size() && i < run.result.tool_calls.size(); ++i) {
    EXPECT_EQ(run.calls[i].id, run.result.tool_calls[i].id);
    EXPECT_EQ(run.calls[i].name, run.result.tool_calls[i].name);
    EXPECT_EQ(run.calls[i].arguments, run.result.tool_calls[i].arguments);
  }
  return run;
}

inline Run run_whole(const std::string& text, const OutputParserOptions& options) {
  return run_chunks({text}, options);
}

inline OutputParserOptions options_for(ToolCallFormat format, bool reasoning = true) {
  OutputParserOptions options;
  options.tool_call_format = format;
  options.parse_reasoning = reasoning;
  options.tool_call_id_seed = 1234;
  return options;
}

inline bool same_result(const ParsedOutput& a, const ParsedOutput& b) {
  if (a.content != b.content || a.reasoning_content != b.reasoning_content || a.errors != b.errors) return false;
  if (a.tool_calls.size() != b.tool_calls.size()) return false;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    if (a.tool_calls[i].id != b.tool_calls[i].id || a.tool_calls[i].name != b.tool_calls[i].name ||
        a.tool_calls[i].arguments != b.tool_calls[i].arguments) {
      return false;
    }
  }
  return true;
}

inline std::string describe(const ParsedOutput& r) {
  std::string s = "content=[" + r.content + "] reasoning=[" + r.reasoning_content + "]";
  for (const ParsedToolCall& c : r.tool_calls) s += " call{" + c.name + " " + c.arguments + "}";
  for (const std::string& e : r.errors) s += " error{" + e + "}";
  return s;
}

// No text delta may show markup (for well-formed outputs) or a broken UTF-8 character.
inline void expect_clean_deltas(const Run& run, bool check_markup, const std::string& where) {
  static const char* const kMarkup[] = {"<tool_call", "</tool_call", "[TOOL_CALLS]", "<think>", "</think>",
                                        "<|python_tag|>", "<function=", "<parameter=", "[ARGS]"};
  for (const OutputEvent& e : run.events) {
    if (e.text.empty()) continue;
    EXPECT_TRUE(valid_utf8(e.text)) << where << ": broken UTF-8 in a delta";
    if (!check_markup) continue;
    for (const char* m : kMarkup) {
      EXPECT_EQ(e.text.find(m), std::string::npos) << where << ": delta [" << e.text << "] shows " << m;
    }
  }
}

// The property: cut anywhere into 1, 2 or 3 chunks (or byte by byte), the aggregate is the same and the
// deltas stay clean.
inline ParsedOutput check_all_splits(const std::string& text, const OutputParserOptions& options,
                                     bool check_markup = true, bool three_way = true) {
  Run whole = run_whole(text, options);
  expect_clean_deltas(whole, check_markup, "whole");
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  Run by_byte = run_chunks(bytes, options);
  EXPECT_TRUE(same_result(whole.result, by_byte.result))
      << "byte by byte: " << describe(by_byte.result) << "\nwhole: " << describe(whole.result);
  expect_clean_deltas(by_byte, check_markup, "byte by byte");
  int failures = 0;
  for (size_t i = 0; i <= text.size() && failures < 3; ++i) {
    Run two = run_chunks({text.substr(0, i), text.substr(i)}, options);
    if (!same_result(whole.result, two.result)) {
      ADD_FAILURE() << "split at " << i << ": " << describe(two.result) << "\nwhole: " << describe(whole.result);
      ++failures;
    }
    expect_clean_deltas(two, check_markup, "split at " + std::to_string(i));
    if (!three_way) continue;
    for (size_t j = i; j <= text.size() && failures < 3; ++j) {
      Run three = run_chunks({text.substr(0, i), text.substr(i, j - i), text.substr(j)}, options);
      if (!same_result(whole.result, three.result)) {
        ADD_FAILURE() << "split at " << i << "," << j << ": " << describe(three.result)
                      << "\nwhole: " << describe(whole.result);
        ++failures;
      }
      expect_clean_deltas(three, check_markup, "split at " + std::to_string(i) + "," + std::to_string(j));
    }
  }
  return whole.result;
}

}  // namespace saker::server::testing
