#pragma once
// StagedCudaCommunicator: a GPU rank's collectives through host memory: the rank's stream is waited for, its
// buffer copied to the host, reduced there by a LocalGroup rank (every element summed in rank order, the same
// bits on every rank), and copied back. Slow, and it cannot be captured in a CUDA graph; what it allows is a
// tensor-parallel model whose ranks share one GPU (no NCCL for that: it refuses two ranks on one device), so
// the sharded CUDA forward can be checked on a machine with a single GPU.
#include <vector>

#include "parallel/communicator.h"

namespace saker {

class StagedCudaCommunicator final : public DeviceCommunicator {
 public:
  // host: this rank's communicator of a LocalGroup (its ranks on threads of this process).
  explicit StagedCudaCommunicator(Communicator& host) : host_(host) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  Status all_reduce_sum(float* data, int64_t n) override;
  Status all_gather(const float* send, int64_t n, float* recv) override;
  Status barrier() override;
  void bind_stream(CUstream_st* stream) override { stream_ = stream; }
  bool capturable() const override { return false; }

 private:
  Communicator& host_;
  CUstream_st* stream_ = nullptr;
  std::vector<float> send_, recv_;  // host staging
};

}  // namespace saker
