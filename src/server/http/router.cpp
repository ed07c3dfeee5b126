#include "server/http/router.h"

namespace saker::http {

void plain_error(const Request&, int status, const std::string& message, Response& response) {
  response.status = status;
  response.set_content(message + "\n", "text/plain; charset=utf-8");
}

void Router::add(std::string method, std::string pattern, Handler handler) {
  Route r;
  r.method = std::move(method);
  r.handler = std::move(handler);
  const size_t brace = pattern.find('{');
  if (brace != std::string::npos && pattern.ends_with('}')) {
    r.prefix = true;
    pattern.resize(brace);
  }
  r.path = std::move(pattern);
  routes_.push_back(std::move(r));
}

bool Router::matches(const Route& route, const std::string& path, std::string* param) {
  if (!route.prefix) return path == route.path;
  if (path.size() <= route.path.size() || path.compare(0, route.path.size(), route.path) != 0) return false;
  *param = path.substr(route.path.size());
  return true;
}

void Router::dispatch(Request& request, Response& response) const {
  // Exact routes win over prefix routes, whatever the order they were added in.
  std::string allowed;
  for (bool prefix_pass : {false, true}) {
    for (const Route& r : routes_) {
      if (r.prefix != prefix_pass) continue;
      std::string param;
      if (!matches(r, request.path, &param)) continue;
      if (r.method == request.method) {
        request.path_param = std::move(param);
        r.handler(request, response);
        return;
      }
      if (allowed.find(r.method) == std::string::npos) allowed += (allowed.empty() ? "" : ", ") + r.method;
    }
  }
  if (!allowed.empty()) {
    fallback_(request, 405,
              "method " + request.method + " is not allowed on " + request.path + " (allowed: " + allowed + ")",
              response);
    response.set_header("Allow", allowed);
    return;
  }
  fallback_(request, 404, "no route " + request.method + " " + request.path, response);
}

}  // namespace saker::http
