#pragma once
// Typed reads of request fields. Every reader throws ApiError (400, naming the field and what was expected)
// on a wrong type or range, so a handler reads a body top to bottom and the wrapper answers the first problem.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generator.h"
#include "server/api_error.h"
#include "text/tokenizer.h"

namespace saker::server {

using nlohmann::json;

std::optional<double> read_number(const json& body, const std::string& key, double min, double max);
std::optional<int64_t> read_int(const json& body, const std::string& key, int64_t min, int64_t max);
std::optional<bool> read_bool(const json& body, const std::string& key);
std::optional<std::string> read_string(const json& body, const std::string& key);
// A string or an array of strings (OpenAI `stop`, Anthropic `stop_sequences`).
std::vector<std::string> read_stop(const json& body, const std::string& key, size_t max_count);

// What an OpenAI request (chat or completions) asks of generation.
struct OpenAiParams {
  GenerateOptions options;  // sampling, stop, max_tokens (0 = until the context is full), top_logprobs
  std::optional<int64_t> max_tokens;
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  bool seeded = false;
};

// chat: /v1/chat/completions field rules (logprobs bool + top_logprobs), else /v1/completions (logprobs int).
OpenAiParams read_openai_params(const json& body, bool chat, const text::Tokenizer* tokenizer);

// Anthropic /v1/messages: max_tokens (required), temperature, top_p, top_k, stop_sequences, stream.
struct AnthropicParams {
  GenerateOptions options;
  int64_t max_tokens = 0;
  bool stream = false;
};
AnthropicParams read_anthropic_params(const json& body);

// Sets options.max_tokens from the request's cap and the room left in the context; throws
// context_length_exceeded when the prompt alone fills it.
void fit_to_context(GenerateOptions* options, std::optional<int64_t> requested, int64_t n_prompt, int64_t n_ctx,
                    const std::string& prompt_param);

uint64_t random_seed();

}  // namespace saker::server
