#include "models/kv_storage.h"

namespace saker {

KvCacheConfig kv_cache_config(int64_t n_layer, int64_t n_head_kv, int64_t head_dim, int64_t n_tokens, DType dtype) {
  KvCacheConfig c;
  c.n_layer = n_layer;
  c.n_head_kv = n_head_kv;
  c.head_dim = head_dim;
  c.block_size = 16;
  c.n_blocks = (n_tokens + c.block_size - 1) / c.block_size;
  c.dtype = dtype;
  return c;
}

Status check_kv_config(const KvCacheConfig& c) {
  if (c.dtype != DType::kF32 && c.dtype != DType::kF16 && c.dtype != DType::kBF16) {
    return make_error(StatusCode::kInvalidArgument, "KV cache dtype must be f32, f16 or bf16 (got {})",
                      dtype_name(c.dtype));
  }
  if (c.block_size <= 0 || c.n_blocks <= 0) {
    return make_error(StatusCode::kInvalidArgument, "KV cache needs positive block size and count");
  }
  if (c.n_layer <= 0 || c.n_head_kv <= 0 || c.head_dim <= 0) {
    return make_error(StatusCode::kInvalidArgument, "KV cache needs positive layers ({}), kv heads ({}) and head dim ({})",
                      c.n_layer, c.n_head_kv, c.head_dim);
  }
  if (c.n_blocks > INT32_MAX) return make_error(StatusCode::kOutOfRange, "KV cache of {} blocks", c.n_blocks);
  return {};
}

Status check_copy_slots(const KvCacheConfig& c, std::span<const SlotMoves> seqs) {
  for (const SlotMoves& m : seqs) {
    if (m.from.size() != m.to.size()) {
      return make_error(StatusCode::kInvalidArgument, "copy_slots: {} sources for {} destinations", m.from.size(),
                        m.to.size());
    }
    const int64_t n_slots = static_cast<int64_t>(m.block_table.size()) * c.block_size;
    for (size_t i = 0; i < m.from.size(); ++i) {
      for (int32_t s : {m.from[i], m.to[i]}) {
        if (s < 0 || s >= n_slots) {
          return make_error(StatusCode::kOutOfRange, "copy_slots: slot {} outside the sequence's {} slots", s, n_slots);
        }
        const int32_t block = m.block_table[s / c.block_size];
        if (block < 0 || block >= c.n_blocks) {
          return make_error(StatusCode::kOutOfRange, "copy_slots: block {} outside the cache", block);
        }
      }
    }
  }
  return {};
}

uint64_t kv_row_bytes(const KvCacheConfig& c) {
  return static_cast<uint64_t>(c.n_head_kv * c.head_dim) * traits(c.dtype).block_bytes;
}

Status check_page(const KvCacheConfig& c, int32_t page, const void* host, const char* what) {
  if (page < 0 || page >= c.n_blocks) {
    return make_error(StatusCode::kOutOfRange, "{}: page {} outside the cache's {}", what, page, c.n_blocks);
  }
  if (host == nullptr) return make_error(StatusCode::kInvalidArgument, "{}: no host buffer", what);
  return {};
}

uint64_t KvStorage::page_bytes() const {
  const KvCacheConfig& c = config();
  return 2 * static_cast<uint64_t>(c.n_layer * c.block_size) * kv_row_bytes(c);
}

}  // namespace saker
