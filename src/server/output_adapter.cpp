#include "server/output_adapter.h"

#ifdef SAKER_HAVE_OUTPUT_PARSER
#include "server/output_parser/output_parser.h"
#endif

namespace saker::server {

#ifdef SAKER_HAVE_OUTPUT_PARSER

struct OutputAdapter::Impl {
  explicit Impl(OutputParserOptions o) : parser(std::move(o)) {}
  OutputParser parser;
};

OutputAdapter::OutputAdapter(const nlohmann::json& tools, const std::string& chat_template, const std::string& prompt) {
  OutputParserOptions o;
  const bool has_tools = tools.is_array() && !tools.empty();
  if (has_tools) {
    o.tool_call_format = chat_template.empty() ? ToolCallFormat::kHermes : detect_tool_call_format(chat_template);
    o.tools = tools;
  }
  o.parse_reasoning = true;
  o.starts_in_reasoning = prompt_ends_in_reasoning(prompt);
  impl_ = std::make_unique<Impl>(std::move(o));
}

OutputAdapter::~OutputAdapter() = default;

namespace {

void add_events(const std::vector<OutputEvent>& events, OutputDelta* d, int* n_calls) {
  for (const OutputEvent& e : events) {
    switch (e.type) {
      case OutputEventType::kContent: d->content += e.text; break;
      case OutputEventType::kReasoning: d->reasoning += e.text; break;
      case OutputEventType::kToolCallStart:
        d->tool_calls.push_back({e.tool_call_index, e.tool_call_id, e.tool_call_name, ""});
        *n_calls = std::max(*n_calls, e.tool_call_index + 1);
        break;
      case OutputEventType::kToolCallArguments:
        if (!d->tool_calls.empty() && d->tool_calls.back().index == e.tool_call_index) {
          d->tool_calls.back().arguments += e.text;
        } else {
          d->tool_calls.push_back({e.tool_call_index, "", "", e.text});
        }
        break;
      case OutputEventType::kToolCallEnd: break;
    }
  }
}

}  // namespace

OutputDelta OutputAdapter::push(std::string_view text) {
  OutputDelta d;
  add_events(impl_->parser.feed(text), &d, &n_tool_calls_);
  return d;
}

OutputDelta OutputAdapter::finish() {
  OutputDelta d;
  std::vector<OutputEvent> tail;
  impl_->parser.finish(&tail);
  add_events(tail, &d, &n_tool_calls_);
  return d;
}

#else  // no output parser in this build: all text is content

struct OutputAdapter::Impl {};

OutputAdapter::OutputAdapter(const nlohmann::json&, const std::string&, const std::string&) {}
OutputAdapter::~OutputAdapter() = default;

OutputDelta OutputAdapter::push(std::string_view text) {
  OutputDelta d;
  d.content = std::string(text);
  return d;
}

OutputDelta OutputAdapter::finish() { return {}; }

#endif

}  // namespace saker::server
