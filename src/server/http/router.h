#pragma once
// http::Router: exact paths and prefix routes with one trailing path parameter ("/v1/models/{id}": the rest
// of the path, slashes included, non-empty). A path that matches with another method answers 405 (with an
// Allow header), an unknown path 404; both through the fallback ErrorResponder, whose body shape is the
// caller's.
#include <string>
#include <vector>

#include "server/http/handler.h"

namespace saker::http {

class Router {
 public:
  explicit Router(ErrorResponder fallback = plain_error) : fallback_(std::move(fallback)) {}

  // `pattern`: an exact path, or a prefix ending in "{name}" for the one parameter.
  void add(std::string method, std::string pattern, Handler handler);
  void get(std::string pattern, Handler handler) { add("GET", std::move(pattern), std::move(handler)); }
  void post(std::string pattern, Handler handler) { add("POST", std::move(pattern), std::move(handler)); }

  // Runs the matching handler (setting request.path_param), or the fallback with 404 / 405.
  void dispatch(Request& request, Response& response) const;

 private:
  struct Route {
    std::string method;
    std::string path;  // exact path, or the prefix before "{name}"
    bool prefix = false;
    Handler handler;
  };
  // Whether `route` matches `path`; sets *param for a prefix route.
  static bool matches(const Route& route, const std::string& path, std::string* param);

  std::vector<Route> routes_;
  ErrorResponder fallback_;
};

}  // namespace saker::http
