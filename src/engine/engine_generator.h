#pragma once
// EngineGenerator: the SequenceGenerator interface over the batched engine, for callers that run one request
// at a time (`saker run`): the same step, pool and numbers as the server, driven on the caller's thread.
#include <memory>

#include "engine/engine.h"
#include "engine/generator_types.h"

namespace saker {

class EngineGenerator : public SequenceGenerator {
 public:
  static Result<std::unique_ptr<EngineGenerator>> create(Model& model, const text::Tokenizer* tokenizer,
                                                         const EngineOptions& options) {
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(model, tokenizer, options));
    return std::unique_ptr<EngineGenerator>(new EngineGenerator(std::move(engine)));
  }

  Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<bool(std::string_view)>& on_text = nullptr) override {
    return engine_->generate(prompt, options, on_text);
  }
  int64_t n_ctx() const override { return engine_->n_ctx(); }
  Engine& engine() { return *engine_; }

 private:
  explicit EngineGenerator(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
  std::unique_ptr<Engine> engine_;
};

}  // namespace saker
