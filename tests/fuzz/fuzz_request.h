#pragma once
// What the two request targets (fuzz_openai_request, fuzz_anthropic_request) share: the body parsed the way
// the server parses it, the checks on normalized messages and refusals, and the prompt rendered by a small
// Qwen-style chat template and by the built-in ChatML.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "formats/json_parse.h"
#include "fuzz_target.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/request_params.h"

namespace saker::fuzz {

// The request body as the server's route wrapper reads it; nullopt when the wrapper refuses it before any
// handler runs (not JSON, nested too deep, not an object).
inline std::optional<nlohmann::json> parse_request_body(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_json(text, "request body", 0, {.max_depth = 128});
  if (!parsed.ok()) {
    SAKER_FUZZ_CHECK(parsed.status().code() == StatusCode::kCorruptFile);
    return std::nullopt;
  }
  if (!parsed->is_object()) return std::nullopt;
  return std::move(parsed).value();
}

// A refusal is a 400 with a message, and both dialects' error bodies serialize (strictly: the text came from
// valid UTF-8 JSON, so it must still be valid UTF-8).
inline void check_refusal(const server::ApiError& e) {
  SAKER_FUZZ_CHECK(e.status == 400);
  SAKER_FUZZ_CHECK(!e.message.empty());
  consume(server::openai_error_body(e).dump().size() + server::anthropic_error_body(e).dump().size());
}

// Normalized messages: [{role, content (string), tool_calls?, tool_call_id?, name?}], roles system / user /
// assistant / tool, tool calls as {id (string), type: function, function: {name (string), arguments?}}.
inline void check_normalized_messages(const nlohmann::json& messages) {
  SAKER_FUZZ_CHECK(messages.is_array());
  for (const auto& m : messages) {
    SAKER_FUZZ_CHECK(m.is_object());
    SAKER_FUZZ_CHECK(m.contains("role") && m["role"].is_string());
    const std::string role = m["role"].get<std::string>();
    SAKER_FUZZ_CHECK(role == "system" || role == "user" || role == "assistant" || role == "tool");
    SAKER_FUZZ_CHECK(m.contains("content") && m["content"].is_string());
    if (m.contains("tool_calls")) {
      SAKER_FUZZ_CHECK(role == "assistant" && m["tool_calls"].is_array());
      for (const auto& tc : m["tool_calls"]) {
        SAKER_FUZZ_CHECK(tc.is_object() && tc.contains("id") && tc["id"].is_string());
        SAKER_FUZZ_CHECK(tc.contains("function") && tc["function"].is_object());
        SAKER_FUZZ_CHECK(tc["function"].contains("name") && tc["function"]["name"].is_string());
      }
    }
    if (m.contains("tool_call_id")) SAKER_FUZZ_CHECK(m["tool_call_id"].is_string());
    if (m.contains("name")) SAKER_FUZZ_CHECK(m["name"].is_string());
  }
  consume(messages.dump().size());
}

// Tools in OpenAI's form: null or a non-empty array of {type: function, function: {name (string), ...}}.
inline void check_tools(const nlohmann::json& tools) {
  if (tools.is_null()) return;
  SAKER_FUZZ_CHECK(tools.is_array() && !tools.empty());
  for (const auto& t : tools) {
    SAKER_FUZZ_CHECK(t.is_object() && t.contains("function") && t["function"].is_object());
    SAKER_FUZZ_CHECK(t["function"].contains("name") && t["function"]["name"].is_string());
  }
}

// A chat template in the style of Qwen's: tools in the system turn, tool calls with `tojson` arguments, tool
// results as user turns, and the thinking switch.
inline const char* kRequestTemplate = R"({%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% elif message.role != 'system' or not loop.first %}<|im_start|>{{ message.role }}
{{ message.content }}
{%- for call in message.tool_calls | default([]) %}
<tool_call>
{"name": {{ call.function.name | tojson }}, "arguments": {{ call.function.arguments | default({}) | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% endif %}{% endif %})";

struct RequestPrompts {
  std::unique_ptr<server::ChatPrompt> jinja;
  std::unique_ptr<server::ChatPrompt> chatml;
};

inline const RequestPrompts& request_prompts() {
  static const RequestPrompts prompts = [] {
    RequestPrompts p;
    auto jinja = server::ChatPrompt::create(kRequestTemplate, nullptr);
    if (!jinja.ok()) invariant_failed("the request template does not parse");
    p.jinja = std::move(jinja).value();
    SAKER_FUZZ_CHECK(std::string(p.jinja->kind()) == "jinja");
    auto chatml = server::ChatPrompt::create("", nullptr);
    if (!chatml.ok()) invariant_failed("the ChatML prompt does not build");
    p.chatml = std::move(chatml).value();
    return p;
  }();
  return prompts;
}

// fit_to_context as the routes call it for a rendered prompt of prompt_bytes (a bound on its tokens) in a
// 4096-token context: the fitted max_tokens leaves room for the prompt and asks for at least one token.
inline void check_fit_to_context(GenerateOptions options, std::optional<int64_t> requested, int64_t prompt_bytes) {
  server::fit_to_context(&options, requested, prompt_bytes, 4096, "messages");
  SAKER_FUZZ_CHECK(options.max_tokens >= 1 && options.max_tokens <= 4096 - prompt_bytes);
}

// Renders normalized messages with both prompts. The template never raises, so a render either works or
// fails on a limit with a Status (never an exception); ChatML always works. Every message's content is in
// the ChatML prompt. Returns the ChatML prompt.
inline std::string render_both(const nlohmann::json& messages, const nlohmann::json& tools,
                               const nlohmann::json& kwargs) {
  const RequestPrompts& p = request_prompts();
  auto templated = p.jinja->render(messages, tools, true, kwargs);
  if (templated.ok()) {
    consume(templated->size());
  } else {
    SAKER_FUZZ_CHECK(templated.status().code() == StatusCode::kInvalidArgument ||
                     templated.status().code() == StatusCode::kOutOfRange);
  }
  auto chatml = p.chatml->render(messages, tools, true, kwargs);
  SAKER_FUZZ_CHECK(chatml.ok());
  for (const auto& m : messages) {
    const std::string& content = m["content"].get_ref<const std::string&>();
    SAKER_FUZZ_CHECK(chatml->find(content) != std::string::npos);
  }
  return std::move(chatml).value();
}

}  // namespace saker::fuzz
