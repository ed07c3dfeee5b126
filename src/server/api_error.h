#pragma once
// ApiError: a request the server refuses, with the HTTP status and the fields both API dialects report.
// Handlers throw it; the route wrapper renders it as OpenAI's {"error": {message, type, param, code}} or
// Anthropic's {"type": "error", "error": {type, message}} and the server keeps serving.
#include <string>

#include <nlohmann/json.hpp>

namespace saker::server {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";  // OpenAI error type
  std::string message;
  std::string param;  // the offending field ("messages[0].content"), "" when none
  std::string code;   // OpenAI error code ("model_not_found", "context_length_exceeded"), "" when none
};

ApiError invalid_request(std::string message, std::string param = "", std::string code = "");

nlohmann::json openai_error_body(const ApiError& e);
// Anthropic's error types follow the HTTP status (invalid_request_error, authentication_error, not_found_error,
// request_too_large, overloaded_error, api_error).
nlohmann::json anthropic_error_body(const ApiError& e);

}  // namespace saker::server
