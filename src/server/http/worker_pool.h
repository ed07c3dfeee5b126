#pragma once
// WorkerPool: the threads that run request handlers, apart from the I/O threads, because handlers block
// (they wait on generation streams). Jobs run in the order posted; stop() lets the queued and running jobs
// finish (the server makes them quick first: their clients are gone by then) and joins the threads.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace saker::http {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(std::function<void()> job);
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace saker::http
