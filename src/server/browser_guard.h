#pragma once
// BrowserGuard: what a web page may do with the server. Any page a user opens can send "simple" cross-origin
// requests (a text/plain POST needs no preflight) to a server on the user's machine, and a DNS-rebinding page
// (its own host name re-pointed at 127.0.0.1) can even read the answers. Without an API key the server thus
// accepts only requests a page cannot make without the server's consent:
//   - on a loopback bind the Host must be a loopback name (localhost, 127.0.0.1, [::1], any port): 403;
//   - an Origin not given with --cors-origin is refused: 403;
//   - a POST body must be Content-Type: application/json (which a page can send cross-origin only after a
//     preflight that the server answers for listed origins only): 415.
// With an API key a page cannot authenticate unless it holds the key, so none of these apply. Either way a
// listed origin gets CORS headers on every answer and its preflight (OPTIONS) is answered here.
#include <string>
#include <vector>

#include "server/http/request.h"
#include "server/http/response.h"
#include "server/server.h"

namespace saker::server {

class BrowserGuard {
 public:
  explicit BrowserGuard(const ServerOptions& options);

  enum class Admission {
    kServe,     // go on (CORS headers are set on `response` for a listed origin)
    kAnswered,  // a preflight, answered in `response`
  };
  // Throws ApiError (403 / 415, the message naming the header) to refuse.
  Admission admit(const http::Request& request, http::Response& response) const;

  // True for an address the server binds only on this machine (127.0.0.0/8, ::1).
  static bool is_loopback_address(const std::string& address);
  // True when a Host header value names this machine's loopback interface ("localhost:8080", "[::1]").
  static bool is_loopback_host(std::string_view host);

 private:
  bool listed(std::string_view origin) const;

  bool has_api_key_;
  bool loopback_bind_;
  std::string bound_host_;
  std::vector<std::string> origins_;  // as given, without a trailing '/'
};

}  // namespace saker::server
