#pragma once
// KvStorage: the memory behind every layer's paged K and V, on the device of the model that reads it. The
// engine owns one (its KvPool) and hands the model views of it (LayerKv); the model never allocates KV itself.
// Pages ("blocks") are block_size slots; physical slot p of a layer is row p % block_size of page
// p / block_size of the layer's [n_blocks, block_size, n_head_kv, head_dim] tensors.
#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "ops/layer_kv.h"  // LayerKv: one layer's views

namespace saker {

struct KvCacheConfig {
  int64_t n_layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t n_blocks = 0;
  DType dtype = DType::kF32;  // f32, f16 or bf16 (a backend may accept fewer: CUDA takes f16)
};

// A cache of n_tokens slots in blocks of 16 for layers of n_head_kv heads of head_dim.
KvCacheConfig kv_cache_config(int64_t n_layer, int64_t n_head_kv, int64_t head_dim, int64_t n_tokens, DType dtype);

// One sequence's share of KvStorage::copy_slots: slot from[i] to slot to[i], its slots mapped by block_table.
struct SlotMoves {
  std::span<const int32_t> block_table;
  std::span<const int32_t> from;
  std::span<const int32_t> to;
};

// For implementations, so every backend refuses the same arguments with the same errors: positive sizes and a
// plain float dtype; copy_slots' slots inside each table and the tables' blocks inside the storage.
Status check_kv_config(const KvCacheConfig& config);
Status check_copy_slots(const KvCacheConfig& config, std::span<const SlotMoves> seqs);
// The storage slot (page * block_size + row) of a sequence's slot; for checked arguments.
inline int64_t storage_slot(const KvCacheConfig& config, std::span<const int32_t> block_table, int32_t slot) {
  return static_cast<int64_t>(block_table[slot / config.block_size]) * config.block_size + slot % config.block_size;
}
// Bytes of one slot's row of one layer's K (or V): n_head_kv * head_dim elements.
uint64_t kv_row_bytes(const KvCacheConfig& config);
// read_page / write_page arguments (`what` names the call in the error).
Status check_page(const KvCacheConfig& config, int32_t page, const void* host, const char* what);

class KvStorage {
 public:
  virtual ~KvStorage() = default;

  virtual const KvCacheConfig& config() const = 0;
  virtual Device device() const = 0;
  // Views of every layer, in layer order.
  virtual std::span<const LayerKv> layers() const = 0;
  virtual uint64_t size_bytes() const = 0;

  // Copies the K and V rows of slot from[i] to slot to[i] of each sequence in `seqs`, in every layer: a
  // speculative tree's accepted nodes moving to consecutive slots, or a forked sequence's partial last page.
  // Within a sequence in order i = 0, 1, ... (overlapping moves behave as if done one by one); different
  // sequences must not share a slot they write or read. Returns once the rows are in place. The engine gives
  // every sequence of a step in one call: the GPU storage moves them all in one launch.
  virtual Status copy_slots(std::span<const SlotMoves> seqs) = 0;
  // One sequence's moves.
  Status copy_slots(std::span<const int32_t> block_table, std::span<const int32_t> from, std::span<const int32_t> to) {
    const SlotMoves one{block_table, from, to};
    return copy_slots(std::span<const SlotMoves>(&one, 1));
  }

  // One page of every layer as host bytes (layer 0 K, layer 0 V, layer 1 K, ...): page_bytes() each. The
  // prefix cache's host-RAM tier keeps evicted pages this way and writes them back bit for bit.
  uint64_t page_bytes() const;
  virtual Status read_page(int32_t page, void* host) const = 0;  // host: [page_bytes()]
  virtual Status write_page(int32_t page, const void* host) = 0;
};

}  // namespace saker
