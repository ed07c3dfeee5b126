#pragma once
// ChatTemplate: a model's Jinja chat template (GGUF tokenizer.chat_template or tokenizer_config.json), run by
// saker's own interpreter of the Jinja2 subset real templates use. Rendering matches Python jinja2 with
// trim_blocks and lstrip_blocks, the loopcontrols extension, tojson as json.dumps, raise_exception() and
// strftime_now() — the way transformers' apply_chat_template renders.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/byte_ranges.h"

namespace saker::text {

namespace jinja {
class Template;
struct Value;
}

// system, user, assistant, tool, developer: the roles a server accepts, which templates may turn into markers.
inline bool is_standard_role(std::string_view role) {
  return role == "system" || role == "user" || role == "assistant" || role == "tool" || role == "developer";
}

class ChatTemplate {
 public:
  // Parses the template; a syntax error is kInvalidArgument naming the line and column.
  static Result<ChatTemplate> parse(const std::string& source);

  // context: the template's variables (messages, add_generation_prompt, bos_token, eos_token, tools, and any
  // extra keys such as enable_thinking). A raise_exception() in the template, or a runtime error, is
  // kInvalidArgument with the template's message.
  Result<std::string> render(const nlohmann::json& context) const;
  // The same with the context's key order kept (nlohmann::json sorts object keys; Python's dicts, and so
  // `tools | tojson` in the reference renders, keep insertion order).
  Result<std::string> render_ordered(const nlohmann::ordered_json& context) const;

  // Renders with request_context's variables (messages, tools, extra kwargs: every string in them is
  // untrusted, except a message role that is_standard_role) and template_context's (bos_token, eos_token,
  // add_generation_prompt: trusted; a key in both takes this value). The text equals render() of the merged
  // context; `untrusted` lists the bytes that came from request strings, so a tokenizer can read the
  // template's markup as control tokens and never the request's (Tokenizer::encode_untrusted_as_text).
  Result<MarkedText> render_marked(const nlohmann::json& request_context, const nlohmann::json& template_context) const;
  Result<MarkedText> render_marked(const nlohmann::ordered_json& request_context,
                                   const nlohmann::ordered_json& template_context) const;

  // Freezes strftime_now() (reproducible renders; the time point is formatted as UTC); by default it reads
  // the local clock.
  void set_now(std::chrono::system_clock::time_point now) { now_ = now; }

  const std::string& source() const { return source_; }

 private:
  Result<MarkedText> render_value(const jinja::Value& context) const;

  std::string source_;
  std::shared_ptr<const jinja::Template> compiled_;
  std::optional<std::chrono::system_clock::time_point> now_;
};

}  // namespace saker::text
