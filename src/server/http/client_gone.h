#pragma once
// ClientGone: set by the HTTP server when the peer of a request closes or resets its connection while the
// request's handler still runs (the server keeps a read pending on the socket for this), when a write to it
// fails, or when the server stops. Handlers poll it or register callbacks, to cancel work nobody waits for.
#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace saker::http {

class ClientGone {
 public:
  bool is_set() const { return gone_.load(std::memory_order_acquire); }
  const std::atomic<bool>& flag() const { return gone_; }

  // Runs `callback` once the client is gone, at once when it already is. Callbacks run on the server's I/O
  // thread (or the thread that stops the server): they must be short and must not block (set a flag, cancel).
  void on_set(std::function<void()> callback);

  // The server's side: sets the flag and runs the callbacks (only the first call does anything).
  void set();

 private:
  std::atomic<bool> gone_{false};
  std::mutex mutex_;
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace saker::http
