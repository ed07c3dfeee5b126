#include "server/tool_choice.h"

#include <fmt/format.h>

#include <string>

#include "server/api_error.h"

namespace saker::server {

using nlohmann::json;

namespace {

// "a, b, c" of the tools' names, for messages.
std::string tool_names(const json& tools) {
  std::string out;
  if (!tools.is_array()) return out;
  for (const json& t : tools) {
    const json& f = t.contains("function") ? t["function"] : t;
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) continue;
    if (!out.empty()) out += ", ";
    out += f["name"].get<std::string>();
  }
  return out;
}

bool has_tool(const json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const json& t : tools) {
    const json& f = t.contains("function") ? t["function"] : t;
    if (f.is_object() && f.contains("name") && f["name"].is_string() && f["name"].get<std::string>() == name) {
      return true;
    }
  }
  return false;
}

// A named tool must be one of the request's.
void check_named(const json& tools, const std::string& name, const std::string& param) {
  if (!tools.is_array() || tools.empty()) {
    throw invalid_request(fmt::format("'{}' names the tool '{}' but the request has no 'tools'", param, name), param);
  }
  if (!has_tool(tools, name)) {
    throw invalid_request(fmt::format("'{}' names the tool '{}', which is not among the request's tools ({})", param,
                                      name, tool_names(tools)),
                          param);
  }
}

[[noreturn]] void cannot_force(const std::string& what, const std::string& instead) {
  throw invalid_request(fmt::format("'tool_choice' {} asks for a forced tool call, which this server cannot "
                                    "guarantee (no constrained decoding yet); send {} or leave tool_choice out",
                                    what, instead),
                        "tool_choice", "unsupported_parameter");
}

}  // namespace

json apply_openai_tool_choice(const json& body, json tools) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return tools;
  const json& tc = *it;
  if (tc.is_string()) {
    const std::string choice = tc.get<std::string>();
    if (choice == "none") return nullptr;
    if (choice == "auto") return tools;
    if (choice == "required") {
      if (!tools.is_array() || tools.empty()) {
        throw invalid_request("'tool_choice' is 'required' but the request has no 'tools'", "tool_choice");
      }
      cannot_force("'required'", "'auto'");
    }
    throw invalid_request(fmt::format("'tool_choice' must be 'none', 'auto', 'required' or {{\"type\": \"function\", "
                                      "\"function\": {{\"name\": ...}}}}; got '{}'", choice),
                          "tool_choice");
  }
  if (!tc.is_object()) {
    throw invalid_request("'tool_choice' must be a string ('none', 'auto', 'required') or an object "
                          "({\"type\": \"function\", \"function\": {\"name\": ...}})",
                          "tool_choice");
  }
  auto type = tc.find("type");
  if (type == tc.end() || !type->is_string() || type->get<std::string>() != "function") {
    throw invalid_request("'tool_choice.type' must be 'function'", "tool_choice.type");
  }
  auto function = tc.find("function");
  if (function == tc.end() || !function->is_object()) {
    throw invalid_request("'tool_choice.function' must be an object with a string 'name'", "tool_choice.function");
  }
  auto name = function->find("name");
  if (name == function->end() || !name->is_string()) {
    throw invalid_request("'tool_choice.function.name' must be a string", "tool_choice.function.name");
  }
  check_named(tools, name->get<std::string>(), "tool_choice.function.name");
  cannot_force(fmt::format("naming the function '{}'", name->get<std::string>()), "'auto'");
}

json apply_anthropic_tool_choice(const json& body, json tools) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return tools;
  const json& tc = *it;
  if (!tc.is_object()) {
    throw invalid_request("'tool_choice' must be an object ({\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"})",
                          "tool_choice");
  }
  if (auto d = tc.find("disable_parallel_tool_use"); d != tc.end() && !d->is_null() && !d->is_boolean()) {
    throw invalid_request("'tool_choice.disable_parallel_tool_use' must be a boolean",
                          "tool_choice.disable_parallel_tool_use");
  }
  auto type = tc.find("type");
  if (type == tc.end() || !type->is_string()) {
    throw invalid_request("'tool_choice.type' must be one of 'auto', 'any', 'tool', 'none'", "tool_choice.type");
  }
  const std::string choice = type->get<std::string>();
  if (choice == "none") return nullptr;
  if (choice == "auto") return tools;
  if (choice == "any") {
    if (!tools.is_array() || tools.empty()) {
      throw invalid_request("'tool_choice' is 'any' but the request has no 'tools'", "tool_choice");
    }
    cannot_force("{\"type\": \"any\"}", "{\"type\": \"auto\"}");
  }
  if (choice == "tool") {
    auto name = tc.find("name");
    if (name == tc.end() || !name->is_string()) {
      throw invalid_request("'tool_choice.name' must be a string (the tool to call)", "tool_choice.name");
    }
    check_named(tools, name->get<std::string>(), "tool_choice.name");
    cannot_force(fmt::format("naming the tool '{}'", name->get<std::string>()), "{\"type\": \"auto\"}");
  }
  throw invalid_request(
      fmt::format("'tool_choice.type' must be one of 'auto', 'any', 'tool', 'none'; got '{}'", choice),
      "tool_choice.type");
}

}  // namespace saker::server
