#include "engine/kv_cache.h"

#include <cstring>
#include <new>

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

KvCacheConfig kv_cache_config_for(const Model& model, int64_t n_tokens, DType dtype) {
  const ModelHParams& h = model.hparams();
  KvCacheConfig c = kv_cache_config(h.n_layer, h.n_head_kv, h.head_dim, n_tokens, dtype);
  c.host_storage = !model.owns_kv_cache();
  return c;
}

Result<KvCache> KvCache::create(const KvCacheConfig& c) {
  if (c.dtype != DType::kF32 && c.dtype != DType::kF16 && c.dtype != DType::kBF16) {
    return make_error(StatusCode::kInvalidArgument, "KV cache dtype must be f32, f16 or bf16 (got {})",
                      dtype_name(c.dtype));
  }
  if (c.block_size <= 0 || c.n_blocks <= 0) {
    return make_error(StatusCode::kInvalidArgument, "KV cache needs positive block size and count");
  }
  KvCache kv;
  kv.config_ = c;
  const uint64_t elem = traits(c.dtype).block_bytes;
  const uint64_t bytes = static_cast<uint64_t>(c.n_blocks * c.block_size * c.n_head_kv * c.head_dim) * elem;
  try {
    for (int64_t l = 0; l < c.n_layer; ++l) {
      LayerKv layer;
      layer.owner = kv.identity_.get();
      for (int which = 0; which < 2; ++which) {
        void* data = nullptr;
        if (c.host_storage) {
          kv.buffers_.emplace_back(bytes);
          data = kv.buffers_.back().data();
        }
        TensorView t = TensorView::contiguous(data, c.dtype,
                                              {c.n_blocks, c.block_size, c.n_head_kv, c.head_dim});
        (which == 0 ? layer.k : layer.v) = t;
      }
      kv.layers_.push_back(layer);
    }
  } catch (const std::bad_alloc&) {
    return make_error(StatusCode::kOutOfRange, "cannot allocate a KV cache of {} MiB",
                      2 * bytes * c.n_layer / (1 << 20));
  }
  return kv;
}

Status KvCache::copy_slots(std::span<const int32_t> block_table, std::span<const int32_t> from,
                          std::span<const int32_t> to) {
  const KvCacheConfig& c = config_;
  if (!c.host_storage) return make_error(StatusCode::kUnsupported, "copy_slots: the KV cache has no host storage");
  if (from.size() != to.size()) {
    return make_error(StatusCode::kInvalidArgument, "copy_slots: {} sources for {} destinations", from.size(),
                      to.size());
  }
  const int64_t n_slots = static_cast<int64_t>(block_table.size()) * c.block_size;
  const uint64_t row_bytes = static_cast<uint64_t>(c.n_head_kv * c.head_dim) * traits(c.dtype).block_bytes;
  auto offset = [&](int32_t slot) -> uint64_t {
    const int32_t block = block_table[slot / c.block_size];
    return (static_cast<uint64_t>(block) * c.block_size + slot % c.block_size) * row_bytes;
  };
  for (size_t i = 0; i < from.size(); ++i) {
    for (int32_t s : {from[i], to[i]}) {
      if (s < 0 || s >= n_slots) {
        return make_error(StatusCode::kOutOfRange, "copy_slots: slot {} outside the sequence's {} slots", s, n_slots);
      }
    }
    for (int32_t s : {block_table[from[i] / c.block_size], block_table[to[i] / c.block_size]}) {
      if (s < 0 || s >= c.n_blocks) return make_error(StatusCode::kOutOfRange, "copy_slots: block {} outside the cache", s);
    }
  }
  for (const LayerKv& layer : layers_) {
    for (const TensorView* t : {&layer.k, &layer.v}) {
      auto* base = static_cast<uint8_t*>(t->data);
      for (size_t i = 0; i < from.size(); ++i) {
        if (from[i] != to[i]) std::memmove(base + offset(to[i]), base + offset(from[i]), row_bytes);
      }
    }
  }
  return {};
}

uint64_t KvCache::size_bytes() const {
  uint64_t n = 0;
  for (const auto& b : buffers_) n += b.size_bytes();
  return n;
}

}  // namespace saker
