#pragma once
// http::ServerOptions: where the HTTP server listens and the bounds it holds every connection to. Every limit
// exists so that a slow, idle or hostile client costs a bounded amount of memory, time and file descriptors,
// and cannot delay the answers of other clients.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace saker::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0: any free port (Server::port() tells which)
  int listen_backlog = 1024;  // connections the kernel queues before accept

  int io_threads = 0;      // threads that run every socket (event-driven); 0: min(4, cores)
  int worker_threads = 16; // threads that run request handlers (they may block on a generation)

  int max_connections = 2048;            // open connections in all; past it: 503 and close
  int max_connections_per_client = 256;  // open connections from one remote address; past it: 503 and close

  // Deadlines. The header deadline covers the whole header from its first byte (not one read), the body
  // deadline the whole body from the end of the header; a fresh connection must send its header within the
  // header deadline too.
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{30'000};   // keep-alive: between the end of an answer and the next request
  std::chrono::milliseconds write_timeout{30'000};  // a reader that takes longer for one write is dropped
  std::chrono::milliseconds linger_timeout{1'000};  // after a final answer, how long unread input is drained
  // stop(): after the grace, how long the handlers still running get to answer what at_deadline ended (the
  // server's 503 or a stream's error event) before every connection is cut.
  std::chrono::milliseconds stop_answer_timeout{500};

  size_t max_header_bytes = 64 << 10;      // request line + fields; past it: 431
  uint64_t max_body_bytes = 64ull << 20;   // counted while reading, chunked bodies included; past it: 413
  size_t stream_queue_bytes = 1 << 20;     // a streaming answer's bytes queued for a slow reader before write() waits
};

}  // namespace saker::http
