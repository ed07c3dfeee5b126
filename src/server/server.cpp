#include "server/server.h"

#include "server/engine_executor.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "core/log.h"
#include "formats/json_parse.h"
#include "server/browser_guard.h"
#include "server/http/server.h"
#include "server/messages.h"
#include "server/request_params.h"
#include "server/server_state.h"

namespace saker::server {

namespace {

Dialect dialect_of(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0 ? Dialect::kAnthropic : Dialect::kOpenAi;
}

ApiError not_ready() {
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.code = "model_loading";
  e.message = "the model is still loading; retry when GET /health answers 200";
  return e;
}

// Bearer token (OpenAI clients) or x-api-key (Anthropic clients).
bool authorized(const ServerState& s, const http::Request& req) {
  if (s.options.api_key.empty()) return true;
  if (req.header("x-api-key") == s.options.api_key) return true;
  return req.header("Authorization") == "Bearer " + s.options.api_key;
}

ApiError unauthorized() {
  ApiError e;
  e.status = 401;
  e.type = "invalid_request_error";
  e.code = "invalid_api_key";
  e.message = "Incorrect or missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'";
  return e;
}

std::string metrics_endpoint(const http::Request& req) {
  static const char* known[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/messages",
                                "/v1/messages/count_tokens", "/health", "/metrics", "/tokenize", "/detokenize",
                                "/apply-template"};
  for (const char* k : known) {
    if (req.path == k) return k;
  }
  if (req.path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

// The answers the HTTP layer and the router give themselves (malformed request, body too large, connection
// limits, unknown route, wrong method), in the error shape of the API the path belongs to.
void refuse(const http::Request& req, int status, const std::string& message, http::Response& res) {
  ApiError e;
  e.status = status;
  e.type = status >= 500 ? "server_error" : "invalid_request_error";
  e.message = message;
  send_error(res, dialect_of(req.path), e);
}

http::ServerOptions http_options(const ServerOptions& o) {
  auto seconds = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  http::ServerOptions h;
  h.host = o.host;
  h.port = o.port;
  h.worker_threads = o.http_threads > 0 ? o.http_threads : 64 + 4 * o.n_parallel;
  h.max_connections = o.max_connections;
  h.max_connections_per_client = o.max_connections_per_client;
  h.header_timeout = seconds(o.http_header_timeout_s);
  h.idle_timeout = seconds(o.http_idle_timeout_s);
  // After the grace, the generations left end as shut down: their handlers get this long to send that (a 503,
  // a stream's error event) before the connections are cut.
  h.stop_answer_timeout = std::chrono::milliseconds(500);
  return h;
}

void register_basic_routes(http::Router& http, ServerState& s) {
  http.get("/health", [&s](const http::Request&, http::Response& res) {
    if (!s.ready.load()) {
      json body = openai_error_body(not_ready());
      body["status"] = "loading";
      send_json(res, body, 503);
      return;
    }
    send_json(res, {{"status", "ok"}});
  });
  http.get("/metrics", [&s](const http::Request&, http::Response& res) {
    ExecutorStats st;
    if (s.ready.load()) st = s.executor->stats();
    res.set_content(s.metrics.render(st, s.ready.load()),
                    "text/plain; version=0.0.4");
  });
  auto model_object = [&s](const std::string& id) {
    json m = {{"id", id}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "saker"}};
    if (s.ready.load()) {
      const ModelHParams& h = s.served.model->hparams();
      m["meta"] = {{"n_ctx", s.executor->n_ctx()}, {"n_ctx_train", h.n_ctx_train}, {"n_vocab", h.n_vocab},
                   {"n_parallel", s.options.n_parallel}, {"chat_template", s.prompt->kind()}};
    }
    return m;
  };
  http.get("/v1/models", [&s, model_object](const http::Request&, http::Response& res) {
    if (!s.ready.load()) {
      send_error(res, Dialect::kOpenAi, not_ready());
      return;
    }
    send_json(res, {{"object", "list"}, {"data", json::array({model_object(s.options.model_id)})}});
  });
  http.get("/v1/models/{id}", [&s, model_object](const http::Request& req, http::Response& res) {
    json probe = {{"model", req.path_param}};
    try {
      if (!s.ready.load()) throw not_ready();
      s.check_model(probe);
    } catch (const ApiError& e) {
      send_error(res, Dialect::kOpenAi, e);
      return;
    }
    send_json(res, model_object(s.options.model_id));
  });

  post_json(http, s, "/tokenize", Dialect::kOpenAi, [&s](const json& body, http::Response& res) {
    std::string text;
    bool found = false;
    for (const char* key : {"content", "prompt", "text"}) {
      if (auto v = read_string(body, key)) {
        text = *v;
        found = true;
        break;
      }
    }
    if (!found) throw invalid_request("'content' (the text to tokenize) is required", "content");
    const bool add_special = read_bool(body, "add_special").value_or(false);
    // /tokenize encodes what the caller asks for (it builds no prompt); by default control-token text is read
    // the way this server reads it in prompts.
    const bool parse_special = read_bool(body, "parse_special").value_or(s.options.allow_special_in_content);
    const bool with_pieces = read_bool(body, "with_pieces").value_or(false);
    const std::vector<int32_t> ids = s.served.tokenizer->encode(text, add_special, parse_special);
    json tokens = json::array();
    for (int32_t id : ids) {
      if (with_pieces) {
        const std::string piece = s.served.tokenizer->token_to_piece(id, true);
        tokens.push_back({{"id", id}, {"piece", piece}});  // invalid UTF-8 becomes U+FFFD when sent
      } else {
        tokens.push_back(id);
      }
    }
    send_json(res, {{"tokens", tokens}, {"count", ids.size()}});
  });
  post_json(http, s, "/detokenize", Dialect::kOpenAi, [&s](const json& body, http::Response& res) {
    auto it = body.find("tokens");
    if (it == body.end() || !it->is_array()) throw invalid_request("'tokens' must be an array of token ids", "tokens");
    std::vector<int32_t> ids;
    const int32_t n_vocab = s.served.tokenizer->n_vocab();
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n_vocab) {
        throw invalid_request(fmt::format("'tokens[{}]' must be a token id in 0..{}", i, n_vocab - 1),
                              fmt::format("tokens[{}]", i));
      }
      ids.push_back(v.get<int32_t>());
    }
    text::DecodeOptions d;
    d.skip_special = read_bool(body, "skip_special").value_or(false);
    const std::string text = s.served.tokenizer->decode(ids, d);
    send_json(res, {{"content", text}});
  });
  post_json(http, s, "/apply-template", Dialect::kOpenAi, [&s](const json& body, http::Response& res) {
    const json messages = normalize_openai_messages(body);
    const json tools = read_openai_tools(body);
    const bool add_gen = read_bool(body, "add_generation_prompt").value_or(true);
    json kwargs = body.value("chat_template_kwargs", json::object());
    if (!kwargs.is_object()) throw invalid_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    // The prompt as the chat routes build it, and its token count across the turn boundary.
    const ServerState::ChatTokens prompt = s.render_chat(messages, tools, add_gen, kwargs);
    send_json(res, {{"prompt", prompt.text}, {"n_tokens", prompt.ids.size()}});
  });
}

}  // namespace

void ServerState::check_model(const json& body) const {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_string()) throw invalid_request("'model' must be a string", "model");
  const std::string name = it->get<std::string>();
  if (name == options.model_id) return;
  for (const auto& a : options.aliases) {
    if (a == name || a == "*") return;
  }
  ApiError e;
  e.status = 404;
  e.type = "invalid_request_error";
  e.param = "model";
  e.code = "model_not_found";
  e.message = fmt::format("The model '{}' does not exist; this server serves '{}'", name, options.model_id);
  throw e;
}

ServerState::ChatTokens ServerState::render_chat(const json& messages, const json& tools, bool add_generation_prompt,
                                                 const json& kwargs) const {
  auto rendered = prompt->render_marked(messages, tools, add_generation_prompt, kwargs);
  if (!rendered.ok()) throw invalid_request(rendered.status().message(), "messages", "chat_template_error");
  ChatTokens out;
  out.ids = prompt->tokenize(*rendered, true, options.allow_special_in_content);
  out.text = std::move(rendered->text);
  return out;
}

std::vector<int32_t> ServerState::tokenize_completion(const std::string& text) const {
  return prompt->tokenize_text(text, true, options.allow_special_in_content);
}

void ServerState::check_generations(int64_t generations, const std::string& param, const std::string& what) const {
  if (generations <= options.max_generations) return;
  throw invalid_request(fmt::format("{}: {} generations in one request, more than this server allows ({}; "
                                    "--max-generations)",
                                    what, generations, options.max_generations),
                        param);
}

ApiError generation_error(const GenerationEvent& e) {
  ApiError err;
  err.type = "server_error";
  if (e.shutdown) {
    err.status = 503;
    err.code = "shutting_down";
    err.message = "the server is shutting down and stopped this generation before it finished; retry on a "
                  "running server";
  } else {
    err.status = 500;
    err.message = "generation failed: " + e.status.message();
  }
  return err;
}

void send_json(http::Response& res, const json& body, int status) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(http::Response& res, Dialect dialect, const ApiError& e) {
  send_json(res, dialect == Dialect::kAnthropic ? anthropic_error_body(e) : openai_error_body(e), e.status);
}

json speculation_usage(const DraftStats& d) {
  return {{"verify_steps", d.verify_steps},
          {"drafted_tokens", d.drafted_tokens},
          {"accepted_tokens", d.accepted_tokens()},
          {"mean_accepted_length", d.mean_accepted_length()}};
}

std::string sse_data(const json& data) {
  return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string sse_event(const std::string& name, const json& data) {
  return "event: " + name + "\ndata: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string random_id(const std::string& prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<uint32_t>(rng()));
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void post_json(http::Router& router, ServerState& s, const std::string& path, Dialect dialect, JsonHandler handler) {
  router.post(path, [&s, dialect, handler = std::move(handler)](const http::Request& req, http::Response& res) {
    try {
      if (!s.ready.load()) throw not_ready();
      auto parsed = parse_json(req.body, "request body", 0, {.max_depth = 128});
      if (!parsed.ok()) throw invalid_request("invalid JSON in the request body: " + parsed.status().message());
      const json& body = *parsed;
      if (!body.is_object()) throw invalid_request("the request body must be a JSON object");
      handler(body, res);
    } catch (const ApiError& e) {
      if (res.streaming()) throw;  // a started stream cannot become an error answer: the HTTP layer cuts it
      send_error(res, dialect, e);
    } catch (const json::exception& e) {
      // Every field is read by a checker that names it; a library error reaching here is a field that none
      // checked. The client gets a refusal, the log the detail.
      if (res.streaming()) throw;
      SAKER_LOG_WARN("{} {}: unchecked JSON access: {}", req.method, req.path, e.what());
      send_error(res, dialect, invalid_request("a field of the request has the wrong type"));
    } catch (const std::exception& e) {
      if (res.streaming()) throw;
      ApiError err;
      err.status = 500;
      err.type = "server_error";
      err.message = fmt::format("internal error: {}", e.what());
      SAKER_LOG_ERROR("{} {}: {}", req.method, req.path, e.what());
      send_error(res, dialect, err);
    }
  });
}

int run_server(const ServerOptions& options, const ModelLoader& loader, const std::atomic<bool>* stop) {
  auto state = std::make_unique<ServerState>();
  ServerState& s = *state;
  s.options = options;
  http::Router router(refuse);
  register_basic_routes(router, s);
  register_openai_routes(router, s);
  register_anthropic_routes(router, s);
  const BrowserGuard guard(options);
  // Every request: what a web page may send (Host, Origin, Content-Type; CORS), the API key (probes need
  // none), the route, then its metrics.
  http::Server http(
      http_options(options),
      [&s, &router, &guard](http::Request& req, http::Response& res) {
        try {
          if (guard.admit(req, res) == BrowserGuard::Admission::kServe) {
            if (req.path == "/health" || req.path == "/metrics" || authorized(s, req)) {
              router.dispatch(req, res);
            } else {
              send_error(res, dialect_of(req.path), unauthorized());
            }
          }
        } catch (const ApiError& e) {
          send_error(res, dialect_of(req.path), e);
        }
        s.metrics.on_request(metrics_endpoint(req), res.status);
        SAKER_LOG_DEBUG("{} {} -> {}", req.method, req.path, res.status);
      },
      refuse);
  if (Status st = http.start(); !st.ok()) {
    SAKER_LOG_ERROR("{}", st.message());
    return 1;
  }
  SAKER_LOG_INFO("listening on http://{}:{} (loading the model; /health answers 503 until it is ready)", options.host,
                 http.port());
  auto shutdown = [&](int code) {
    // Running requests may finish within the grace period; then whatever they still wait on ends as shut
    // down (each answers a 503 or a stream's error event, never a completed answer) and the connections close.
    const auto grace = std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, options.shutdown_grace_s) * 1000));
    http.stop(grace, [&s] {
      if (auto* engine = dynamic_cast<EngineExecutor*>(s.executor.get())) engine->cancel_all();
    });
    state.reset();
    return code;
  };

  auto loaded = loader();
  if (!loaded.ok()) {
    SAKER_LOG_ERROR("{}", loaded.status().to_string());
    return shutdown(1);
  }
  s.served = std::move(loaded).value();
  if (!s.served.tokenizer) {
    SAKER_LOG_ERROR("the model has no tokenizer; the server needs one");
    return shutdown(1);
  }
  auto prompt = ChatPrompt::create(s.served.chat_template, s.served.tokenizer.get());
  if (!prompt.ok()) {
    SAKER_LOG_WARN("{}; rendering ChatML instead", prompt.status().to_string());
    prompt = ChatPrompt::create("", s.served.tokenizer.get());
  }
  s.prompt = std::move(prompt).value();
  const ModelHParams& h = s.served.model->hparams();
  const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : std::min<int64_t>(h.n_ctx_train, 4096);
  {
    EngineOptions eo;
    eo.max_seqs = options.n_parallel;
    eo.n_ctx = n_ctx;
    eo.kv_tokens = options.kv_tokens;
    eo.kv_block = options.kv_block;
    eo.step_tokens = options.batch_tokens;
    eo.prefill_chunk = options.prefill_chunk;
    eo.prefix_cache = options.prefix_cache;
    eo.cache_ram_bytes = static_cast<uint64_t>(options.cache_ram_gb * (1ull << 30));
    if (s.served.make_proposer) {
      auto factory = s.served.make_proposer(n_ctx, eo.max_seqs);
      if (!factory.ok()) {
        SAKER_LOG_ERROR("speculative decoding: {}", factory.status().to_string());
        return shutdown(1);
      }
      eo.proposer = std::move(factory).value();
    }
    eo.adaptive_drafts = s.served.adaptive_drafts;
    eo.speculation_cost_policy = s.served.speculation_cost_policy;
    auto engine = EngineExecutor::create(*s.served.model, s.served.tokenizer.get(), eo, &s.metrics);
    if (!engine.ok()) {
      SAKER_LOG_ERROR("{}", engine.status().to_string());
      return shutdown(1);
    }
    s.executor = std::move(engine).value();
  }
  s.ready.store(true);
  const ExecutorStats es = s.executor->stats();
  SAKER_LOG_INFO("ready: model '{}', {} sequence(s) at once of up to {} tokens, KV pool of {} pages x {} tokens, "
                 "chat template: {}",
                 options.model_id, options.n_parallel, n_ctx, es.kv_pages_total, es.kv_page_tokens, s.prompt->kind());
  while (!stop->load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  SAKER_LOG_INFO("shutting down: running requests may finish for {} s, then what is left ends with an error",
                 options.shutdown_grace_s);
  return shutdown(0);
}

}  // namespace saker::server
