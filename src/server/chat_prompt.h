#pragma once
// ChatPrompt: messages in, prompt text out. Runs the model's Jinja chat template (text/ChatTemplate) with
// transformers' variables (messages, tools, add_generation_prompt, bos_token, eos_token, extra kwargs), or
// ChatML (<|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n) when the model has none.
// Messages are in the normalized form the OpenAI and Anthropic routes produce: {role, content (string),
// tool_calls?, tool_call_id?, name?} with roles system / user / assistant / tool.
//
// The turn boundary: everything in messages, tools and kwargs is the request's text, the template's markup
// is the server's. render_marked() keeps the two apart (the byte ranges the request supplied) and tokenize()
// reads control tokens (<|im_start|>, <|eot_id|>) only in the template's markup, so a message cannot write a
// turn of its own.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/byte_ranges.h"
#include "text/tokenizer.h"

namespace saker::text {
class ChatTemplate;
}

namespace saker::server {

class ChatPrompt {
 public:
  // template_source: "" for ChatML. A template that does not parse is an error naming the line. tokenizer
  // (may be null: tokenize() then gives nothing) must outlive the prompt.
  static Result<std::unique_ptr<ChatPrompt>> create(const std::string& template_source,
                                                    const text::Tokenizer* tokenizer);
  ~ChatPrompt();

  // messages: normalized (see above); tools: OpenAI-style [{type: function, function: {...}}] or null;
  // kwargs: extra template variables (chat_template_kwargs, e.g. enable_thinking).
  Result<std::string> render(const nlohmann::json& messages, const nlohmann::json& tools,
                             bool add_generation_prompt, const nlohmann::json& kwargs) const;
  // The same text, with the byte ranges that came from the request (every string in messages, tools and
  // kwargs, wherever the template put it, except a standard role name; bos_token and eos_token are the
  // template's own). The ChatML fallback marks the same strings.
  Result<text::MarkedText> render_marked(const nlohmann::json& messages, const nlohmann::json& tools,
                                         bool add_generation_prompt, const nlohmann::json& kwargs) const;

  // Token ids of a rendered prompt. add_special: BOS when the vocabulary wants one and the template did not
  // write it (a BOS text at the start counts only when the template wrote it). Control-token text inside the
  // request's ranges is tokenized as text; allow_special_in_content reads it as control tokens too (the ids
  // of encode(text, add, true): for trusted callers that write turns themselves). When the request's text
  // holds no control-token text both give the same ids.
  std::vector<int32_t> tokenize(const text::MarkedText& prompt, bool add_special,
                                bool allow_special_in_content = false) const;
  // A prompt that is all the request's (/v1/completions): control-token text in it is a control token only
  // with allow_special, else text. BOS as above.
  std::vector<int32_t> tokenize_text(std::string_view text, bool add_special, bool allow_special) const;

  // "jinja" or "chatml".
  const char* kind() const;
  // The template source in use ("" for ChatML).
  const std::string& source() const { return source_; }

 private:
  ChatPrompt() = default;
  text::MarkedText render_chatml(const nlohmann::json& messages, const nlohmann::json& tools,
                                 bool add_generation_prompt) const;
  // The add_special to encode with: false when the vocabulary adds a BOS and the text starts with one the
  // template wrote (a BOS text inside `untrusted` is the request's, not a BOS), else add_special.
  bool add_special_for(std::string_view text, const text::ByteRanges& untrusted, bool add_special) const;

  const text::Tokenizer* tokenizer_ = nullptr;
  std::unique_ptr<text::ChatTemplate> template_;
  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
};

}  // namespace saker::server
