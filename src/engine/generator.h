#pragma once
// Generator: one sequence from prompt to finish on a Model (the loop behind `saker run`): chunked prefill,
// then one token per step, sampling, stop strings, streaming text through the incremental detokenizer.
// The server's continuous-batching scheduler will drive many sequences through the same Model::forward.
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/block_allocator.h"
#include "engine/generator_types.h"
#include "models/kv_cache.h"
#include "models/model.h"
#include "sample/sampler.h"
#include "text/tokenizer.h"

namespace saker {

class Generator : public SequenceGenerator {
 public:
  // n_ctx: the longest prompt + generation this generator holds (KV cache sized for it, from
  // model.allocate_kv, in the model's KV dtype).
  static Result<std::unique_ptr<Generator>> create(Model& model, const text::Tokenizer* tokenizer, int64_t n_ctx);

  Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<bool(std::string_view)>& on_text = nullptr) override;

  // Logits of every prompt position (teacher forcing), [n_tokens, n_vocab]: for golden tests and perplexity.
  Result<std::vector<float>> prompt_logits(std::span<const int32_t> tokens);
  // The same, streamed: the prompt runs in chunks of `chunk` tokens and on_rows(first, logits) receives the
  // [rows, n_vocab] logits of positions first.. as each chunk finishes (long texts, large vocabularies).
  Status prompt_logits(std::span<const int32_t> tokens, int64_t chunk,
                       const std::function<void(int64_t first, std::span<const float> logits)>& on_rows);

  int64_t n_ctx() const override { return n_ctx_; }

  // Runs tokens [begin, tokens.size()) of `tokens` after a cached prefix of `begin` tokens (what earlier calls
  // fed at those positions; anything cached past `begin` is overwritten), in chunks of at most `chunk` rows,
  // and returns the greedy (argmax) next token after the last one. For a draft model that proposes tokens
  // and then rolls back to what the target accepted.
  Result<int32_t> extend_argmax(std::span<const int32_t> tokens, int64_t begin, int64_t chunk = 512);

 private:
  Generator(Model& model, const text::Tokenizer* tokenizer, int64_t n_ctx, std::unique_ptr<KvStorage> kv);
  // Runs tokens [begin, end) of `tokens` (already-cached prefix before begin); logits for `outputs` (null:
  // none), and their argmax ids when `argmax` is set.
  Status step(std::span<const int32_t> tokens, int64_t begin, int64_t end, std::span<const int32_t> outputs,
              float* logits, int32_t* argmax = nullptr);

  Model& model_;
  const text::Tokenizer* tokenizer_;
  int64_t n_ctx_;
  std::unique_ptr<KvStorage> kv_;
  BlockAllocator allocator_;
  std::vector<int32_t> block_table_;
};

}  // namespace saker
