#pragma once
// LocalGroup: N ranks of one process, one thread each, sharing memory. Its communicators (one per rank) meet at
// a barrier: a collective publishes every rank's buffer, each rank then reduces its own slice of the elements
// into a shared result (every element summed in rank order 0, 1, ..., N-1 by the same code, so the bits do not
// depend on which rank summed it), and after a second barrier every rank copies the whole result. Identical
// bits on every rank, whatever the thread timing.
//
// A rank that fails between collectives calls abort(): every rank waiting in (or later entering) a collective
// gets an error instead of waiting forever; reset() readies the group for the next forward once every rank
// has returned.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "parallel/communicator.h"

namespace saker {

class LocalGroup {
 public:
  explicit LocalGroup(int n_ranks);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const { return n_ranks_; }
  // Rank r's communicator, owned by the group; use it from one thread at a time.
  Communicator& rank(int r);

  void abort();
  void reset();  // only while no rank is inside a collective

 private:
  class Rank;
  friend class Rank;
  // Waits until all n_ranks_ ranks arrived; false when the group was aborted.
  bool wait_all();

  int n_ranks_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<const float*> sources_;  // [n_ranks] each rank's buffer in the current collective
  std::vector<float> result_;          // the reduced elements of the current all_reduce

  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace saker
