#include "server/output_parser/message_mapping.h"

#include "server/output_parser/json_scanner.h"

namespace saker::server {

nlohmann::json openai_message(const ParsedOutput& output) {
  nlohmann::json message = {{"role", "assistant"}};
  if (output.content.empty() && !output.tool_calls.empty()) message["content"] = nullptr;
  else message["content"] = output.content;
  if (!output.reasoning_content.empty()) message["reasoning_content"] = output.reasoning_content;
  if (!output.tool_calls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const ParsedToolCall& call : output.tool_calls) {
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

nlohmann::json openai_delta(const OutputEvent& event) {
  switch (event.type) {
    case OutputEventType::kContent: return {{"content", event.text}};
    case OutputEventType::kReasoning: return {{"reasoning_content", event.text}};
    case OutputEventType::kToolCallStart:
      return {{"tool_calls", nlohmann::json::array({{{"index", event.tool_call_index},
                                                     {"id", event.tool_call_id},
                                                     {"type", "function"},
                                                     {"function", {{"name", event.tool_call_name},
                                                                   {"arguments", ""}}}}})}};
    case OutputEventType::kToolCallArguments:
      return {{"tool_calls", nlohmann::json::array({{{"index", event.tool_call_index},
                                                     {"function", {{"arguments", event.text}}}}})}};
    case OutputEventType::kToolCallEnd: return nullptr;
  }
  return nullptr;
}

std::string openai_finish_reason(const ParsedOutput& output, const std::string& engine_reason) {
  if (!output.tool_calls.empty() && engine_reason != "length") return "tool_calls";
  return engine_reason;
}

nlohmann::json anthropic_tool_input(const std::string& arguments) {
  // Only what the scanner accepts (bounded nesting) is parsed: the result is serialized recursively.
  if (!JsonScanner::accepts(arguments)) return nlohmann::json::object();
  nlohmann::json input = nlohmann::json::parse(arguments, nullptr, false);
  if (input.is_discarded() || !input.is_object()) return nlohmann::json::object();
  return input;
}

nlohmann::json anthropic_content_blocks(const ParsedOutput& output) {
  nlohmann::json blocks = nlohmann::json::array();
  if (!output.reasoning_content.empty()) {
    blocks.push_back({{"type", "thinking"}, {"thinking", output.reasoning_content}, {"signature", ""}});
  }
  if (!output.content.empty()) blocks.push_back({{"type", "text"}, {"text", output.content}});
  for (const ParsedToolCall& call : output.tool_calls) {
    blocks.push_back({{"type", "tool_use"},
                      {"id", call.id},
                      {"name", call.name},
                      {"input", anthropic_tool_input(call.arguments)}});
  }
  if (blocks.empty()) blocks.push_back({{"type", "text"}, {"text", ""}});
  return blocks;
}

std::string anthropic_stop_reason(const ParsedOutput& output, const std::string& engine_reason) {
  if (engine_reason == "length") return "max_tokens";
  if (!output.tool_calls.empty()) return "tool_use";
  if (engine_reason == "stop_sequence") return "stop_sequence";
  return "end_turn";
}

void AnthropicStreamMapper::open(Block block, nlohmann::json content_block, std::vector<nlohmann::json>& out) {
  close(out);
  open_ = block;
  out.push_back({{"type", "content_block_start"}, {"index", next_index_}, {"content_block", std::move(content_block)}});
  ++next_index_;
}

void AnthropicStreamMapper::close(std::vector<nlohmann::json>& out) {
  if (open_ == Block::kNone) return;
  out.push_back({{"type", "content_block_stop"}, {"index", next_index_ - 1}});
  open_ = Block::kNone;
}

std::vector<nlohmann::json> AnthropicStreamMapper::on_event(const OutputEvent& event) {
  std::vector<nlohmann::json> out;
  auto delta = [&](nlohmann::json d) {
    out.push_back({{"type", "content_block_delta"}, {"index", next_index_ - 1}, {"delta", std::move(d)}});
  };
  switch (event.type) {
    case OutputEventType::kReasoning:
      if (event.text.empty()) break;
      if (open_ != Block::kThinking) {
        open(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, out);
      }
      delta({{"type", "thinking_delta"}, {"thinking", event.text}});
      break;
    case OutputEventType::kContent:
      if (event.text.empty()) break;
      if (open_ != Block::kText) open(Block::kText, {{"type", "text"}, {"text", ""}}, out);
      delta({{"type", "text_delta"}, {"text", event.text}});
      break;
    case OutputEventType::kToolCallStart:
      open(Block::kToolUse,
           {{"type", "tool_use"}, {"id", event.tool_call_id}, {"name", event.tool_call_name},
            {"input", nlohmann::json::object()}},
           out);
      break;
    case OutputEventType::kToolCallArguments:
      if (open_ == Block::kToolUse && !event.text.empty()) {
        delta({{"type", "input_json_delta"}, {"partial_json", event.text}});
      }
      break;
    case OutputEventType::kToolCallEnd:
      close(out);
      break;
  }
  return out;
}

std::vector<nlohmann::json> AnthropicStreamMapper::finish() {
  std::vector<nlohmann::json> out;
  close(out);
  return out;
}

}  // namespace saker::server
