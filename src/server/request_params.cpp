#include "server/request_params.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace saker::server {

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "an unknown type";
  }
}

const json* field(const json& body, const std::string& key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

std::optional<double> read_number(const json& body, const std::string& key, double min, double max) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw invalid_request(fmt::format("'{}' must be a number, got {}", key, type_name(*v)), key);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    throw invalid_request(fmt::format("'{}' must be between {} and {}, got {}", key, min, max, d), key);
  }
  return d;
}

std::optional<int64_t> read_int(const json& body, const std::string& key, int64_t min, int64_t max) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  int64_t i = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      throw invalid_request(fmt::format("'{}' is too large", key), key);
    }
    i = v->get<int64_t>();
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e15) {
    i = static_cast<int64_t>(v->get<double>());
  } else {
    throw invalid_request(fmt::format("'{}' must be an integer, got {}", key, type_name(*v)), key);
  }
  if (i < min || i > max) {
    throw invalid_request(fmt::format("'{}' must be between {} and {}, got {}", key, min, max, i), key);
  }
  return i;
}

std::optional<bool> read_bool(const json& body, const std::string& key) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid_request(fmt::format("'{}' must be a boolean, got {}", key, type_name(*v)), key);
  return v->get<bool>();
}

std::optional<std::string> read_string(const json& body, const std::string& key) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw invalid_request(fmt::format("'{}' must be a string, got {}", key, type_name(*v)), key);
  return v->get<std::string>();
}

std::vector<std::string> read_stop(const json& body, const std::string& key, size_t max_count) {
  const json* v = field(body, key);
  if (!v) return {};
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) {
        throw invalid_request(fmt::format("'{}[{}]' must be a string, got {}", key, i, type_name((*v)[i])),
                              fmt::format("{}[{}]", key, i));
      }
      out.push_back((*v)[i].get<std::string>());
    }
  } else {
    throw invalid_request(fmt::format("'{}' must be a string or an array of strings, got {}", key, type_name(*v)), key);
  }
  if (out.size() > max_count) {
    throw invalid_request(fmt::format("'{}' has {} entries; at most {} are allowed", key, out.size(), max_count), key);
  }
  for (const auto& s : out) {
    if (s.empty()) throw invalid_request(fmt::format("'{}' must not contain empty strings", key), key);
  }
  return out;
}

uint64_t random_seed() {
  static thread_local std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

OpenAiParams read_openai_params(const json& body, bool chat, const text::Tokenizer* tokenizer) {
  OpenAiParams p;
  SamplingParams& s = p.options.sampling;
  s.top_k = 0;
  s.penalty_last_n = -1;  // OpenAI penalties look at the whole generated text
  if (auto v = read_number(body, "temperature", 0, 2)) s.temperature = static_cast<float>(*v);
  if (auto v = read_number(body, "top_p", 0, 1)) {
    if (*v <= 0) throw invalid_request("'top_p' must be greater than 0", "top_p");
    s.top_p = static_cast<float>(*v);
  }
  if (auto v = read_int(body, "top_k", -1, 1 << 30)) s.top_k = static_cast<int32_t>(std::max<int64_t>(0, *v));
  if (auto v = read_number(body, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = read_number(body, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = read_number(body, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = read_number(body, "repetition_penalty", 0, 10)) {
    if (*v <= 0) throw invalid_request("'repetition_penalty' must be greater than 0", "repetition_penalty");
    s.repetition_penalty = static_cast<float>(*v);
  }
  if (auto v = read_int(body, "seed", INT64_MIN, INT64_MAX)) {
    s.seed = static_cast<uint64_t>(*v);
    p.seeded = true;
  } else {
    s.seed = random_seed();
  }
  if (const json* lb = field(body, "logit_bias")) {
    if (!lb->is_object()) throw invalid_request("'logit_bias' must be an object of token id -> bias", "logit_bias");
    for (const auto& [key, value] : lb->items()) {
      const std::string param = "logit_bias." + key;
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      const int64_t n_vocab = tokenizer ? tokenizer->n_vocab() : INT32_MAX;
      if (used != key.size() || id < 0 || id >= n_vocab) {
        throw invalid_request(fmt::format("'logit_bias' key '{}' is not a token id (0..{})", key, n_vocab - 1), param);
      }
      if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100) {
        throw invalid_request(fmt::format("'logit_bias' value for token {} must be a number in [-100, 100]", key), param);
      }
      s.logit_bias[static_cast<int32_t>(id)] = value.get<float>();
    }
  }
  p.options.stop = read_stop(body, "stop", 16);
  auto max_tokens = read_int(body, "max_tokens", 1, INT32_MAX);
  if (chat) {
    if (auto v = read_int(body, "max_completion_tokens", 1, INT32_MAX)) max_tokens = v;
  }
  p.max_tokens = max_tokens;
  if (auto v = read_int(body, "n", 1, 16)) p.n = static_cast<int32_t>(*v);
  // llama-server's extension, for load drivers and benchmarks: keep generating past end-of-generation tokens.
  if (auto v = read_bool(body, "ignore_eos")) p.options.ignore_eos = *v;
  if (auto v = read_bool(body, "stream")) p.stream = *v;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw invalid_request("'stream_options' must be an object", "stream_options");
    if (!p.stream) throw invalid_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    if (auto v = read_bool(*so, "include_usage")) p.include_usage = *v;
  }
  if (chat) {
    if (auto v = read_bool(body, "logprobs")) p.logprobs = *v;
    if (auto v = read_int(body, "top_logprobs", 0, 20)) {
      if (!p.logprobs) throw invalid_request("'top_logprobs' needs 'logprobs' set to true", "top_logprobs");
      p.options.top_logprobs = static_cast<int32_t>(*v);
    } else if (p.logprobs) {
      p.options.top_logprobs = 0;
    }
  } else if (auto v = read_int(body, "logprobs", 0, 5)) {
    p.logprobs = true;
    p.options.top_logprobs = static_cast<int32_t>(*v);
  }
  if (const json* rf = field(body, "response_format")) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
      throw invalid_request("'response_format' must be an object with a string 'type'", "response_format");
    }
    const std::string type = (*rf)["type"].get<std::string>();
    if (type != "text") {
      throw invalid_request(fmt::format("'response_format' type '{}' is not supported yet (constrained decoding is "
                                        "not implemented); only 'text' is accepted", type),
                            "response_format", "unsupported_parameter");
    }
  }
  return p;
}

AnthropicParams read_anthropic_params(const json& body) {
  AnthropicParams p;
  SamplingParams& s = p.options.sampling;
  s.top_k = 0;
  s.penalty_last_n = -1;
  s.seed = random_seed();
  auto mt = read_int(body, "max_tokens", 1, INT32_MAX);
  if (!mt) throw invalid_request("'max_tokens' is required", "max_tokens");
  p.max_tokens = *mt;
  if (auto v = read_number(body, "temperature", 0, 1)) s.temperature = static_cast<float>(*v);
  if (auto v = read_number(body, "top_p", 0, 1)) {
    if (*v <= 0) throw invalid_request("'top_p' must be greater than 0", "top_p");
    s.top_p = static_cast<float>(*v);
  }
  if (auto v = read_int(body, "top_k", 0, 1 << 30)) s.top_k = static_cast<int32_t>(*v);
  p.options.stop = read_stop(body, "stop_sequences", 16);
  // The same extension as the OpenAI routes: load drivers and tests need generations that run to max_tokens.
  if (auto v = read_bool(body, "ignore_eos")) p.options.ignore_eos = *v;
  if (auto v = read_bool(body, "stream")) p.stream = *v;
  return p;
}

void fit_to_context(GenerateOptions* options, std::optional<int64_t> requested, int64_t n_prompt, int64_t n_ctx,
                    const std::string& prompt_param) {
  if (n_prompt == 0) throw invalid_request("the prompt is empty", prompt_param);
  if (n_prompt >= n_ctx) {
    throw invalid_request(fmt::format("the prompt has {} tokens but the context holds {} (prompt + at least one "
                                      "generated token); shorten the prompt or start the server with a larger --ctx",
                                      n_prompt, n_ctx),
                          prompt_param, "context_length_exceeded");
  }
  const int64_t room = n_ctx - n_prompt;
  options->max_tokens = static_cast<int32_t>(requested ? std::min(*requested, room) : room);
}

}  // namespace saker::server
