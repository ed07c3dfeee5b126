#include "server/messages.h"

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "formats/json_parse.h"
#include "server/api_error.h"

namespace saker::server {

using nlohmann::json;

namespace {

// Nesting allowed inside a tool call's arguments string (the body itself is limited to 128 levels).
constexpr int kMaxArgumentsDepth = 64;

// True when object[key] is the string `value` (a member of another type is simply not it).
bool is_string_value(const json& object, const char* key, std::string_view value) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() && it->get_ref<const std::string&>() == value;
}

// object[key] when it is a string, `fallback` when it is absent or null; any other type is refused by name
// (json::value() would throw a type error that names no field).
std::string optional_string(const json& object, const char* key, std::string fallback, const std::string& param) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw invalid_request(fmt::format("'{}' must be a string", param), param);
  return it->get<std::string>();
}

// OpenAI content: a string, null, or an array of {type: "text", text} parts.
std::string openai_content(const json& content, const std::string& param) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw invalid_request(fmt::format("'{}' must be a string or an array of parts", param), param);
  std::string out;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string p = fmt::format("{}[{}]", param, i);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      throw invalid_request(fmt::format("'{}' must be an object with a string 'type'", p), p);
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      throw invalid_request(fmt::format("'{}': content parts of type '{}' are not supported (text only)", p, type),
                            p + ".type");
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      throw invalid_request(fmt::format("'{}.text' must be a string", p), p + ".text");
    }
    out += part["text"].get<std::string>();
  }
  return out;
}

// Anthropic text content: a string or an array of text blocks.
std::string anthropic_text(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw invalid_request(fmt::format("'{}' must be a string or an array of blocks", param), param);
  std::string out;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& b = content[i];
    const std::string p = fmt::format("{}[{}]", param, i);
    if (!b.is_object() || !is_string_value(b, "type", "text") || !b.contains("text") || !b["text"].is_string()) {
      throw invalid_request(fmt::format("'{}' must be a text block ({{\"type\": \"text\", \"text\": ...}})", p), p);
    }
    out += b["text"].get<std::string>();
  }
  return out;
}

}  // namespace

json normalize_openai_messages(const json& body) {
  auto it = body.find("messages");
  if (it == body.end()) throw invalid_request("'messages' is required", "messages");
  if (!it->is_array()) throw invalid_request("'messages' must be an array", "messages");
  if (it->empty()) throw invalid_request("'messages' must contain at least one message", "messages");
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string p = fmt::format("messages[{}]", i);
    if (!m.is_object()) throw invalid_request(fmt::format("'{}' must be an object", p), p);
    if (!m.contains("role") || !m["role"].is_string()) {
      throw invalid_request(fmt::format("'{}.role' must be a string", p), p + ".role");
    }
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      throw invalid_request(fmt::format("'{}.role' must be one of system, developer, user, assistant, tool; got '{}'",
                                        p, role), p + ".role");
    }
    json n = {{"role", role}};
    const bool has_tool_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (!m.contains("content") && !(role == "assistant" && has_tool_calls)) {
      throw invalid_request(fmt::format("'{}.content' is required", p), p + ".content");
    }
    n["content"] = openai_content(m.value("content", json(nullptr)), p + ".content");
    if (has_tool_calls) {
      if (role != "assistant" || !m["tool_calls"].is_array()) {
        throw invalid_request(fmt::format("'{}.tool_calls' must be an array on an assistant message", p), p + ".tool_calls");
      }
      json calls = json::array();
      for (size_t j = 0; j < m["tool_calls"].size(); ++j) {
        const json& tc = m["tool_calls"][j];
        const std::string q = fmt::format("{}.tool_calls[{}]", p, j);
        if (!tc.is_object() || !tc.contains("function") || !tc["function"].is_object() ||
            !tc["function"].contains("name") || !tc["function"]["name"].is_string()) {
          throw invalid_request(fmt::format("'{}' must be {{\"type\": \"function\", \"function\": {{\"name\", "
                                            "\"arguments\"}}}}", q), q);
        }
        json f = tc["function"];
        // Templates expect arguments as a mapping (Qwen, Llama) and accept a string too; pass a mapping. The
        // string is parsed with the body's nesting limit (nlohmann's parser and dump recurse, and a string
        // holding 200000 '[' would overflow the stack); one that does not parse stays a string.
        if (f.contains("arguments") && f["arguments"].is_string()) {
          auto parsed = parse_json(f["arguments"].get_ref<const std::string&>(), q + ".function.arguments", 0,
                                   {.max_depth = kMaxArgumentsDepth});
          if (parsed.ok()) f["arguments"] = std::move(parsed).value();
        }
        calls.push_back({{"id", optional_string(tc, "id", fmt::format("call_{}", j), q + ".id")},
                         {"type", "function"},
                         {"function", f}});
      }
      n["tool_calls"] = calls;
    }
    if (role == "tool") {
      if (std::string id = optional_string(m, "tool_call_id", "", p + ".tool_call_id"); !id.empty()) {
        n["tool_call_id"] = id;
      }
    }
    if (std::string name = optional_string(m, "name", "", p + ".name"); !name.empty()) n["name"] = name;
    out.push_back(std::move(n));
  }
  return out;
}

json read_openai_tools(const json& body) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return nullptr;
  if (!it->is_array()) throw invalid_request("'tools' must be an array", "tools");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string p = fmt::format("tools[{}]", i);
    if (!t.is_object() || !is_string_value(t, "type", "function") || !t.contains("function") || !t["function"].is_object() ||
        !t["function"].contains("name") || !t["function"]["name"].is_string()) {
      throw invalid_request(fmt::format("'{}' must be {{\"type\": \"function\", \"function\": {{\"name\": ..., "
                                        "\"parameters\": ...}}}}", p), p);
    }
  }
  return it->empty() ? json(nullptr) : *it;
}

json normalize_anthropic_messages(const json& body) {
  json out = json::array();
  if (auto s = body.find("system"); s != body.end() && !s->is_null()) {
    out.push_back({{"role", "system"}, {"content", anthropic_text(*s, "system")}});
  }
  auto it = body.find("messages");
  if (it == body.end()) throw invalid_request("'messages' is required", "messages");
  if (!it->is_array()) throw invalid_request("'messages' must be an array", "messages");
  if (it->empty()) throw invalid_request("'messages' must contain at least one message", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string p = fmt::format("messages[{}]", i);
    if (!m.is_object()) throw invalid_request(fmt::format("'{}' must be an object", p), p);
    const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    if (role != "user" && role != "assistant") {
      throw invalid_request(fmt::format("'{}.role' must be 'user' or 'assistant'", p), p + ".role");
    }
    if (!m.contains("content")) throw invalid_request(fmt::format("'{}.content' is required", p), p + ".content");
    const json& content = m["content"];
    if (content.is_string()) {
      out.push_back({{"role", role}, {"content", content}});
      continue;
    }
    if (!content.is_array()) {
      throw invalid_request(fmt::format("'{}.content' must be a string or an array of blocks", p), p + ".content");
    }
    std::string text;
    json tool_calls = json::array();
    for (size_t j = 0; j < content.size(); ++j) {
      const json& b = content[j];
      const std::string q = fmt::format("{}.content[{}]", p, j);
      if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) {
        throw invalid_request(fmt::format("'{}' must be an object with a string 'type'", q), q);
      }
      const std::string type = b["type"].get<std::string>();
      if (type == "text") {
        if (!b.contains("text") || !b["text"].is_string()) {
          throw invalid_request(fmt::format("'{}.text' must be a string", q), q + ".text");
        }
        text += b["text"].get<std::string>();
      } else if (type == "thinking" || type == "redacted_thinking") {
        // earlier reasoning is not replayed into the prompt
      } else if (type == "tool_use" && role == "assistant") {
        if (!b.contains("name") || !b["name"].is_string()) {
          throw invalid_request(fmt::format("'{}.name' must be a string", q), q + ".name");
        }
        tool_calls.push_back({{"id", optional_string(b, "id", "", q + ".id")},
                              {"type", "function"},
                              {"function", {{"name", b["name"]}, {"arguments", b.value("input", json::object())}}}});
      } else if (type == "tool_result" && role == "user") {
        if (!text.empty()) {
          out.push_back({{"role", "user"}, {"content", text}});
          text.clear();
        }
        std::string result;
        if (b.contains("content")) result = anthropic_text(b["content"], q + ".content");
        out.push_back({{"role", "tool"},
                       {"tool_call_id", optional_string(b, "tool_use_id", "", q + ".tool_use_id")},
                       {"content", result}});
      } else {
        throw invalid_request(fmt::format("'{}': blocks of type '{}' are not supported here", q, type), q + ".type");
      }
    }
    if (!tool_calls.empty()) {
      out.push_back({{"role", role}, {"content", text}, {"tool_calls", tool_calls}});
    } else if (!text.empty() || content.empty()) {
      out.push_back({{"role", role}, {"content", text}});
    }
  }
  return out;
}

json read_anthropic_tools(const json& body) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return nullptr;
  if (!it->is_array()) throw invalid_request("'tools' must be an array", "tools");
  json out = json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string p = fmt::format("tools[{}]", i);
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
      throw invalid_request(fmt::format("'{}' must be an object with a string 'name'", p), p);
    }
    json f = {{"name", t["name"]}, {"parameters", t.value("input_schema", json::object())}};
    if (t.contains("description")) f["description"] = t["description"];
    out.push_back({{"type", "function"}, {"function", f}});
  }
  return out.empty() ? json(nullptr) : out;
}

}  // namespace saker::server
