#pragma once
// Communicator: the collectives that tie the ranks of one tensor-parallel model together. Rank r of N holds a
// slice of every layer's heads and MLP columns (models/tensor_shard.h); the only data that crosses ranks are
// the partial sums of the row-parallel projections (all_reduce_sum) and, where a backend gathers on the
// device, the vocabulary slices of the logits (all_gather).
//
// Buffers live where the rank's backend keeps its activations (host memory for the CPU backend, device memory
// on the rank's stream for NCCL). Every rank must make the same calls in the same order with the same sizes.
// All ranks end a collective with identical bits: the sums are taken in a fixed order, the same on every rank,
// so the replicated residual stream never drifts apart between ranks.
#include <cstdint>

#include "core/status.h"

struct CUstream_st;

namespace saker {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data [n] (+)= every other rank's data [n], in place; every rank ends with the same values.
  virtual Status all_reduce_sum(float* data, int64_t n) = 0;
  // recv [size() * n]: rank r's send [n] at recv + r * n, on every rank. send and recv do not overlap.
  virtual Status all_gather(const float* send, int64_t n, float* recv) = 0;
  // Returns when every rank has called it.
  virtual Status barrier() = 0;
};

// A Communicator whose buffers are device memory of one GPU rank: its collectives are ordered on the rank's
// stream, after what the rank's kernels enqueued there.
class DeviceCommunicator : public Communicator {
 public:
  virtual void bind_stream(CUstream_st* stream) = 0;
  // Whether a collective may be captured in a CUDA graph (NCCL's may; one staged through host memory waits for
  // the stream and may not).
  virtual bool capturable() const = 0;
};

}  // namespace saker
