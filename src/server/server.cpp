#include "server/server.h"

#include "server/engine_executor.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "core/log.h"
#include "formats/json_parse.h"
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
bool authorized(const ServerState& s, const httplib::Request& req) {
  if (s.options.api_key.empty()) return true;
  if (req.get_header_value("x-api-key") == s.options.api_key) return true;
  const std::string auth = req.get_header_value("Authorization");
  return auth == "Bearer " + s.options.api_key;
}

std::string metrics_endpoint(const httplib::Request& req, const httplib::Response& res) {
  static const char* known[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/messages",
                                "/v1/messages/count_tokens", "/health", "/metrics", "/tokenize", "/detokenize",
                                "/apply-template"};
  for (const char* k : known) {
    if (req.path == k) return k;
  }
  if (req.path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  (void)res;
  return "other";
}

void register_basic_routes(httplib::Server& http, ServerState& s) {
  http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    if (!s.ready.load()) {
      json body = openai_error_body(not_ready());
      body["status"] = "loading";
      send_json(res, body, 503);
      return;
    }
    send_json(res, {{"status", "ok"}});
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
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
  http.Get("/v1/models", [&s, model_object](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"object", "list"}, {"data", json::array({model_object(s.options.model_id)})}});
  });
  http.Get(R"(/v1/models/(.+))", [&s, model_object](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    json probe = {{"model", id}};
    try {
      s.check_model(probe);
    } catch (const ApiError& e) {
      send_error(res, Dialect::kOpenAi, e);
      return;
    }
    send_json(res, model_object(s.options.model_id));
  });

  post_json(http, s, "/tokenize", Dialect::kOpenAi, [&s](const json& body, httplib::Response& res) {
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
    const bool parse_special = read_bool(body, "parse_special").value_or(true);
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
  post_json(http, s, "/detokenize", Dialect::kOpenAi, [&s](const json& body, httplib::Response& res) {
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
  post_json(http, s, "/apply-template", Dialect::kOpenAi, [&s](const json& body, httplib::Response& res) {
    const json messages = normalize_openai_messages(body);
    const json tools = read_openai_tools(body);
    const bool add_gen = read_bool(body, "add_generation_prompt").value_or(true);
    json kwargs = body.value("chat_template_kwargs", json::object());
    if (!kwargs.is_object()) throw invalid_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    auto text = s.prompt->render(messages, tools, add_gen, kwargs);
    if (!text.ok()) throw invalid_request(text.status().message(), "messages", "chat_template_error");
    send_json(res, {{"prompt", *text}});
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

std::vector<int32_t> ServerState::tokenize_prompt(const std::string& text, bool add_special) const {
  const text::Tokenizer& tok = *served.tokenizer;
  bool add = add_special;
  if (add && tok.vocab().add_bos() && tok.vocab().bos_id() >= 0) {
    const std::string bos = tok.token_to_piece(tok.vocab().bos_id(), true);
    if (!bos.empty() && text.rfind(bos, 0) == 0) add = false;  // the template wrote it
  }
  return tok.encode(text, add, true);
}

void send_json(httplib::Response& res, const json& body, int status) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, Dialect dialect, const ApiError& e) {
  send_json(res, dialect == Dialect::kAnthropic ? anthropic_error_body(e) : openai_error_body(e), e.status);
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

void post_json(httplib::Server& http, ServerState& s, const std::string& path, Dialect dialect, JsonHandler handler) {
  http.Post(path, [&s, dialect, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    try {
      if (!s.ready.load()) throw not_ready();
      auto parsed = parse_json(req.body, "request body", 0, {.max_depth = 128});
      if (!parsed.ok()) throw invalid_request("invalid JSON in the request body: " + parsed.status().message());
      const json& body = *parsed;
      if (!body.is_object()) throw invalid_request("the request body must be a JSON object");
      handler(body, res);
    } catch (const ApiError& e) {
      send_error(res, dialect, e);
    } catch (const json::exception& e) {
      send_error(res, dialect, invalid_request(fmt::format("a field has the wrong type: {}", e.what())));
    } catch (const std::exception& e) {
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
  httplib::Server http;
  const size_t n_threads = options.http_threads > 0 ? static_cast<size_t>(options.http_threads)
                                                    : static_cast<size_t>(64 + 4 * options.n_parallel);
  http.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  http.set_payload_max_length(64u << 20);
  http.set_read_timeout(30);
  http.set_write_timeout(30);
  http.set_keep_alive_max_count(1000);
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/health" || req.path == "/metrics" || authorized(s, req)) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    e.status = 401;
    e.type = "invalid_request_error";
    e.code = "invalid_api_key";
    e.message = "Incorrect or missing API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'";
    send_error(res, dialect_of(req.path), e);
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    e.status = res.status;
    e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
    e.message = res.status == 404 ? fmt::format("no route {} {}", req.method, req.path)
                : res.status == 413 ? "the request body is too large"
                                    : fmt::format("HTTP {}", res.status);
    send_error(res, dialect_of(req.path), e);
  });
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    ApiError e;
    e.status = 500;
    e.type = "server_error";
    e.message = "internal error: " + what;
    send_error(res, dialect_of(req.path), e);
  });
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.metrics.on_request(metrics_endpoint(req, res), res.status);
    SAKER_LOG_DEBUG("{} {} -> {}", req.method, req.path, res.status);
  });
  register_basic_routes(http, s);
  register_openai_routes(http, s);
  register_anthropic_routes(http, s);

  if (!http.bind_to_port(options.host, options.port)) {
    SAKER_LOG_ERROR("cannot listen on {}:{} (in use, or not an address of this machine)", options.host, options.port);
    return 1;
  }
  // The listener's own end is tracked here: http.is_running() is false until the thread has started listening, so a
  // fast model load could otherwise read it as "stopped" and shut the server down at once.
  std::atomic<bool> listener_done{false};
  std::thread listener([&http, &listener_done] {
    http.listen_after_bind();
    listener_done.store(true);
  });
  SAKER_LOG_INFO("listening on http://{}:{} (loading the model; /health answers 503 until it is ready)", options.host,
                 options.port);
  auto shutdown = [&](int code) {
    if (auto* engine = dynamic_cast<EngineExecutor*>(s.executor.get())) engine->cancel_all();
    http.stop();
    listener.join();
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
    if (s.served.make_proposer) eo.proposer = [&s, n_ctx] { return s.served.make_proposer(n_ctx); };
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
  while (!stop->load() && !listener_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  SAKER_LOG_INFO("shutting down");
  return shutdown(0);
}

}  // namespace saker::server
