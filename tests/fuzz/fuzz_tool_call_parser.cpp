// Fuzz target: the output parser (server/output_parser) on arbitrary model output, in every tool-call format
// it reads (Hermes/Qwen, Qwen3-Coder XML, Llama 3 JSON, Mistral, none) with and without reasoning, fed in
// chunks cut at input-chosen places, then mapped to OpenAI and Anthropic JSON as the routes send it. What the
// model writes is steered by whoever writes the prompt, so this is input from strangers too.
// Input: byte 0 picks the format and options, byte 1 the chunking, the rest is the output text.
// Checks: the events are well formed (calls open and close in order, no text inside a call) and add up to
// finish()'s aggregate; however the text is cut, the aggregate is the one of the whole text; deltas are whole
// UTF-8 characters when the text is valid UTF-8; calls sent whole have JSON arguments; no call's arguments
// nest deeper than the scanner allows; the mapped messages serialize.
#include <algorithm>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_target.h"
#include "server/output_parser/json_scanner.h"
#include "server/output_parser/message_mapping.h"
#include "server/output_parser/output_parser.h"
#include "text/utf8.h"

namespace {

using namespace saker::server;
using saker::fuzz::consume;

constexpr ToolCallFormat kFormats[] = {ToolCallFormat::kNone, ToolCallFormat::kHermes, ToolCallFormat::kQwen3Coder,
                                       ToolCallFormat::kLlama3, ToolCallFormat::kMistral};

// Typed parameters for the Qwen3-Coder parser (it reads values as the schema says).
const char* const kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
    "where": {"type": "object"}, "tags": {"type": "array"}, "t": {"type": "number"}}}}},
  {"type": "function", "function": {"name": "run", "parameters": {"type": "object", "properties": {
    "code": {"type": "string"}}}}}
])";

struct Rng {
  uint64_t state;
  uint64_t next() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

bool same(const ParsedOutput& a, const ParsedOutput& b) {
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

// Rebuilds the answer from the events, checking their order on the way.
ParsedOutput replay_events(const std::vector<OutputEvent>& events) {
  ParsedOutput rebuilt;
  int open_call = -1;
  for (const OutputEvent& e : events) {
    switch (e.type) {
      case OutputEventType::kContent:
        SAKER_FUZZ_CHECK(open_call == -1);
        rebuilt.content += e.text;
        break;
      case OutputEventType::kReasoning:
        SAKER_FUZZ_CHECK(open_call == -1);
        rebuilt.reasoning_content += e.text;
        break;
      case OutputEventType::kToolCallStart:
        SAKER_FUZZ_CHECK(open_call == -1);
        SAKER_FUZZ_CHECK(e.tool_call_index == static_cast<int>(rebuilt.tool_calls.size()));
        SAKER_FUZZ_CHECK(!e.tool_call_id.empty());
        rebuilt.tool_calls.push_back({e.tool_call_id, e.tool_call_name, ""});
        open_call = e.tool_call_index;
        break;
      case OutputEventType::kToolCallArguments:
        SAKER_FUZZ_CHECK(open_call != -1 && e.tool_call_index == open_call);
        rebuilt.tool_calls.back().arguments += e.text;
        break;
      case OutputEventType::kToolCallEnd:
        SAKER_FUZZ_CHECK(open_call != -1 && e.tool_call_index == open_call);
        open_call = -1;
        break;
    }
  }
  SAKER_FUZZ_CHECK(open_call == -1);
  return rebuilt;
}

// The deepest nesting of brackets in JSON text (strings skipped).
size_t json_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The events rebuild the aggregate, and their texts are whole UTF-8 characters when the output is valid UTF-8.
void check_events(const std::vector<OutputEvent>& events, const ParsedOutput& result, bool valid_utf8) {
  const ParsedOutput rebuilt = replay_events(events);
  SAKER_FUZZ_CHECK(rebuilt.content == result.content);
  SAKER_FUZZ_CHECK(rebuilt.reasoning_content == result.reasoning_content);
  SAKER_FUZZ_CHECK(rebuilt.tool_calls.size() == result.tool_calls.size());
  for (size_t i = 0; i < rebuilt.tool_calls.size(); ++i) {
    SAKER_FUZZ_CHECK(rebuilt.tool_calls[i].id == result.tool_calls[i].id);
    SAKER_FUZZ_CHECK(rebuilt.tool_calls[i].name == result.tool_calls[i].name);
    SAKER_FUZZ_CHECK(rebuilt.tool_calls[i].arguments == result.tool_calls[i].arguments);
  }
  if (!valid_utf8) return;
  for (const OutputEvent& e : events) {
    SAKER_FUZZ_CHECK(saker::text::utf8_is_valid(e.text));
    SAKER_FUZZ_CHECK(saker::text::utf8_is_valid(e.tool_call_name));
  }
}

// The JSON the routes build from the events and the aggregate. The server serializes with invalid UTF-8
// replaced; valid input must serialize strictly.
void map_to_json(const std::vector<OutputEvent>& events, const ParsedOutput& result, bool valid_utf8) {
  const auto dump = [valid_utf8](const nlohmann::json& j) {
    return valid_utf8 ? j.dump() : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  size_t n = dump(openai_message(result)).size() + dump(anthropic_content_blocks(result)).size();
  AnthropicStreamMapper mapper;
  for (const OutputEvent& e : events) {
    n += dump(openai_delta(e)).size();
    for (const auto& j : mapper.on_event(e)) n += dump(j).size();
  }
  for (const auto& j : mapper.finish()) n += dump(j).size();
  for (const char* reason : {"stop", "length", "stop_sequence"}) {
    n += openai_finish_reason(result, reason).size() + anthropic_stop_reason(result, reason).size();
  }
  consume(n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::json tools = nlohmann::json::parse(kTools);
  if (size < 2) return 0;
  const uint8_t mode = data[0], cut = data[1];
  OutputParserOptions options;
  options.tool_call_format = kFormats[(mode & 0x07) % std::size(kFormats)];
  options.parse_reasoning = mode & 0x08;
  options.starts_in_reasoning = mode & 0x10;
  options.stream_tool_arguments = !(mode & 0x20);
  options.tool_call_id_seed = 7;  // the same ids in both runs
  if (!(mode & 0x40)) options.tools = tools;
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const bool valid_utf8 = saker::text::utf8_is_valid(text);

  // The whole text in one feed (what a non-streaming answer sees)...
  OutputParser whole_parser(options);
  std::vector<OutputEvent> whole_events = whole_parser.feed(text);
  const ParsedOutput whole = whole_parser.finish(&whole_events);
  check_events(whole_events, whole, valid_utf8);

  // ... and in chunks of 1..max_chunk bytes (byte by byte when max_chunk is 1), as a stream sees it.
  OutputParser parser(options);
  std::vector<OutputEvent> events;
  Rng rng{cut};
  const size_t max_chunk = 1 + (cut & 0x1F);
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min<size_t>(text.size() - pos, 1 + rng.next() % max_chunk);
    for (OutputEvent& e : parser.feed(text.substr(pos, n))) events.push_back(std::move(e));
    pos += n;
  }
  const ParsedOutput chunked = parser.finish(&events);
  SAKER_FUZZ_CHECK(same(whole, chunked));
  check_events(events, chunked, valid_utf8);

  if (!options.stream_tool_arguments && valid_utf8) {
    // A call sent whole was complete and valid: its arguments are JSON (the server's text is valid UTF-8,
    // which the detokenizer guarantees).
    for (const ParsedToolCall& call : whole.tool_calls) {
      SAKER_FUZZ_CHECK(!nlohmann::json::parse(call.arguments, nullptr, false).is_discarded());
    }
  }
  // The routes parse and serialize arguments with recursive code: their nesting stays bounded (an XML call's
  // object adds one level to its values).
  for (const ParsedToolCall& call : whole.tool_calls) {
    SAKER_FUZZ_CHECK(json_depth(call.arguments) <= JsonScanner::kMaxDepth + 1);
  }
  map_to_json(whole_events, whole, valid_utf8);
  consume(prompt_ends_in_reasoning(text));
  return 0;
}
