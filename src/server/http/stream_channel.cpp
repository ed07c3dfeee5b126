#include "server/http/stream_channel.h"

namespace saker::http {

StreamChannel::StreamChannel(size_t capacity, std::chrono::milliseconds write_timeout, Sink sink)
    : capacity_(capacity), write_timeout_(write_timeout), sink_(std::move(sink)) {}

bool StreamChannel::write(std::string bytes) {
  std::function<void(std::string)> send;
  std::function<void()> abort;
  {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + write_timeout_;
    // One write may pass the bound by its own size: a chunk larger than the queue is not refused.
    const bool room = drained_.wait_until(lock, deadline, [&] { return closed_ || queued_ < capacity_; });
    if (closed_) return false;
    if (!room) {
      closed_ = true;
      abort = std::move(sink_.abort);
      sink_ = {};
    } else {
      queued_ += bytes.size();
      send = sink_.send;
    }
  }
  if (abort) {
    abort();
    return false;
  }
  send(std::move(bytes));
  return true;
}

void StreamChannel::sent(size_t n) {
  {
    std::lock_guard lock(mutex_);
    queued_ = n > queued_ ? 0 : queued_ - n;
  }
  drained_.notify_all();
}

void StreamChannel::close() {
  Sink dropped;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    dropped = std::move(sink_);
    sink_ = {};
  }
  drained_.notify_all();
}

bool StreamChannel::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

}  // namespace saker::http
