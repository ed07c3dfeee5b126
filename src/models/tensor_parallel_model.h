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
// On CUDA the same rank models would run one per GPU with an NcclCommunicator (parallel/nccl_communicator.h);
// that wiring does not exist yet, so create() refuses a CUDA device.
#include <memory>
#include <mutex>
#include <vector>

#include "models/model.h"
#include "parallel/local_communicator.h"
#include "parallel/rank_threads.h"

namespace saker {

class TensorParallelModel final : public Model {
 public:
  // options.tensor_parallel ranks (>= 2) on the CPU; errors name what does not divide (check_tensor_parallel).
  static Result<std::unique_ptr<Model>> create(std::shared_ptr<const ModelWeights> weights, const OpsOptions& options);
  ~TensorParallelModel() override;

  const ModelHParams& hparams() const override { return hp_; }
  Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) override;
  Device device() const override { return Device::kCpu; }
  Result<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheConfig& config) const override;
  DType kv_dtype() const override { return ranks_[0]->kv_dtype(); }
  std::string width_dependent_weight() const override { return ranks_[0]->width_dependent_weight(); }

  int n_ranks() const { return static_cast<int>(ranks_.size()); }
  int threads_per_rank() const { return threads_->threads_per_rank(); }

 private:
  TensorParallelModel() = default;

  std::shared_ptr<const ModelWeights> weights_;
  ModelHParams hp_;
  // Declared so that they are destroyed threads first, then the rank models, then the group they use.
  std::unique_ptr<LocalGroup> group_;
  std::vector<std::unique_ptr<Model>> ranks_;
  std::unique_ptr<RankThreads> threads_;
  std::vector<std::vector<float>> logits_;  // per rank: [n_outputs, its vocabulary slice]
  std::mutex mutex_;                        // one forward at a time
};

}  // namespace saker
