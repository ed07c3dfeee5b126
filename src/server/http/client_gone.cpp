#include "server/http/client_gone.h"

namespace saker::http {

void ClientGone::on_set(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (!gone_.load(std::memory_order_acquire)) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void ClientGone::set() {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    if (gone_.exchange(true, std::memory_order_acq_rel)) return;
    callbacks.swap(callbacks_);
  }
  for (auto& c : callbacks) c();
}

}  // namespace saker::http
