#pragma once
// KvCache: KvStorage in host memory, [n_blocks, block_size, n_head_kv, head_dim] per layer for K and for V:
// the CPU backend's KV (Model::allocate_kv's default) and the drafter's own f32 cache.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/buffer.h"
#include "models/kv_storage.h"
#include "models/model.h"

namespace saker {

// A cache of n_tokens slots for `model`'s layers, in the dtype its backend stores (Model::kv_dtype()); pass it to
// model.allocate_kv.
KvCacheConfig kv_cache_config_for(const Model& model, int64_t n_tokens);

class KvCache final : public KvStorage {
 public:
  static Result<std::unique_ptr<KvCache>> create(const KvCacheConfig& config);

  const KvCacheConfig& config() const override { return config_; }
  Device device() const override { return Device::kCpu; }
  std::span<const LayerKv> layers() const override { return layers_; }
  uint64_t size_bytes() const override;
  using KvStorage::copy_slots;
  Status copy_slots(std::span<const SlotMoves> seqs) override;
  Status read_page(int32_t page, void* host) const override;
  Status write_page(int32_t page, const void* host) override;

 private:
  KvCache() = default;
  // Bytes of one page of one layer's K (or V).
  uint64_t tensor_page_bytes() const { return static_cast<uint64_t>(config_.block_size) * kv_row_bytes(config_); }

  KvCacheConfig config_;
  std::vector<HostBuffer> buffers_;  // k0, v0, k1, v1, ...: the page order of read_page
  std::vector<LayerKv> layers_;
};

}  // namespace saker
