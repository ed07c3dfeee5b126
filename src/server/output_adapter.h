#pragma once
// OutputAdapter: turns generated text into the pieces a response carries: content, reasoning (<think>) and
// tool calls. It is the seam for server/output_parser (the incremental tool-call / reasoning parser); in a
// build without that parser all text is content.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace saker::server {

struct ToolCallDelta {
  int index = 0;          // which tool call of the message
  std::string id;         // set on the first delta of a call
  std::string name;       // set on the first delta of a call
  std::string arguments;  // a piece of the JSON arguments text
};

struct OutputDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

class OutputAdapter {
 public:
  // tools: the request's tools (null when none: tool-call markup stays text). chat_template: the model's
  // template source ("" for the ChatML fallback, which asks for Hermes <tool_call> markup); it tells which
  // tool-call syntax the model writes. prompt: the rendered prompt (a template that opens <think> itself
  // starts the output inside reasoning).
  OutputAdapter(const nlohmann::json& tools, const std::string& chat_template, const std::string& prompt);
  ~OutputAdapter();
  OutputDelta push(std::string_view text);
  OutputDelta finish();
  bool has_tool_calls() const { return n_tool_calls_ > 0; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int n_tool_calls_ = 0;
};

}  // namespace saker::server
