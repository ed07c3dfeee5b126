#pragma once
// What every route sees: the loaded model, tokenizer, chat prompt, executor and metrics. Internal to server/.
#include <atomic>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/executor.h"
#include "server/http/router.h"
#include "server/metrics.h"
#include "server/server.h"

namespace saker::server {

using nlohmann::json;

enum class Dialect { kOpenAi, kAnthropic };

struct ServerState {
  ServerOptions options;
  std::atomic<bool> ready{false};
  ServedModel served;
  std::unique_ptr<ChatPrompt> prompt;
  std::unique_ptr<Executor> executor;
  Metrics metrics;

  // Throws a 404 (model_not_found) unless `body.model` is absent or names the served model.
  void check_model(const json& body) const;
  // Renders a chat prompt and tokenizes it across the turn boundary: the request's text (messages, tools,
  // kwargs) is text, only the template's markup becomes control tokens (unless --allow-special-in-content);
  // BOS added when the vocabulary wants one and the template did not write it. A template that fails is a
  // 400 chat_template_error naming messages.
  struct ChatTokens {
    std::string text;
    std::vector<int32_t> ids;
  };
  ChatTokens render_chat(const json& messages, const json& tools, bool add_generation_prompt,
                         const json& kwargs) const;
  // A /v1/completions prompt: all of it is the request's, so control-token text is text unless
  // --allow-special-in-content. BOS as above.
  std::vector<int32_t> tokenize_completion(const std::string& text) const;
  // Throws a 400 naming `param` when `generations` (n x prompts) is over --max-generations.
  void check_generations(int64_t generations, const std::string& param, const std::string& what) const;
};

// The answer for a generation that ended in an error: 503 shutting_down when the server cut it at shutdown,
// else 500.
ApiError generation_error(const GenerationEvent& e);

// A JSON route's handler. A streaming answer starts with res.start_stream() and ends when it returns;
// generations it submits should be cancelled when the client goes (res.on_client_gone).
using JsonHandler = std::function<void(const json& body, http::Response& res)>;

// Registers a POST route: readiness, JSON body parsing, ApiError -> error body (the API key and metrics are
// checked around the router, in server.cpp).
void post_json(http::Router& router, ServerState& state, const std::string& path, Dialect dialect,
               JsonHandler handler);
void send_json(http::Response& res, const json& body, int status = 200);
void send_error(http::Response& res, Dialect dialect, const ApiError& e);

// A generation's speculative decoding for a response's usage: {verify_steps, drafted_tokens, accepted_tokens,
// mean_accepted_length}.
json speculation_usage(const DraftStats& d);

// SSE framing.
std::string sse_data(const json& data);                           // "data: {...}\n\n"
std::string sse_event(const std::string& name, const json& data);  // "event: NAME\ndata: {...}\n\n"

std::string random_id(const std::string& prefix);
int64_t unix_time();

void register_openai_routes(http::Router& router, ServerState& state);
void register_anthropic_routes(http::Router& router, ServerState& state);

}  // namespace saker::server
