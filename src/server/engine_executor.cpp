#include "server/engine_executor.h"

#include "core/clock.h"
#include "core/log.h"

namespace saker::server {

namespace {
using Clock = std::chrono::steady_clock;

// Per-request timing for the metrics, shared by the callbacks the engine calls on its thread.
struct RequestClock {
  Clock::time_point last;
  bool first = true;
};
}  // namespace

Result<std::unique_ptr<EngineExecutor>> EngineExecutor::create(Model& model, const text::Tokenizer* tokenizer,
                                                               const EngineOptions& options, Metrics* metrics) {
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(model, tokenizer, options));
  engine->start();
  return std::unique_ptr<EngineExecutor>(new EngineExecutor(std::move(engine), metrics));
}

EngineExecutor::~EngineExecutor() {
  engine_->cancel_all();
  engine_.reset();  // runs the remaining steps: every stream gets its end
}

std::shared_ptr<GenerationStream> EngineExecutor::submit(GenerationRequest request) {
  auto stream = std::make_shared<GenerationStream>();
  GenerateOptions opt = std::move(request.options);
  opt.cancel = stream->cancel_flag();
  auto clock = std::make_shared<RequestClock>();
  clock->last = Clock::now();
  Metrics* metrics = metrics_;
  auto user_on_token = opt.on_token;
  opt.on_token = [stream, clock, metrics, user_on_token](const GeneratedToken& t) {
    const Clock::time_point now = Clock::now();
    if (metrics) {
      if (clock->first) {
        metrics->on_first_token(seconds_between(clock->last, now));
      } else {
        metrics->on_token_interval(seconds_between(clock->last, now));
      }
    }
    clock->first = false;
    clock->last = now;
    stream->add_token(t);
    if (user_on_token && !user_on_token(t)) return false;
    return !stream->cancelled();
  };
  auto on_text = [stream](std::string_view text) {
    stream->push_text(std::string(text));
    return !stream->cancelled();
  };
  auto on_done = [stream, metrics](Result<GenerateResult> r) {
    if (metrics) {
      if (r.ok()) {
        metrics->on_prompt_tokens(r->n_prompt);
        metrics->on_generated_tokens(static_cast<int64_t>(r->tokens.size()));
        metrics->on_finish(finish_reason_name(r->finish));
        if (r->draft) metrics->on_draft(r->draft->verify_steps, r->draft->committed_tokens);
      } else {
        metrics->on_finish("error");
      }
    }
    if (!r.ok()) SAKER_LOG_WARN("generation failed: {}", r.status().to_string());
    stream->finish(std::move(r));
  };
  engine_->submit(std::move(request.prompt), std::move(opt), std::move(on_text), std::move(on_done));
  return stream;
}

ExecutorStats EngineExecutor::stats() const {
  const EngineStats e = engine_->stats();
  ExecutorStats s;
  s.queue_depth = e.waiting;
  s.slots_busy = e.running;
  s.slots_total = engine_->options().max_seqs;
  s.kv_pages_total = e.pool.pages_total;
  s.kv_pages_free = e.pool.pages_free;
  s.kv_pages_cached = e.pool.pages_cached;
  s.kv_page_tokens = engine_->options().kv_block;
  s.prefix_lookup_tokens = e.pool.lookup_tokens;
  s.prefix_hit_tokens = e.pool.hit_tokens;
  s.prefix_host_hit_tokens = e.pool.host_hit_tokens;
  s.host_cached_pages = e.pool.host_pages;
  s.preemptions = e.preemptions;
  s.engine_steps = e.steps;
  s.engine_step_tokens = e.step_tokens;
  s.undrafted_steps = e.undrafted_steps;
  s.plain_decode_steps = e.plain_decode_steps;
  s.drafting_steps = e.drafting_steps;
  s.plain_decode_seconds = e.plain_decode_ms / 1000.0;
  s.drafting_seconds = e.drafting_ms / 1000.0;
  s.accepted_drafts = e.accepted_drafts;
  return s;
}

}  // namespace saker::server
