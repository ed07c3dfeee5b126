#pragma once
// Generator: one sequence from prompt to finish on a Model (the loop behind `saker run`): chunked prefill,
// then one token per step, sampling, stop strings, streaming text through the incremental detokenizer.
// The server's continuous-batching scheduler will drive many sequences through the same Model::forward.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/block_allocator.h"
#include "engine/kv_cache.h"
#include "models/model.h"
#include "sample/sampler.h"
#include "text/tokenizer.h"

namespace saker {

struct GenerateOptions {
  int32_t max_tokens = 128;
  std::vector<std::string> stop;    // stop strings (never streamed, not even in part)
  bool ignore_eos = false;          // keep going past end-of-generation tokens (benchmarks)
  SamplingParams sampling;
  int32_t prefill_chunk = 512;      // prompt tokens per forward
};

enum class FinishReason { kLength, kStop, kEos };
const char* finish_reason_name(FinishReason r);

struct GenerateResult {
  std::vector<int32_t> tokens;      // generated ids (a stop string's tokens included)
  std::string text;                 // streamed text, without the stop string
  FinishReason finish = FinishReason::kLength;
  int64_t n_prompt = 0;
  double prompt_ms = 0;             // prefill, including the first token's logits
  double generate_ms = 0;           // every later step
};

class Generator {
 public:
  // n_ctx: the longest prompt + generation this generator holds (KV cache sized for it).
  static Result<std::unique_ptr<Generator>> create(Model& model, const text::Tokenizer* tokenizer, int64_t n_ctx,
                                                   DType kv_dtype = DType::kF32);

  // on_text(chunk) receives valid UTF-8 as it becomes final; return false to stop early.
  Result<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<bool(std::string_view)>& on_text = nullptr);

  // Logits of every prompt position (teacher forcing), [n_tokens, n_vocab]: for golden tests and perplexity.
  Result<std::vector<float>> prompt_logits(std::span<const int32_t> tokens);

  int64_t n_ctx() const { return n_ctx_; }

 private:
  Generator(Model& model, const text::Tokenizer* tokenizer, int64_t n_ctx, KvCache kv);
  // Runs tokens [begin, end) of `tokens` (already-cached prefix before begin); logits for `outputs`.
  Status step(std::span<const int32_t> tokens, int64_t begin, int64_t end, std::span<const int32_t> outputs,
              float* logits);

  Model& model_;
  const text::Tokenizer* tokenizer_;
  int64_t n_ctx_;
  KvCache kv_;
  BlockAllocator allocator_;
  std::vector<int32_t> block_table_;
};

}  // namespace saker
