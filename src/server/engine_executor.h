#pragma once
// EngineExecutor: the server's requests go into the batched engine (engine/Engine), which runs them on its own
// thread, many sequences per step over one KV pool with a prefix cache shared by every connection. Each
// request's tokens and text reach its GenerationStream as the engine decides them; a cancelled stream (a
// client that went away, running or queued) stops its sequence at the next step and frees its pages. Records
// time to first token, per-token latency, token counts and finish reasons in Metrics.
#include <memory>

#include "engine/engine.h"
#include "server/executor.h"
#include "server/metrics.h"

namespace saker::server {

class EngineExecutor : public Executor {
 public:
  static Result<std::unique_ptr<EngineExecutor>> create(Model& model, const text::Tokenizer* tokenizer,
                                                        const EngineOptions& options, Metrics* metrics);
  ~EngineExecutor() override;  // cancels queued and running requests, stops the engine thread

  std::shared_ptr<GenerationStream> submit(GenerationRequest request) override;
  ExecutorStats stats() const override;
  int64_t n_ctx() const override { return engine_->n_ctx(); }
  // Cancels every queued and running request (shutdown).
  void cancel_all() { engine_->cancel_all(); }

 private:
  EngineExecutor(std::unique_ptr<Engine> engine, Metrics* metrics) : engine_(std::move(engine)), metrics_(metrics) {}

  std::unique_ptr<Engine> engine_;
  Metrics* metrics_;
};

}  // namespace saker::server
