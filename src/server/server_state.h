#pragma once
// What every route sees: the loaded model, tokenizer, chat prompt, executor and metrics. Internal to server/.
#include <atomic>
#include <memory>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/executor.h"
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
  // Tokenizes a rendered chat prompt (special tokens parsed, BOS added when the vocabulary wants one and
  // the template did not write it).
  std::vector<int32_t> tokenize_prompt(const std::string& text, bool add_special) const;
};

using JsonHandler = std::function<void(const json& body, httplib::Response& res)>;

// Registers a POST route: API key, readiness, JSON body parsing, ApiError -> error body, metrics.
void post_json(httplib::Server& http, ServerState& state, const std::string& path, Dialect dialect,
               JsonHandler handler);
void send_json(httplib::Response& res, const json& body, int status = 200);
void send_error(httplib::Response& res, Dialect dialect, const ApiError& e);

// SSE framing.
std::string sse_data(const json& data);                           // "data: {...}\n\n"
std::string sse_event(const std::string& name, const json& data);  // "event: NAME\ndata: {...}\n\n"

std::string random_id(const std::string& prefix);
int64_t unix_time();

void register_openai_routes(httplib::Server& http, ServerState& state);
void register_anthropic_routes(httplib::Server& http, ServerState& state);

}  // namespace saker::server
