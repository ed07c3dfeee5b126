#pragma once
// ChatPrompt: messages in, prompt text out. Runs the model's Jinja chat template (text/ChatTemplate) with
// transformers' variables (messages, tools, add_generation_prompt, bos_token, eos_token, extra kwargs), or
// ChatML (<|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n) when the model has none.
// Messages are in the normalized form the OpenAI and Anthropic routes produce: {role, content (string),
// tool_calls?, tool_call_id?, name?} with roles system / user / assistant / tool.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/tokenizer.h"

namespace saker::text {
class ChatTemplate;
}

namespace saker::server {

class ChatPrompt {
 public:
  // template_source: "" for ChatML. A template that does not parse is an error naming the line.
  static Result<std::unique_ptr<ChatPrompt>> create(const std::string& template_source,
                                                    const text::Tokenizer* tokenizer);
  ~ChatPrompt();

  // messages: normalized (see above); tools: OpenAI-style [{type: function, function: {...}}] or null;
  // kwargs: extra template variables (chat_template_kwargs, e.g. enable_thinking).
  Result<std::string> render(const nlohmann::json& messages, const nlohmann::json& tools,
                             bool add_generation_prompt, const nlohmann::json& kwargs) const;

  // "jinja" or "chatml".
  const char* kind() const;
  // The template source in use ("" for ChatML).
  const std::string& source() const { return source_; }

 private:
  ChatPrompt() = default;
  std::string render_chatml(const nlohmann::json& messages, const nlohmann::json& tools,
                            bool add_generation_prompt) const;

  std::unique_ptr<text::ChatTemplate> template_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
};

}  // namespace saker::server
