#pragma once
// `saker serve`: the HTTP server. The listener starts before the model loads, so GET /health answers 503
// while loading and 200 once ready; every other route answers 503 until then.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/model.h"
#include "server/slot_pool.h"
#include "text/tokenizer.h"

namespace saker::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;               // "" : no authentication
  int64_t n_ctx = 0;                 // tokens per slot; 0: the model's training context, at most 4096
  int32_t n_parallel = 1;            // generation slots
  std::string model_id;              // the name /v1/models lists and requests must use
  std::vector<std::string> aliases;  // more names requests may use for the model
  int32_t http_threads = 0;          // 0: enough for every slot plus queued and idle connections
};

// What the loader hands the server; it owns everything it points to.
struct ServedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
  std::unique_ptr<text::Tokenizer> tokenizer;  // required by the server
  std::string chat_template;                   // Jinja source; "" renders ChatML
  // Makes one slot's generator (e.g. speculative decoding with a drafter); null: plain decoding (Generator).
  SlotPool::GeneratorFactory make_generator;
};

using ModelLoader = std::function<Result<ServedModel>()>;

// Binds, loads, serves until *stop becomes true (signal handlers set it), then shuts down. Returns the
// process exit code; errors (port in use, model that does not load) are logged.
int run_server(const ServerOptions& options, const ModelLoader& loader, const std::atomic<bool>* stop);

}  // namespace saker::server
