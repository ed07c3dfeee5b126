#pragma once
// `saker serve`: the HTTP server (over server/http). The listener starts before the model loads, so GET
// /health answers 503 while loading and 200 once ready; every other route answers 503 until then.
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
  // The turn boundary: control-token text (<|im_start|>, <|endoftext|>) in message content and completions
  // prompts is tokenized as text unless this is set (trusted callers that write turns themselves).
  bool allow_special_in_content = false;
  int32_t max_generations = 64;      // a request's n x prompts may not exceed this (400 naming the field)
  // Browser safety. Origins (scheme://host[:port]) whose pages may call the server: they get CORS headers and
  // preflight answers. Without an API key, any other Origin is refused (403), POST bodies must be
  // application/json (415), and on a loopback bind the Host must be a loopback name (403: DNS rebinding).
  std::vector<std::string> cors_origins;
  // HTTP (server/http): connections are held by a few event-driven I/O threads; handlers run on worker threads
  // (each running or queued request's handler holds one while it waits on its generation).
  int32_t http_threads = 0;                 // handler threads; 0: 64 + 4 per parallel sequence
  int32_t max_connections = 2048;           // open connections in all; past it a 503
  int32_t max_connections_per_client = 256; // open connections from one client address; past it a 503
  double http_header_timeout_s = 10;        // a request's whole header must arrive within this
  double http_idle_timeout_s = 30;          // a keep-alive connection without a request is closed after this
  // On SIGTERM / SIGINT, running requests may finish for this long; what is left then ends with an error
  // (a 503, a stream's error event) and the process exits.
  double shutdown_grace_s = 5;
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
  // Speculative decoding: makes the engine's proposer factory (EngineOptions::proposer) for max_seqs
  // sequences of up to n_ctx tokens at once; the engine verifies their drafts inside each step. Null: plain
  // decoding.
  std::function<Result<ProposerFactory>(int64_t n_ctx, int32_t max_seqs)> make_proposer;
  bool adaptive_drafts = true;  // EngineOptions::adaptive_drafts
  bool speculation_cost_policy = true;  // EngineOptions::speculation_cost_policy
};

using ModelLoader = std::function<Result<ServedModel>()>;

// Binds, loads, serves until *stop becomes true (signal handlers set it), then shuts down. Returns the
// process exit code; errors (port in use, model that does not load) are logged.
int run_server(const ServerOptions& options, const ModelLoader& loader, const std::atomic<bool>* stop);

}  // namespace saker::server
