// Anthropic routes: POST /v1/messages (JSON or the message_start ... message_stop event stream) and
// POST /v1/messages/count_tokens.
#include <fmt/format.h>

#include "server/messages.h"
#include "server/output_adapter.h"
#include "server/request_params.h"
#include "server/server_state.h"
#include "server/tool_choice.h"

namespace saker::server {

namespace {

// A message's usage: output tokens, input tokens (n_prompt < 0: left out, as in a streamed message_delta), and
// with speculation saker's figures under "speculative".
json anthropic_usage(int64_t n_prompt, const GenerateResult& r) {
  json u = json::object();
  if (n_prompt >= 0) u["input_tokens"] = n_prompt;
  u["output_tokens"] = static_cast<int64_t>(r.tokens.size());
  if (r.draft) u["speculative"] = speculation_usage(*r.draft);
  return u;
}

struct RenderedPrompt {
  std::string text;
  std::vector<int32_t> ids;
  json tools;
};

// Anthropic `thinking`: {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}; sets the
// template's enable_thinking (any type but "enabled" turns it off).
void read_thinking(const json& body, json* kwargs) {
  auto th = body.find("thinking");
  if (th == body.end() || th->is_null()) return;
  if (!th->is_object()) {
    throw invalid_request("'thinking' must be an object ({\"type\": \"enabled\" | \"disabled\"})", "thinking");
  }
  auto type = th->find("type");
  if (type == th->end() || !type->is_string()) {
    throw invalid_request("'thinking.type' must be a string ('enabled' or 'disabled')", "thinking.type");
  }
  (*kwargs)["enable_thinking"] = type->get<std::string>() == "enabled";
}

// Messages, count_tokens alike: the prompt as the template renders it, tokenized across the turn boundary
// (message text is text, only the template's markup becomes control tokens).
RenderedPrompt render_messages(ServerState& s, const json& body) {
  s.check_model(body);
  RenderedPrompt r;
  const json messages = normalize_anthropic_messages(body);
  r.tools = apply_anthropic_tool_choice(body, read_anthropic_tools(body));
  json kwargs = json::object();
  read_thinking(body, &kwargs);
  ServerState::ChatTokens rendered = s.render_chat(messages, r.tools, true, kwargs);
  r.text = std::move(rendered.text);
  r.ids = std::move(rendered.ids);
  return r;
}

std::string stop_reason(const GenerateResult& r, bool tool_use) {
  if (tool_use) return "tool_use";
  if (r.finish == FinishReason::kLength) return "max_tokens";
  if (!r.stop_string.empty()) return "stop_sequence";
  return "end_turn";
}

json stop_sequence(const GenerateResult& r) { return r.stop_string.empty() ? json(nullptr) : json(r.stop_string); }

json parse_input(const std::string& args) {
  json input = json::parse(args.empty() ? "{}" : args, nullptr, false);
  return input.is_discarded() ? json::object() : input;
}

// Tracks the open content block of a streamed message and writes the block events.
class BlockWriter {
 public:
  // Appends the events for one delta to *out.
  void add(const OutputDelta& d, std::string* out) {
    if (!d.reasoning.empty()) {
      open("thinking", json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, out);
      *out += delta({{"type", "thinking_delta"}, {"thinking", d.reasoning}});
    }
    if (!d.content.empty()) {
      open("text", json{{"type", "text"}, {"text", ""}}, out);
      *out += delta({{"type", "text_delta"}, {"text", d.content}});
    }
    for (const auto& c : d.tool_calls) {
      if (c.index != tool_index_ || kind_ != "tool_use") {
        close(out);
        tool_index_ = c.index;
        open("tool_use", json{{"type", "tool_use"}, {"id", c.id.empty() ? random_id("toolu_") : c.id},
                              {"name", c.name}, {"input", json::object()}}, out);
      }
      if (!c.arguments.empty()) *out += delta({{"type", "input_json_delta"}, {"partial_json", c.arguments}});
    }
  }
  void finish(std::string* out) {
    if (index_ < 0) open("text", json{{"type", "text"}, {"text", ""}}, out);
    close(out);
  }

 private:
  void open(const std::string& kind, const json& block, std::string* out) {
    if (kind_ == kind && kind != "tool_use") return;
    close(out);
    kind_ = kind;
    ++index_;
    *out += sse_event("content_block_start", {{"type", "content_block_start"}, {"index", index_}, {"content_block", block}});
  }
  void close(std::string* out) {
    if (kind_.empty()) return;
    *out += sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
    kind_.clear();
  }
  std::string delta(const json& d) {
    return sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", index_}, {"delta", d}});
  }

  std::string kind_;  // the open block's type, "" when none
  int index_ = -1;
  int tool_index_ = -1;
};

void messages(ServerState& s, const json& body, http::Response& res) {
  AnthropicParams p = read_anthropic_params(body);
  RenderedPrompt prompt = render_messages(s, body);
  fit_to_context(&p.options, p.max_tokens, static_cast<int64_t>(prompt.ids.size()), s.executor->n_ctx(), "messages");
  GenerationRequest req;
  req.prompt = prompt.ids;
  req.options = p.options;
  auto stream = s.executor->submit(std::move(req));
  auto adapter = std::make_shared<OutputAdapter>(prompt.tools, s.prompt->source(), prompt.text);
  const std::string id = random_id("msg_");
  const std::string model = s.options.model_id;
  const int64_t n_prompt = static_cast<int64_t>(prompt.ids.size());
  // The generation stops when the client leaves (the HTTP layer notices while this handler waits on it) or
  // when the handler ends in any way.
  struct Guard {
    std::shared_ptr<GenerationStream> s;
    ~Guard() { s->cancel(); }
  } guard{stream};
  res.on_client_gone([stream] { stream->cancel(); });

  if (!p.stream) {
    std::string text, thinking;
    std::vector<ToolCallDelta> calls;
    auto absorb = [&](const OutputDelta& d) {
      text += d.content;
      thinking += d.reasoning;
      for (const auto& c : d.tool_calls) {
        if (c.index >= static_cast<int>(calls.size())) calls.resize(c.index + 1);
        if (!c.id.empty()) calls[c.index].id = c.id;
        if (!c.name.empty()) calls[c.index].name = c.name;
        calls[c.index].arguments += c.arguments;
      }
    };
    for (;;) {
      GenerationEvent e = stream->next();
      if (e.kind == GenerationEvent::Kind::kError) throw generation_error(e);
      if (e.kind == GenerationEvent::Kind::kText) {
        absorb(adapter->push(e.text));
        continue;
      }
      absorb(adapter->finish());
      json content = json::array();
      if (!thinking.empty()) content.push_back({{"type", "thinking"}, {"thinking", thinking}, {"signature", ""}});
      if (!text.empty() || calls.empty()) content.push_back({{"type", "text"}, {"text", text}});
      for (const auto& c : calls) {
        content.push_back({{"type", "tool_use"}, {"id", c.id.empty() ? random_id("toolu_") : c.id}, {"name", c.name},
                           {"input", parse_input(c.arguments)}});
      }
      send_json(res, {{"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", model}, {"content", content},
                      {"stop_reason", stop_reason(e.result, adapter->has_tool_calls())},
                      {"stop_sequence", stop_sequence(e.result)},
                      {"usage", anthropic_usage(n_prompt, e.result)}});
      return;
    }
  }

  res.set_header("Cache-Control", "no-cache");
  if (!res.start_stream(200, "text/event-stream")) return;
  auto write = [&](const std::string& out) { return out.empty() || res.write(out); };
  BlockWriter blocks;
  json start = {{"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", model},
                {"content", json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                {"usage", {{"input_tokens", n_prompt}, {"output_tokens", 0}}}};
  if (!write(sse_event("message_start", {{"type", "message_start"}, {"message", start}}))) return;
  for (;;) {
    GenerationEvent e = stream->next();
    std::string out;
    if (e.kind == GenerationEvent::Kind::kError) {
      // A failure or the server shutting down: an error event and no message_stop, never a fake end_turn.
      write(sse_event("error", anthropic_error_body(generation_error(e))));
      return;
    }
    if (e.kind == GenerationEvent::Kind::kText) {
      blocks.add(adapter->push(e.text), &out);
      if (!write(out)) return;  // the client is gone: the guard cancels the generation
      continue;
    }
    blocks.add(adapter->finish(), &out);
    blocks.finish(&out);
    out += sse_event("message_delta",
                     {{"type", "message_delta"},
                      {"delta", {{"stop_reason", stop_reason(e.result, adapter->has_tool_calls())},
                                 {"stop_sequence", stop_sequence(e.result)}}},
                      {"usage", anthropic_usage(-1, e.result)}});
    out += sse_event("message_stop", {{"type", "message_stop"}});
    write(out);
    return;
  }
}

void count_tokens(ServerState& s, const json& body, http::Response& res) {
  RenderedPrompt prompt = render_messages(s, body);
  send_json(res, {{"input_tokens", static_cast<int64_t>(prompt.ids.size())}});
}

}  // namespace

void register_anthropic_routes(http::Router& router, ServerState& s) {
  post_json(router, s, "/v1/messages", Dialect::kAnthropic,
            [&s](const json& body, http::Response& res) { messages(s, body, res); });
  post_json(router, s, "/v1/messages/count_tokens", Dialect::kAnthropic,
            [&s](const json& body, http::Response& res) { count_tokens(s, body, res); });
}

}  // namespace saker::server
