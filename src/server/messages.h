#pragma once
// Request messages in both dialects, normalized for the chat template: [{role, content (string),
// tool_calls?, tool_call_id?, name?}] with roles system / user / assistant / tool. Throws ApiError naming
// the offending field (messages[2].content[0].type).
#include <nlohmann/json.hpp>

namespace saker::server {

// OpenAI chat `messages` (content as a string or text parts; developer -> system).
nlohmann::json normalize_openai_messages(const nlohmann::json& body);
// OpenAI `tools` ([{type: function, function: {name, description, parameters}}]) checked; null when absent.
nlohmann::json read_openai_tools(const nlohmann::json& body);

// Anthropic `system` + `messages` (text, tool_use, tool_result blocks).
nlohmann::json normalize_anthropic_messages(const nlohmann::json& body);
// Anthropic `tools` ([{name, description, input_schema}]) in OpenAI's form; null when absent.
nlohmann::json read_anthropic_tools(const nlohmann::json& body);

}  // namespace saker::server
