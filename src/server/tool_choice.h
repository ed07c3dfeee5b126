#pragma once
// tool_choice in both dialects, checked against the request's tools. saker has no constrained decoding, so it
// cannot make the model call a tool: "none" hides the tools from the template (and turns tool-call parsing
// off), "auto" (the default) lets the model choose, and the choices that force a call (OpenAI "required" or a
// named function, Anthropic "any" or "tool") are refused with a 400 naming tool_choice instead of being
// accepted and then not honoured. A malformed choice, or one naming a tool the request does not have, is a
// 400 naming the exact field.
#include <nlohmann/json.hpp>

namespace saker::server {

// tools: the request's tools in OpenAI's form ([{type: function, function: {name, ...}}], or null). Returns
// the tools the template and the output parser see. Throws ApiError.
nlohmann::json apply_openai_tool_choice(const nlohmann::json& body, nlohmann::json tools);
nlohmann::json apply_anthropic_tool_choice(const nlohmann::json& body, nlohmann::json tools);

}  // namespace saker::server
