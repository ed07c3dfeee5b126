#include "server/chat_prompt.h"

#include "text/chat_template.h"

namespace saker::server {

using nlohmann::json;

ChatPrompt::~ChatPrompt() = default;

Result<std::unique_ptr<ChatPrompt>> ChatPrompt::create(const std::string& template_source,
                                                       const text::Tokenizer* tokenizer) {
  std::unique_ptr<ChatPrompt> p(new ChatPrompt());
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
#ifdef SAKER_HAVE_CHAT_TEMPLATE
  if (template_) {
    json ctx = json::object();
    if (kwargs.is_object()) ctx = kwargs;
    ctx["messages"] = messages;
    if (tools.is_array() && !tools.empty()) ctx["tools"] = tools;
    ctx["add_generation_prompt"] = add_generation_prompt;
    ctx["bos_token"] = bos_token_;
    ctx["eos_token"] = eos_token_;
    return template_->render(ctx);
  }
#else
  (void)kwargs;
#endif
  return render_chatml(messages, tools, add_generation_prompt);
}

std::string ChatPrompt::render_chatml(const json& messages, const json& tools, bool add_generation_prompt) const {
  std::string out;
  std::string tools_block;
  if (tools.is_array() && !tools.empty()) {
    tools_block =
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    for (const auto& t : tools) tools_block += "\n" + (t.contains("function") ? t["function"] : t).dump();
    tools_block +=
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
        "<args-json-object>}\n</tool_call>";
  }
  size_t first = 0;
  if (!tools_block.empty()) {
    std::string system = tools_block;
    if (!messages.empty() && messages[0].value("role", "") == "system") {
      system = messages[0].value("content", "") + "\n\n" + tools_block;
      first = 1;
    }
    out += "<|im_start|>system\n" + system + "<|im_end|>\n";
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string role = m.value("role", "user");
    std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    if (role == "tool") {
      out += "<|im_start|>user\n<tool_response>\n" + content + "\n</tool_response><|im_end|>\n";
      continue;
    }
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (const auto& tc : m["tool_calls"]) {
        const json& f = tc.contains("function") ? tc["function"] : tc;
        json args = f.value("arguments", json::object());
        if (args.is_string()) args = json::parse(args.get<std::string>(), nullptr, false);
        if (!content.empty()) content += "\n";
        content += "<tool_call>\n{\"name\": " + json(f.value("name", "")).dump() + ", \"arguments\": " + args.dump() +
                   "}\n</tool_call>";
      }
    }
    out += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace saker::server
