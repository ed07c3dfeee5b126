#include "server/browser_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "server/api_error.h"

namespace saker::server {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "host" of "host", "host:port", "[v6]" or "[v6]:port"; "" when the port is not a number.
std::string_view host_part(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return {};
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !all_digits(rest.substr(1)))) return {};
    return host.substr(0, close + 1);
  }
  const size_t colon = host.rfind(':');
  if (colon == std::string_view::npos) return host;
  if (!all_digits(host.substr(colon + 1))) return {};
  return host.substr(0, colon);
}

ApiError forbidden(std::string message, std::string param) {
  ApiError e;
  e.status = 403;
  e.type = "invalid_request_error";
  e.code = "forbidden";
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

// The media type of a Content-Type value, without parameters ("application/json; charset=utf-8").
std::string media_type(std::string_view value) {
  const size_t semi = value.find(';');
  std::string_view type = trim(value.substr(0, semi));
  std::string out(type);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

BrowserGuard::BrowserGuard(const ServerOptions& options)
    : has_api_key_(!options.api_key.empty()),
      loopback_bind_(is_loopback_address(options.host)),
      bound_host_(options.host) {
  for (std::string o : options.cors_origins) {
    while (!o.empty() && o.back() == '/') o.pop_back();
    if (!o.empty()) origins_.push_back(std::move(o));
  }
}

bool BrowserGuard::is_loopback_address(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1" || address.rfind("::ffff:127.", 0) == 0;
}

bool BrowserGuard::is_loopback_host(std::string_view host) {
  const std::string_view name = host_part(trim(host));
  if (http::iequals(name, "localhost") || name == "[::1]") return true;
  // 127.0.0.0/8 in dotted form.
  if (name.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : name) {
    if (c == '.') ++dots;
    else if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return dots == 3;
}

bool BrowserGuard::listed(std::string_view origin) const {
  return std::any_of(origins_.begin(), origins_.end(), [&](const std::string& o) { return http::iequals(o, origin); });
}

BrowserGuard::Admission BrowserGuard::admit(const http::Request& request, http::Response& response) const {
  if (!has_api_key_ && loopback_bind_ && request.has_header("Host")) {
    const std::string host = request.header("Host");
    if (!is_loopback_host(host)) {
      throw forbidden(fmt::format("the Host header '{}' does not name this machine: a server bound to {} answers "
                                  "only Host: localhost, 127.0.0.1 or [::1] (with any port) unless it runs with "
                                  "--api-key",
                                  host.substr(0, 128), bound_host_),
                      "Host");
    }
  }
  const bool has_origin = request.has_header("Origin");
  const std::string origin = std::string(trim(request.header("Origin")));
  const bool allowed_origin = has_origin && listed(origin);
  if (has_origin && !allowed_origin && !has_api_key_) {
    throw forbidden(fmt::format("requests from the web origin '{}' are not allowed: start the server with "
                                "--cors-origin {} to let its pages call it",
                                origin.substr(0, 128), origin.empty() ? "ORIGIN" : origin.substr(0, 128)),
                    "Origin");
  }
  if (allowed_origin) {
    response.set_header("Access-Control-Allow-Origin", origin);
    response.set_header("Vary", "Origin");
    if (request.method == "OPTIONS") {
      // The preflight carries no credentials: it is answered before the API key is checked.
      const std::string asked = request.header("Access-Control-Request-Headers");
      response.status = 204;
      response.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      response.set_header("Access-Control-Allow-Headers",
                          asked.empty() ? "Authorization, Content-Type, x-api-key, anthropic-version" : asked);
      response.set_header("Access-Control-Max-Age", "600");
      return Admission::kAnswered;
    }
  }
  if (!has_api_key_ && request.method == "POST") {
    const std::string type = request.header("Content-Type");
    if (media_type(type) != "application/json") {
      ApiError e;
      e.status = 415;
      e.type = "invalid_request_error";
      e.code = "unsupported_media_type";
      e.param = "Content-Type";
      e.message = type.empty()
                      ? "the request has no Content-Type header: send 'Content-Type: application/json'"
                      : fmt::format("the Content-Type header is '{}': send 'Content-Type: application/json'",
                                    type.substr(0, 128));
      throw e;
    }
  }
  return Admission::kServe;
}

}  // namespace saker::server
