#pragma once
// KvCache: host storage for every layer's paged K and V, [n_blocks, block_size, n_head_kv, head_dim] each.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/buffer.h"
#include "models/model.h"

namespace saker {

struct KvCacheConfig {
  int64_t n_layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t n_blocks = 0;
  DType dtype = DType::kF32;  // f32, f16 or bf16
  bool host_storage = true;   // false: views carry the geometry only (a device model owns the cache)
};

// A host cache of n_tokens slots in blocks of 16 for layers of n_head_kv heads of head_dim.
KvCacheConfig kv_cache_config(int64_t n_layer, int64_t n_head_kv, int64_t head_dim, int64_t n_tokens, DType dtype);
// The same for `model`'s layers, with host storage unless the model keeps its own.
KvCacheConfig kv_cache_config_for(const Model& model, int64_t n_tokens, DType dtype);

class KvCache {
 public:
  static Result<KvCache> create(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  // Copies the K and V rows of slot from[i] to slot to[i] of one sequence (block_table maps its slots), in
  // every layer, in order i = 0, 1, ...: a speculative tree's accepted nodes moving to consecutive slots.
  // Host storage only.
  Status copy_slots(std::span<const int32_t> block_table, std::span<const int32_t> from, std::span<const int32_t> to);
  std::span<const LayerKv> layers() const { return layers_; }
  uint64_t size_bytes() const;

 private:
  KvCacheConfig config_;
  std::vector<HostBuffer> buffers_;  // k0, v0, k1, v1, ...
  std::vector<LayerKv> layers_;
  std::shared_ptr<int> identity_ = std::make_shared<int>(0);  // stable across moves: LayerKv::owner
};

}  // namespace saker
