// Fuzz target: an OpenAI request body as /v1/chat/completions and /v1/completions read it: bytes -> JSON (the
// route wrapper's limits) -> typed parameters (server/request_params) -> normalized messages and tools
// (server/messages) -> the prompt (server/chat_prompt, with a Qwen-style template and with ChatML).
// A body is either refused with an ApiError (400, a message, error bodies that serialize) or accepted with
// parameters inside their documented ranges that the sampler also accepts. Any other exception is a finding:
// the server would answer it with a library's message instead of naming the field.
#include <nlohmann/json.hpp>

#include "fuzz_request.h"
#include "server/messages.h"
#include "server/request_params.h"

namespace {

using namespace saker;
using namespace saker::server;
using saker::fuzz::consume;

void check_params(const OpenAiParams& p, bool chat) {
  const SamplingParams& s = p.options.sampling;
  SAKER_FUZZ_CHECK(s.validate().ok());
  SAKER_FUZZ_CHECK(s.temperature >= 0 && s.temperature <= 2);
  SAKER_FUZZ_CHECK(p.n >= 1 && p.n <= 16);
  SAKER_FUZZ_CHECK(!p.max_tokens || (*p.max_tokens >= 1 && *p.max_tokens <= INT32_MAX));
  SAKER_FUZZ_CHECK(p.options.stop.size() <= 16);
  for (const auto& stop : p.options.stop) SAKER_FUZZ_CHECK(!stop.empty());
  SAKER_FUZZ_CHECK(!p.include_usage || p.stream);
  SAKER_FUZZ_CHECK(p.options.top_logprobs >= -1 && p.options.top_logprobs <= (chat ? 20 : 5));
  SAKER_FUZZ_CHECK((p.options.top_logprobs >= 0) == p.logprobs);
  for (const auto& [id, bias] : s.logit_bias) SAKER_FUZZ_CHECK(id >= 0 && bias >= -100 && bias <= 100);
}

// /v1/chat/completions up to the prompt, in the route's order.
void chat(const nlohmann::json& body) {
  try {
    const nlohmann::json messages = normalize_openai_messages(body);
    saker::fuzz::check_normalized_messages(messages);
    nlohmann::json tools = read_openai_tools(body);
    saker::fuzz::check_tools(tools);
    if (auto tc = body.find("tool_choice"); tc != body.end() && tc->is_string() && *tc == "none") tools = nullptr;
    nlohmann::json kwargs = body.value("chat_template_kwargs", nlohmann::json::object());
    if (!kwargs.is_object()) return;  // the route refuses it by name
    const OpenAiParams p = read_openai_params(body, /*chat=*/true, nullptr);
    check_params(p, true);
    const std::string prompt = saker::fuzz::render_both(messages, tools, kwargs);
    saker::fuzz::check_fit_to_context(p.options, p.max_tokens, static_cast<int64_t>(prompt.size()));
  } catch (const ApiError& e) {
    saker::fuzz::check_refusal(e);
  }
}

// /v1/completions' parameters (the prompt itself needs the model's tokenizer).
void completions(const nlohmann::json& body) {
  try {
    const OpenAiParams p = read_openai_params(body, /*chat=*/false, nullptr);
    check_params(p, false);
    consume(read_bool(body, "echo").value_or(false));
    consume(read_string(body, "suffix").value_or("").size());
  } catch (const ApiError& e) {
    saker::fuzz::check_refusal(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto body = saker::fuzz::parse_request_body(data, size);
  if (!body) return 0;
  chat(*body);
  completions(*body);
  return 0;
}
