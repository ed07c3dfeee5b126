// Fuzz target: an Anthropic /v1/messages (and count_tokens) body: bytes -> JSON (the route wrapper's limits)
// -> typed parameters (server/request_params) -> system + messages with text, tool_use and tool_result
// blocks normalized for the chat template, tools in OpenAI's form (server/messages) -> the prompt
// (server/chat_prompt, with a Qwen-style template and with ChatML).
// A body is either refused with an ApiError (400, a message, error bodies that serialize) or accepted with
// parameters inside their documented ranges that the sampler also accepts. Any other exception escapes and
// aborts: the server would answer it with a library's message instead of naming the field.
#include <nlohmann/json.hpp>

#include "fuzz_request.h"
#include "server/messages.h"
#include "server/request_params.h"

namespace {

using namespace saker;
using namespace saker::server;

void check_params(const AnthropicParams& p) {
  const SamplingParams& s = p.options.sampling;
  SAKER_FUZZ_CHECK(s.validate().ok());
  SAKER_FUZZ_CHECK(s.temperature >= 0 && s.temperature <= 1);
  SAKER_FUZZ_CHECK(p.max_tokens >= 1 && p.max_tokens <= INT32_MAX);
  SAKER_FUZZ_CHECK(p.options.stop.size() <= 16);
  for (const auto& stop : p.options.stop) SAKER_FUZZ_CHECK(!stop.empty());
}

// The tool results of a tool turn answer calls by id: each normalized tool message carries one.
void check_tool_turns(const nlohmann::json& messages) {
  for (const auto& m : messages) {
    if (m["role"] == "tool") SAKER_FUZZ_CHECK(m.contains("tool_call_id") && m["tool_call_id"].is_string());
  }
}

// The messages route up to the prompt, in its order (count_tokens renders the same prompt).
void messages_route(const nlohmann::json& body) {
  try {
    const nlohmann::json messages = normalize_anthropic_messages(body);
    saker::fuzz::check_normalized_messages(messages);
    check_tool_turns(messages);
    nlohmann::json tools = read_anthropic_tools(body);
    saker::fuzz::check_tools(tools);
    if (auto tc = body.find("tool_choice"); tc != body.end() && tc->is_object() && tc->contains("type") &&
                                            (*tc)["type"] == "none") {
      tools = nullptr;
    }
    nlohmann::json kwargs = nlohmann::json::object();
    if (auto th = body.find("thinking"); th != body.end() && th->is_object() && th->contains("type")) {
      kwargs["enable_thinking"] = (*th)["type"] == "enabled";
    }
    const std::string prompt = saker::fuzz::render_both(messages, tools, kwargs);
    const AnthropicParams p = read_anthropic_params(body);
    check_params(p);
    saker::fuzz::check_fit_to_context(p.options, p.max_tokens, static_cast<int64_t>(prompt.size()));
  } catch (const ApiError& e) {
    saker::fuzz::check_refusal(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto body = saker::fuzz::parse_request_body(data, size);
  if (!body) return 0;
  messages_route(*body);
  return 0;
}
