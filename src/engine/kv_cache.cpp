#include "engine/kv_cache.h"

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

uint64_t KvCache::size_bytes() const {
  uint64_t n = 0;
  for (const auto& b : buffers_) n += b.size_bytes();
  return n;
}

}  // namespace saker
