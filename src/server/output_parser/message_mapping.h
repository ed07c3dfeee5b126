#pragma once
// Turns the output parser's events and aggregate into OpenAI and Anthropic JSON pieces (bodies only; the
// HTTP/SSE framing is the server's).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/output_parser/output_parser.h"

namespace saker::server {

// OpenAI chat.completion choices[].message:
//   {"role": "assistant", "content": text or null (null only when there are tool calls and no text),
//    "reasoning_content": ... (only when non-empty), "tool_calls": [{"id", "type": "function",
//    "function": {"name", "arguments"}}] (only when non-empty)}
nlohmann::json openai_message(const ParsedOutput& output);
// chat.completion.chunk choices[].delta for one event; null for kToolCallEnd (nothing to send).
nlohmann::json openai_delta(const OutputEvent& event);
// "tool_calls" when the output made calls and the engine stopped on its own, else engine_reason
// ("stop", "length").
std::string openai_finish_reason(const ParsedOutput& output, const std::string& engine_reason);

// A call's arguments as an Anthropic tool_use "input": the parsed object, or {} when they are not a JSON object.
nlohmann::json anthropic_tool_input(const std::string& arguments);
// Anthropic messages "content": a thinking block (when reasoning), a text block (when text), tool_use blocks.
nlohmann::json anthropic_content_blocks(const ParsedOutput& output);
// "tool_use" when the output made calls and the engine stopped on its own; engine_reason "length" ->
// "max_tokens", "stop_sequence" stays, anything else -> "end_turn".
std::string anthropic_stop_reason(const ParsedOutput& output, const std::string& engine_reason);

// Anthropic streaming: turns events into the payloads of content_block_start / content_block_delta /
// content_block_stop SSE events (each object's "type" is the SSE event name). A block closes when the
// next kind of piece begins; finish() closes the last one.
class AnthropicStreamMapper {
 public:
  std::vector<nlohmann::json> on_event(const OutputEvent& event);
  std::vector<nlohmann::json> finish();
  // Blocks started so far.
  int block_count() const { return next_index_; }

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };

  void open(Block block, nlohmann::json content_block, std::vector<nlohmann::json>& out);
  void close(std::vector<nlohmann::json>& out);

  Block open_ = Block::kNone;
  int next_index_ = 0;
};

}  // namespace saker::server
