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
#include "engine/proposer.h"
#include "text/tokenizer.h"

namespace saker::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;               // "" : no authentication
  int64_t n_ctx = 0;                 // tokens per slot; 0: the model's training context, at most 4096
  int32_t n_parallel = 4;            // sequences generated at once
  std::string model_id;              // the name /v1/models lists and requests must use
  std::vector<std::string> aliases;  // more names requests may use for the model
  int32_t http_threads = 0;          // 0: enough for every slot plus queued and idle connections
  // The batched engine: --parallel sequences run at once over one KV pool of kv_tokens slots.
  int64_t kv_tokens = 0;             // 0: n_parallel * n_ctx
  int32_t kv_block = 16;             // tokens per KV page
  int64_t batch_tokens = 0;          // tokens per engine step; 0: prefill_chunk + n_parallel
  int32_t prefill_chunk = 512;       // prompt tokens one sequence feeds per step
  bool prefix_cache = true;
  double cache_ram_gb = 0;           // host-RAM tier for evicted prefix pages
};

// What the loader hands the server; it owns everything it points to.
struct ServedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
  std::unique_ptr<text::Tokenizer> tokenizer;  // required by the server
  std::string chat_template;                   // Jinja source; "" renders ChatML
  // Speculative decoding: makes one sequence's proposer (a drafter) for sequences of up to n_ctx tokens; the
  // engine verifies its drafts inside each step. Null: plain decoding.
  std::function<Result<std::unique_ptr<Proposer>>(int64_t n_ctx)> make_proposer;
};

using ModelLoader = std::function<Result<ServedModel>()>;

// Binds, loads, serves until *stop becomes true (signal handlers set it), then shuts down. Returns the
// process exit code; errors (port in use, model that does not load) are logged.
int run_server(const ServerOptions& options, const ModelLoader& loader, const std::atomic<bool>* stop);

}  // namespace saker::server
