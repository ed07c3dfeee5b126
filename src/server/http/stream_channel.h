#pragma once
// StreamChannel: the bounded queue between a handler that streams an answer (on a worker thread) and its
// connection (on the connection's strand). write() hands bytes to the connection and blocks while more than
// `capacity` bytes wait for the socket, so a slow reader holds back its own handler and nothing else; it
// gives up when the client is gone or when the socket has not drained within the write deadline.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

namespace saker::http {

class StreamChannel {
 public:
  // What the connection provides. Both are called on the worker thread and must only post to the strand.
  struct Sink {
    std::function<void(std::string)> send;  // queue these bytes for the socket
    std::function<void()> abort;            // the reader did not drain in time: drop the connection
  };

  StreamChannel(size_t capacity, std::chrono::milliseconds write_timeout, Sink sink);

  // Worker side. False once the channel is closed (client gone, write deadline passed, connection ended).
  bool write(std::string bytes);

  // Connection side.
  void sent(size_t n);  // n queued bytes reached the socket
  void close();         // write() fails from now on; drops the sink (and what it holds)
  bool closed() const;

 private:
  const size_t capacity_;
  const std::chrono::milliseconds write_timeout_;
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  size_t queued_ = 0;
  bool closed_ = false;
  Sink sink_;
};

}  // namespace saker::http
