#pragma once
// http::Request: one parsed HTTP/1.1 request as a handler sees it. The body is complete (the server reads it
// within its limits before the handler runs).
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace saker::http {

class Request {
 public:
  std::string method;          // "GET", "POST", ... as sent (methods are case-sensitive)
  std::string target;          // the request target as sent: "/v1/models/x?a=1"
  std::string path;            // the target's path, percent-decoded: "/v1/models/x"
  std::string path_param;      // the router's one path parameter ("x" for "/v1/models/{id}"), "" when none
  std::multimap<std::string, std::string> query;  // decoded query parameters, in the order sent per name
  std::vector<std::pair<std::string, std::string>> headers;  // as sent, duplicates kept
  std::string body;
  std::string remote_address;  // the peer's IP address
  int version = 11;            // 10: HTTP/1.0, 11: HTTP/1.1

  // The first value of a header (names compare case-insensitively), "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // The first value of a query parameter, "" when absent.
  std::string query_param(const std::string& name) const;

  // Splits `target` into path and query (both decoded). False when the target is not a path
  // ("/..." or an absolute URL, or "*").
  bool set_target(std::string raw_target);
};

// Decodes %XX escapes (and '+' as a space when `plus_is_space`); invalid escapes stay as written.
std::string percent_decode(std::string_view text, bool plus_is_space);
// ASCII case-insensitive equality (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

}  // namespace saker::http
