#pragma once
// http::Server: saker's HTTP/1.1 server. A few I/O threads (Boost.Asio) hold every connection, event-driven,
// so thousands of idle, slow or streaming clients cost memory and file descriptors but no threads; request
// handlers run on a separate pool of worker threads because they block. Every connection is bounded
// (ServerOptions): header, body, idle and write deadlines, header and body sizes, connections in all and per
// client address (503 past them).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "core/status.h"
#include "server/http/handler.h"
#include "server/http/options.h"

namespace saker::http {

class Server {
 public:
  // `handler` answers every complete request (usually a Router's dispatch); `refuse` writes the body of the
  // answers the server gives itself (malformed request 400, 413, 431, connection limits 503, a handler's
  // exception 500).
  Server(ServerOptions options, RequestHandler handler, ErrorResponder refuse = plain_error);
  ~Server();  // stop(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the threads. The error names the address (in use, not this machine's).
  Status start();
  int port() const;  // the bound port (the chosen one when options.port was 0)

  // Stops accepting and closes idle connections at once; running handlers may finish and their answers go
  // out until `grace` has passed; then `at_deadline` runs (end what handlers wait on, so that they answer
  // that), the handlers still running get options.stop_answer_timeout to answer, every connection left closes
  // (its ClientGone set), the workers are joined and the I/O threads end. A client that trickles bytes or
  // never reads cannot delay it; a handler that ignores both at_deadline and its ClientGone can.
  void stop(std::chrono::milliseconds grace, const std::function<void()>& at_deadline = {});

  size_t open_connections() const;  // connections holding a slot (refused ones excluded)

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace saker::http
