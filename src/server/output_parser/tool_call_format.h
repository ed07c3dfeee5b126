#pragma once
// Which tool-call syntax a model writes, guessed from its chat template, and OpenAI-style tool-call ids.
#include <cstdint>
#include <random>
#include <string>

namespace saker::server {

enum class ToolCallFormat {
  kNone,        // no tool-call parsing: the output is content (and reasoning)
  kHermes,      // Qwen / Hermes: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
  kQwen3Coder,  // <tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>
  kLlama3,      // Llama 3.1+: the output is {"name": ..., "parameters": {...}}, optionally after <|python_tag|>
  kMistral,     // [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] or [TOOL_CALLS]NAME[ARGS]{...}
};

// "none", "hermes", "qwen3_coder", "llama3", "mistral".
const char* tool_call_format_name(ToolCallFormat format);
// Parses a name as written by tool_call_format_name; false when unknown.
bool parse_tool_call_format(const std::string& name, ToolCallFormat* format);

// Guesses the format from a chat template's text: "<function=" with "<tool_call>" -> qwen3_coder,
// "<tool_call>" -> hermes, "[TOOL_CALLS]" -> mistral, "<|python_tag|>" or Llama 3 header markers -> llama3,
// otherwise none. The kHermes and kQwen3Coder parsers accept both body styles, so either guess is safe.
ToolCallFormat detect_tool_call_format(const std::string& chat_template);

// Makes "call_" + 24 random alphanumerics. A seed of 0 draws the seed from std::random_device.
class ToolCallIdGenerator {
 public:
  explicit ToolCallIdGenerator(uint64_t seed = 0);
  std::string next();

 private:
  std::mt19937_64 rng_;
};

}  // namespace saker::server
