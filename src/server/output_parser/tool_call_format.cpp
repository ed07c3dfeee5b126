#include "server/output_parser/tool_call_format.h"

namespace saker::server {

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kQwen3Coder: return "qwen3_coder";
    case ToolCallFormat::kLlama3: return "llama3";
    case ToolCallFormat::kMistral: return "mistral";
  }
  return "none";
}

bool parse_tool_call_format(const std::string& name, ToolCallFormat* format) {
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kHermes, ToolCallFormat::kQwen3Coder,
                           ToolCallFormat::kLlama3, ToolCallFormat::kMistral}) {
    if (name == tool_call_format_name(f)) {
      *format = f;
      return true;
    }
  }
  return false;
}

ToolCallFormat detect_tool_call_format(const std::string& chat_template) {
  auto has = [&](const char* s) { return chat_template.find(s) != std::string::npos; };
  if (has("<tool_call>")) return has("<function=") ? ToolCallFormat::kQwen3Coder : ToolCallFormat::kHermes;
  if (has("[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  if (has("<|python_tag|>") || has("<|start_header_id|>") || has("<|eom_id|>")) return ToolCallFormat::kLlama3;
  return ToolCallFormat::kNone;
}

ToolCallIdGenerator::ToolCallIdGenerator(uint64_t seed) {
  if (seed == 0) {
    std::random_device device;
    seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  }
  rng_.seed(seed);
}

std::string ToolCallIdGenerator::next() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::uniform_int_distribution<int> pick(0, static_cast<int>(sizeof(kAlphabet)) - 2);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(rng_)];
  return id;
}

}  // namespace saker::server
