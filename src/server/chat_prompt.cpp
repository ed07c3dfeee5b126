#include "server/chat_prompt.h"

#include "formats/json_parse.h"
#include "text/chat_template.h"

namespace saker::server {

using nlohmann::json;

ChatPrompt::~ChatPrompt() = default;

Result<std::unique_ptr<ChatPrompt>> ChatPrompt::create(const std::string& template_source,
                                                       const text::Tokenizer* tokenizer) {
  std::unique_ptr<ChatPrompt> p(new ChatPrompt());
  p->tokenizer_ = tokenizer;
  if (tokenizer) {
    const text::Vocab& v = tokenizer->vocab();
    if (v.bos_id() >= 0) p->bos_token_ = tokenizer->token_to_piece(v.bos_id(), true);
    if (v.eos_id() >= 0) p->eos_token_ = tokenizer->token_to_piece(v.eos_id(), true);
  }
#ifdef SAKER_HAVE_CHAT_TEMPLATE
  if (!template_source.empty()) {
    auto t = text::ChatTemplate::parse(template_source);
    if (!t.ok()) return t.status().with_context("chat template");
    p->template_ = std::make_unique<text::ChatTemplate>(std::move(t).value());
    p->source_ = template_source;
  }
#else
  (void)template_source;  // no Jinja interpreter in this build: ChatML
#endif
  return p;
}

const char* ChatPrompt::kind() const { return template_ ? "jinja" : "chatml"; }

Result<std::string> ChatPrompt::render(const json& messages, const json& tools, bool add_generation_prompt,
                                       const json& kwargs) const {
  SAKER_ASSIGN_OR_RETURN(text::MarkedText out, render_marked(messages, tools, add_generation_prompt, kwargs));
  return std::move(out.text);
}

Result<text::MarkedText> ChatPrompt::render_marked(const json& messages, const json& tools,
                                                   bool add_generation_prompt, const json& kwargs) const {
#ifdef SAKER_HAVE_CHAT_TEMPLATE
  if (template_) {
    // The request's variables and the template's own, kept apart so that provenance follows them.
    json request = json::object();
    if (kwargs.is_object()) request = kwargs;
    request["messages"] = messages;
    if (tools.is_array() && !tools.empty()) request["tools"] = tools;
    json own = {{"add_generation_prompt", add_generation_prompt}, {"bos_token", bos_token_}, {"eos_token", eos_token_}};
    // A kwarg named like one of the template's own variables used to be overwritten by it; still is.
    for (const auto& [key, value] : own.items()) request.erase(key);
    return template_->render_marked(request, own);
  }
#else
  (void)kwargs;
#endif
  return render_chatml(messages, tools, add_generation_prompt);
}

namespace {

// Builds a prompt piece by piece, remembering which pieces are the request's.
struct MarkedBuilder {
  text::MarkedText out;
  void markup(std::string_view s) { out.text += s; }
  void request(std::string_view s) {
    text::append_range(out.untrusted, out.text.size(), out.text.size() + s.size());
    out.text += s;
  }
};

}  // namespace

text::MarkedText ChatPrompt::render_chatml(const json& messages, const json& tools, bool add_generation_prompt) const {
  MarkedBuilder b;
  const bool with_tools = tools.is_array() && !tools.empty();
  auto tools_block = [&] {
    b.markup(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
    for (const auto& t : tools) {
      b.markup("\n");
      b.request((t.contains("function") ? t["function"] : t).dump());
    }
    b.markup(
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call>");
  };
  size_t first = 0;
  if (with_tools) {
    b.markup("<|im_start|>system\n");
    if (!messages.empty() && messages[0].value("role", "") == "system") {
      b.request(messages[0].value("content", ""));
      b.markup("\n\n");
      first = 1;
    }
    tools_block();
    b.markup("<|im_end|>\n");
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string role = m.value("role", "user");
    const std::string content =
        m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    if (role == "tool") {
      b.markup("<|im_start|>user\n<tool_response>\n");
      b.request(content);
      b.markup("\n</tool_response><|im_end|>\n");
      continue;
    }
    b.markup("<|im_start|>");
    // A standard role is the server's word (it checked it), anything else the client's.
    if (text::is_standard_role(role)) b.markup(role);
    else b.request(role);
    b.markup("\n");
    b.request(content);
    bool wrote = !content.empty();
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (const auto& tc : m["tool_calls"]) {
        const json& f = tc.contains("function") ? tc["function"] : tc;
        json args = f.value("arguments", json::object());
        if (args.is_string()) {
          // Bounded nesting: nlohmann's parser and dump recurse. Text that does not parse stays a string.
          auto parsed = parse_json(args.get_ref<const std::string&>(), "arguments", 0, {.max_depth = 64});
          if (parsed.ok()) args = std::move(parsed).value();
        }
        if (wrote) b.markup("\n");
        wrote = true;
        b.markup("<tool_call>\n{\"name\": ");
        b.request(json(f.value("name", "")).dump());
        b.markup(", \"arguments\": ");
        b.request(args.dump());
        b.markup("}\n</tool_call>");
      }
    }
    b.markup("<|im_end|>\n");
  }
  if (add_generation_prompt) b.markup("<|im_start|>assistant\n");
  return std::move(b.out);
}

bool ChatPrompt::add_special_for(std::string_view text, const text::ByteRanges& untrusted, bool add_special) const {
  const text::Vocab& v = tokenizer_->vocab();
  if (!add_special || !v.add_bos() || v.bos_id() < 0) return add_special;
  const std::string bos = tokenizer_->token_to_piece(v.bos_id(), true);
  const bool template_wrote_bos =
      !bos.empty() && text.substr(0, bos.size()) == bos && !text::overlaps(untrusted, 0, bos.size());
  return !template_wrote_bos;
}

std::vector<int32_t> ChatPrompt::tokenize(const text::MarkedText& prompt, bool add_special,
                                          bool allow_special_in_content) const {
  if (!tokenizer_) return {};
  if (allow_special_in_content) {
    return tokenizer_->encode(prompt.text, add_special_for(prompt.text, {}, add_special), true);
  }
  return tokenizer_->encode_untrusted_as_text(prompt.text, prompt.untrusted,
                                              add_special_for(prompt.text, prompt.untrusted, add_special));
}

std::vector<int32_t> ChatPrompt::tokenize_text(std::string_view text, bool add_special, bool allow_special) const {
  if (!tokenizer_) return {};
  text::MarkedText prompt{std::string(text), {}};
  if (!text.empty()) prompt.untrusted.push_back({0, text.size()});
  return tokenize(prompt, add_special, allow_special);
}

}  // namespace saker::server
