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
#include "engine/kv_cache.h"
#include "models/model.h"
#include "sample/sampler.h"
#include "text/tokenizer.h"

namespace saker {

// One generated token as the sampler saw it, for logprobs (OpenAI `logprobs` / `top_logprobs`).
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;  // log-softmax of the raw model logits (before bias, penalties, temperature)
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;               // only when GenerateOptions::top_logprobs >= 0
  std::vector<TokenLogprob> top;   // the top_logprobs most likely tokens, highest first
};

struct GenerateOptions {
  int32_t max_tokens = 128;
  std::vector<std::string> stop;    // stop strings (never streamed, not even in part)
  bool ignore_eos = false;          // keep going past end-of-generation tokens (benchmarks)
  SamplingParams sampling;
  int32_t prefill_chunk = 512;      // prompt tokens per forward
  int32_t top_logprobs = -1;        // -1: no logprobs; >= 0: each token's logprob plus that many alternatives
  // Called for each generated token (end-of-generation tokens excluded) before its text reaches on_text;
  // return false to stop (FinishReason::kCancelled).
  std::function<bool(const GeneratedToken&)> on_token;
  // Set from another thread (a client that went away): generation stops at the next forward
  // (FinishReason::kCancelled). Must outlive generate().
  const std::atomic<bool>* cancel = nullptr;
};

enum class FinishReason { kLength, kStop, kEos, kCancelled };
const char* finish_reason_name(FinishReason r);

struct GenerateResult {
  std::vector<int32_t> tokens;      // generated ids (a stop string's tokens included)
  std::string text;                 // streamed text, without the stop string
  FinishReason finish = FinishReason::kLength;
  std::string stop_string;          // the stop string that ended generation (finish == kStop), else ""
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
  // The same, streamed: the prompt runs in chunks of `chunk` tokens and on_rows(first, logits) receives the
  // [rows, n_vocab] logits of positions first.. as each chunk finishes (long texts, large vocabularies).
  Status prompt_logits(std::span<const int32_t> tokens, int64_t chunk,
                       const std::function<void(int64_t first, std::span<const float> logits)>& on_rows);

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
