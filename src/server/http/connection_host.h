#pragma once
// ConnectionHost: what a Connection needs from the server that accepted it. Internal to the HTTP layer.
#include <functional>
#include <string>

#include "server/http/options.h"
#include "server/http/request.h"
#include "server/http/response.h"

namespace saker::http {

class Connection;

class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;

  virtual const ServerOptions& options() const = 0;
  // Runs `job` (a request's handler) on a worker thread.
  virtual void run_handler(std::function<void()> job) = 0;
  // The server's request handler and error responder.
  virtual void handle(Request& request, Response& response) = 0;
  virtual void refuse(const Request& request, int status, const std::string& message, Response& response) = 0;
  // True once the server stops: answers end their connections.
  virtual bool stopping() const = 0;
  // The connection's socket is closed: its slot (and its client address's) is free.
  virtual void connection_closed(Connection* connection) = 0;
};

}  // namespace saker::http
