#include "parallel/local_communicator.h"

#include <algorithm>

namespace saker {

namespace {

Status aborted_error(const char* what) {
  return Status(StatusCode::kInternal, std::string(what) + ": abandoned because another rank failed");
}

}  // namespace

class LocalGroup::Rank final : public Communicator {
 public:
  Rank(LocalGroup& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_.n_ranks_; }

  Status all_reduce_sum(float* data, int64_t n) override {
    const int N = group_.n_ranks_;
    if (N == 1) return {};
    group_.sources_[rank_] = data;
    if (!group_.wait_all()) return aborted_error("all_reduce_sum");
    // This rank's slice of the elements, each summed in rank order: the same expression whichever rank runs it.
    const int64_t begin = n * rank_ / N, end = n * (rank_ + 1) / N;
    reduced_.resize(static_cast<size_t>(end - begin));
    const std::vector<const float*>& src = group_.sources_;
    for (int64_t i = begin; i < end; ++i) {
      float s = src[0][i];
      for (int k = 1; k < N; ++k) s += src[k][i];
      reduced_[i - begin] = s;
    }
    // After this barrier nobody reads the sources again, and every rank's slice is final.
    if (!group_.wait_all()) return aborted_error("all_reduce_sum");
    for (int k = 0; k < N; ++k) {
      const Rank& r = *group_.ranks_[k];
      std::copy(r.reduced_.begin(), r.reduced_.end(), data + n * k / N);
    }
    // A rank resizes its slice again only after the next collective's first barrier, which every rank reaches
    // after this copy: no third barrier is needed.
    return {};
  }

  Status all_gather(const float* send, int64_t n, float* recv) override {
    const int N = group_.n_ranks_;
    group_.sources_[rank_] = send;
    if (!group_.wait_all()) return aborted_error("all_gather");
    for (int k = 0; k < N; ++k) std::copy_n(group_.sources_[k], n, recv + k * n);
    // Every rank has read every send buffer before any rank returns (and may overwrite its own).
    if (!group_.wait_all()) return aborted_error("all_gather");
    return {};
  }

  Status barrier() override {
    if (!group_.wait_all()) return aborted_error("barrier");
    return {};
  }

 private:
  LocalGroup& group_;
  int rank_;
  std::vector<float> reduced_;  // [end - begin] this rank's slice of the current all_reduce
};

LocalGroup::LocalGroup(int n_ranks) : n_ranks_(std::max(1, n_ranks)), sources_(n_ranks_, nullptr) {
  for (int r = 0; r < n_ranks_; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

LocalGroup::~LocalGroup() = default;

Communicator& LocalGroup::rank(int r) { return *ranks_[r]; }

bool LocalGroup::wait_all() {
  std::unique_lock lock(mutex_);
  if (aborted_) return false;
  const uint64_t generation = generation_;
  if (++arrived_ == n_ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return true;
  }
  cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
  return generation_ != generation;
}

void LocalGroup::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

void LocalGroup::reset() {
  std::lock_guard lock(mutex_);
  aborted_ = false;
  arrived_ = 0;
}

}  // namespace saker
