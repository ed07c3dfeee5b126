#pragma once
// ShardedKvStorage: the KV memory of a tensor-parallel model, one storage per rank, each holding only that
// rank's kv heads ([n_blocks, block_size, n_head_kv / N, head_dim] per layer), behind the one KvStorage the
// engine's KvPool owns. Pages are the same page ids in every rank's storage, so the pool's block tables, prefix
// cache and host tier work unchanged:
//   config()       the whole model's geometry (n_head_kv of all ranks); page_bytes() is the sum of the ranks'
//   layers()       [N * n_layer] views, rank-major: rank r's layer l at r * n_layer + l (what
//                  TensorParallelModel::forward splits among its ranks)
//   copy_slots     in every rank's storage
//   read_page      rank 0's page bytes, then rank 1's, ... (write_page reads them back the same way)
#include <memory>
#include <vector>

#include "models/kv_storage.h"

namespace saker {

class ShardedKvStorage final : public KvStorage {
 public:
  // `ranks` share block_size, n_blocks, n_layer, head_dim and dtype; their kv heads add up to config's.
  static Result<std::unique_ptr<ShardedKvStorage>> create(const KvCacheConfig& config,
                                                          std::vector<std::unique_ptr<KvStorage>> ranks);

  const KvCacheConfig& config() const override { return config_; }
  Device device() const override { return ranks_[0]->device(); }
  std::span<const LayerKv> layers() const override { return layers_; }
  uint64_t size_bytes() const override;
  using KvStorage::copy_slots;
  Status copy_slots(std::span<const SlotMoves> seqs) override;
  Status read_page(int32_t page, void* host) const override;
  Status write_page(int32_t page, const void* host) override;

  int n_ranks() const { return static_cast<int>(ranks_.size()); }
  const KvStorage& rank(int r) const { return *ranks_[r]; }

 private:
  ShardedKvStorage() = default;

  KvCacheConfig config_;
  std::vector<std::unique_ptr<KvStorage>> ranks_;
  std::vector<LayerKv> layers_;  // [n_ranks * n_layer] rank-major
};

}  // namespace saker
