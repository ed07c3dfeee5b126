#pragma once
// TensorParallelModel: one model split over N in-process ranks (models/tensor_shard.h), each a rank model of its
// architecture over its own CPU backend, that backend's communicator one of a LocalGroup's, and its ops on a
// thread pool of about 1 / N of the cores (parallel/RankThreads). To the engine it is one Model:
//   allocate_kv  a ShardedKvStorage: each rank's storage holds only its kv heads; the same page ids everywhere
//   forward      runs every rank's forward at once (rank r reads layers()[r n_layer, (r + 1) n_layer)), the
//                ranks meeting in the all-reduces of their row-parallel projections; then assembles the outputs
//                on the calling thread: a logits row is the concatenation of the ranks' vocabulary slices, an
//                argmax id the first maximum over the slices in rank order (the lowest id among equal maxima,
//                as one rank picks), hidden-state taps rank 0's (the residual stream is bit-identical on every
//                rank).
// A rank that fails aborts the group so no other rank waits for it; forward returns the first failure.
//
// On CUDA the same rank models run one per GPU, each on its own CudaBackend and device, their all-reduces
// through an NcclCommunicator on the backend's stream (captured in the decode graphs with the rest). Ranks
// given the same device (OpsOptions::tensor_parallel_devices) share it with StagedCudaCommunicators instead:
// the one-GPU check of the sharded CUDA forward. A rank that fails inside an NCCL collective cannot release
// the others: the process must go.
#include <memory>
#include <mutex>
#include <vector>

#include "models/model.h"
#include "ops/backend.h"
#include "parallel/local_communicator.h"
#include "parallel/rank_threads.h"

namespace saker {

class TensorParallelModel final : public Model {
 public:
  // options.tensor_parallel ranks (>= 2) on the CPU or on CUDA devices; errors name what does not divide
  // (check_tensor_parallel), a device that is missing, or NCCL absent where the ranks need it.
  static Result<std::unique_ptr<Model>> create(std::shared_ptr<const ModelWeights> weights, const OpsOptions& options);
  ~TensorParallelModel() override;

  const ModelHParams& hparams() const override { return hp_; }
  Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) override;
  Device device() const override { return device_; }
  Result<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheConfig& config) const override;
  DType kv_dtype() const override { return ranks_[0]->kv_dtype(); }
  std::string width_dependent_weight() const override { return ranks_[0]->width_dependent_weight(); }
  int64_t invariant_rows() const override { return ranks_[0]->invariant_rows(); }

  int n_ranks() const { return static_cast<int>(ranks_.size()); }
  int threads_per_rank() const { return threads_->threads_per_rank(); }

 private:
  TensorParallelModel() = default;
  // Rank r's backend: a CPU backend on the LocalGroup, or a CudaBackend on devices_[r].
  Result<std::unique_ptr<OpBackend>> rank_backend(int r, const OpsOptions& options);
  Status make_device_communicators(int n);

  std::shared_ptr<const ModelWeights> weights_;
  ModelHParams hp_;
  Device device_ = Device::kCpu;
  std::vector<int> devices_;  // CUDA: each rank's device
  // Declared so that they are destroyed threads first, then the rank models, then the communicators and the
  // group they use.
  std::unique_ptr<LocalGroup> group_;                         // CPU ranks, or CUDA ranks sharing a device
  std::vector<std::unique_ptr<DeviceCommunicator>> device_comms_;  // CUDA: one per rank
  std::vector<std::unique_ptr<Model>> ranks_;
  std::unique_ptr<RankThreads> threads_;
  std::vector<std::vector<float>> logits_;  // per rank: [n_outputs, its vocabulary slice]
  std::mutex mutex_;                        // one forward at a time
};

}  // namespace saker
