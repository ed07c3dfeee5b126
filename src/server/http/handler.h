#pragma once
// The function types the HTTP layer calls. Handlers run on the server's worker threads and may block.
#include <functional>
#include <string>

#include "server/http/request.h"
#include "server/http/response.h"

namespace saker::http {

// A route's handler.
using Handler = std::function<void(const Request&, Response&)>;

// The server's entry point: every complete request (the router fills in Request::path_param).
using RequestHandler = std::function<void(Request&, Response&)>;

// Answers a request the server or the router refuses: `status` with a message that names what was wrong.
// The caller chooses the body's shape (its APIs' error JSON). `request` holds what was parsed before the
// refusal (method, target and path may be empty).
using ErrorResponder = std::function<void(const Request& request, int status, const std::string& message, Response&)>;

// A plain-text body: "<message>\n".
void plain_error(const Request& request, int status, const std::string& message, Response& response);

}  // namespace saker::http
