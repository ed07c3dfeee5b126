// `saker serve -m MODEL`: the OpenAI / Anthropic compatible HTTP server (see docs/server.md).
#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "cli/device_args.h"
#include "cli/model_loading.h"
#include "cli/speculation_args.h"
#include "server/server.h"

namespace saker::cli {
namespace {

struct ServeArgs {
  std::string model;
  server::ServerOptions server;
  std::string chat_template_file;
  DeviceArgs dev;  // --device, --tensor-parallel, --ref-ops, --no-cuda-graphs, --batch-invariant
  SpeculationArgs spec;
  int32_t load_delay_ms = 0;  // testing aid: /health stays 503 this much longer
};

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

std::string default_model_id(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "folder/" -> "folder"
  std::string name = p.filename().string();
  if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name.empty() ? "saker" : name;
}

int run(ServeArgs a) {
  if (a.server.model_id.empty()) a.server.model_id = default_model_id(a.model);
  std::string template_override;
  if (!a.chat_template_file.empty()) {
    std::ifstream in(a.chat_template_file, std::ios::binary);
    if (!in) return fail(fmt::format("--chat-template-file: cannot read '{}'", a.chat_template_file));
    template_override.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client that disconnects mid-stream is an error return, not a signal
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const OpsOptions ops = a.dev.ops();
  if (Status st = check_speculation_args(a.spec); !st.ok()) return fail(st.to_string());
  auto loader = [&]() -> Result<server::ServedModel> {
    if (a.load_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a.load_delay_ms));
    SAKER_ASSIGN_OR_RETURN(LoadedModel lm, load_model_on(a.model, ops, a.dev.device));
    if (!lm.tokenizer) {
      return make_error(StatusCode::kInvalidArgument, "{}: the model has no tokenizer; the server needs one", a.model);
    }
    server::ServedModel m;
    m.weights = std::move(lm.weights);
    m.model = std::move(lm.model);
    m.tokenizer = std::move(lm.tokenizer);
    m.chat_template = template_override.empty() ? lm.chat_template : template_override;
    // A drafter's weights are loaded once; each sequence gets its own proposer state.
    SAKER_ASSIGN_OR_RETURN(m.make_proposer,
                           make_proposer_maker(a.spec, {m.weights, m.model.get(), m.tokenizer.get()}, ops));
    m.adaptive_drafts = !a.spec.fixed_draft;
    m.speculation_cost_policy = !a.spec.always_speculate;
    return m;
  };
  return server::run_server(a.server, loader, &g_stop);
}

}  // namespace

Command make_serve_command() {
  auto a = std::make_shared<ServeArgs>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [a, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("serve", "Serve a model over the OpenAI and Anthropic HTTP APIs");
        *sub = s;
        s->add_option("-m,--model", a->model, "Model: a .gguf file or a Hugging Face folder")->required();
        s->add_option("--host", a->server.host, "Address to listen on")->capture_default_str();
        s->add_option("--port", a->server.port, "Port to listen on")->capture_default_str()->check(CLI::Range(0, 65535));
        s->add_option("--api-key", a->server.api_key, "Require this key (Authorization: Bearer KEY or x-api-key)");
        s->add_option("-c,--ctx", a->server.n_ctx,
                      "Longest prompt + generation of one request in tokens (default: the model's, at most 4096)");
        s->add_option("--parallel", a->server.n_parallel,
                      "Requests generated at once: sequences the batched engine runs in one step")
            ->capture_default_str()->check(CLI::Range(1, 1024));
        s->add_option("--kv-tokens", a->server.kv_tokens,
                      "KV pool size in tokens, shared by every sequence (default: --parallel x --ctx)")
            ->check(CLI::Range(int64_t{0}, int64_t{1} << 31));
        s->add_option("--kv-block", a->server.kv_block, "Tokens per KV page")
            ->capture_default_str()->check(CLI::Range(1, 4096));
        s->add_option("-b,--batch-tokens", a->server.batch_tokens,
                      "Tokens per engine step (decode tokens plus prefill chunks; default: 4 x prefill chunk + --parallel)")
            ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
        s->add_option("--prefill-chunk", a->server.prefill_chunk, "Prompt tokens one sequence feeds per step")
            ->capture_default_str()->check(CLI::Range(1, 1 << 20));
        s->add_flag_function("--no-prefix-cache", [a](int64_t) { a->server.prefix_cache = false; },
                    "Do not reuse the KV pages of earlier requests' identical prompt prefixes");
        s->add_option("--cache-ram", a->server.cache_ram_gb,
                      "GiB of host RAM that keep evicted prefix pages, brought back when a prompt needs them")
            ->check(CLI::Range(0.0, 1048576.0));
        s->add_option("--model-name", a->server.model_id, "Model id in /v1/models and requests (default: file name)");
        s->add_option("--alias", a->server.aliases, "Another model name requests may use (repeatable; '*': any)");
        s->add_option("--chat-template-file", a->chat_template_file, "Jinja chat template replacing the model's");
        s->add_option("--http-threads", a->server.http_threads,
                      "Threads that run HTTP request handlers (0: 64 + 4 per --parallel sequence); connections "
                      "themselves are held by a few event-driven I/O threads")
            ->capture_default_str()->check(CLI::Range(0, 65536));
        s->add_option("--max-connections", a->server.max_connections,
                      "Open HTTP connections in all; past it new ones get a 503 and are closed")
            ->capture_default_str()->check(CLI::Range(1, 1 << 20));
        s->add_option("--max-connections-per-client", a->server.max_connections_per_client,
                      "Open HTTP connections from one client address; past it a 503")
            ->capture_default_str()->check(CLI::Range(1, 1 << 20));
        s->add_option("--http-header-timeout", a->server.http_header_timeout_s,
                      "Seconds a request's whole header may take to arrive (slow clients are closed)")
            ->capture_default_str()->check(CLI::Range(0.05, 3600.0));
        s->add_option("--http-idle-timeout", a->server.http_idle_timeout_s,
                      "Seconds a keep-alive connection may wait for its next request")
            ->capture_default_str()->check(CLI::Range(0.05, 86400.0));
        s->add_option("--shutdown-grace", a->server.shutdown_grace_s,
                      "Seconds running requests may finish after SIGTERM / SIGINT; what is left then ends with an "
                      "error (503, or a stream's error event) and the process exits")
            ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
        s->add_option("--max-generations", a->server.max_generations,
                      "Most generations one request may ask for (n x prompts); more is refused with 400")
            ->capture_default_str()->check(CLI::Range(1, 1 << 16));
        s->add_flag("--allow-special-in-content", a->server.allow_special_in_content,
                    "Read control-token text (<|im_start|>, <|endoftext|>) in message content and completions "
                    "prompts as control tokens (for trusted callers that write turns themselves; off: it is text)");
        s->add_option("--cors-origin", a->server.cors_origins,
                      "A web origin (https://app.example:8443) whose pages may call the server: CORS headers and "
                      "preflight answers (repeatable). Without --api-key other origins are refused");
        s->add_option("--debug-load-delay-ms", a->load_delay_ms, "Testing aid: wait this long before loading")
            ->group("");  // hidden
        add_device_options(s, &a->dev);
        add_speculation_options(s, &a->spec, "every request inside the batched step");
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [a] { return run(*a); },
  };
}

}  // namespace saker::cli
