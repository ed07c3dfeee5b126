#pragma once
// NcclCommunicator: the Communicator of one GPU rank through NCCL (ncclAllReduce / ncclAllGather on the rank's
// CUDA stream), for the tensor-parallel model on N GPUs of one host (create_group, as TensorParallelModel uses
// it) or, with the same code, on more ranks across hosts (create with a shared unique id). Built only with the
// CUDA backend when NCCL is found (target saker_parallel_nccl); not run by the CPU test suite.
//
// Target machines: NVLink SHARP / multicast (NVLS) stays off. create() sets NCCL_NVLS_ENABLE=0 in the
// environment when it is unset (before NCCL reads it) and warns when it is set to anything else; launchers
// should export NCCL_NVLS_ENABLE=0 as well. With NVLS off, NCCL's ring and tree algorithms reduce each element
// once and broadcast the result, so every rank ends with the same bits (Communicator's promise).
//
// Buffers are device pointers on the rank's GPU; the collectives are enqueued on the stream and return before
// they finish, as the rank's kernels do (barrier() is the one call that waits for the stream).
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "parallel/communicator.h"

struct ncclComm;
struct CUstream_st;

namespace saker {

class NcclCommunicator final : public DeviceCommunicator {
 public:
  // NCCL's unique id (ncclUniqueId, 128 bytes): rank 0 makes it, the launcher hands it to every rank.
  using UniqueId = std::array<char, 128>;
  static Result<UniqueId> make_unique_id();
  // Joins the group of `size` ranks as `rank` on CUDA device `cuda_device`, enqueuing on `stream` (ranks in
  // other processes or on other hosts; every rank calls it at once).
  static Result<std::unique_ptr<NcclCommunicator>> create(const UniqueId& id, int rank, int size, int cuda_device,
                                                          CUstream_st* stream);
  // Every rank of a group in this process at once (ncclCommInitAll): rank r on devices[r], which must be
  // distinct. Streams are bound afterwards (bind_stream), once each rank's backend has made its own.
  static Result<std::vector<std::unique_ptr<NcclCommunicator>>> create_group(const std::vector<int>& devices);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status all_reduce_sum(float* data, int64_t n) override;
  Status all_gather(const float* send, int64_t n, float* recv) override;
  Status barrier() override;
  void bind_stream(CUstream_st* stream) override { stream_ = stream; }
  bool capturable() const override { return true; }

 private:
  NcclCommunicator() = default;

  ncclComm* comm_ = nullptr;
  CUstream_st* stream_ = nullptr;
  float* scratch_ = nullptr;  // [1] device: barrier()'s all-reduce
  int rank_ = 0, size_ = 1, device_ = 0;
};

}  // namespace saker
