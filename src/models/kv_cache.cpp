#include "models/kv_cache.h"

#include <cstring>
#include <new>

namespace saker {

KvCacheConfig kv_cache_config_for(const Model& model, int64_t n_tokens) {
  const ModelHParams& h = model.hparams();
  return kv_cache_config(h.n_layer, model.kv_heads(), h.head_dim, n_tokens, model.kv_dtype());
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheConfig& c) {
  SAKER_RETURN_IF_ERROR(check_kv_config(c));
  std::unique_ptr<KvCache> kv(new KvCache());
  kv->config_ = c;
  const uint64_t bytes = static_cast<uint64_t>(c.n_blocks) * kv->tensor_page_bytes();
  try {
    for (int64_t l = 0; l < c.n_layer; ++l) {
      LayerKv layer;
      for (TensorView* t : {&layer.k, &layer.v}) {
        kv->buffers_.emplace_back(bytes);
        *t = TensorView::contiguous(kv->buffers_.back().data(), c.dtype,
                                    {c.n_blocks, c.block_size, c.n_head_kv, c.head_dim});
      }
      kv->layers_.push_back(layer);
    }
  } catch (const std::bad_alloc&) {
    return make_error(StatusCode::kOutOfRange, "cannot allocate a KV cache of {} MiB",
                      2 * bytes * c.n_layer / (1 << 20));
  }
  return kv;
}

Status KvCache::copy_slots(std::span<const SlotMoves> seqs) {
  const KvCacheConfig& c = config_;
  SAKER_RETURN_IF_ERROR(check_copy_slots(c, seqs));
  const uint64_t row_bytes = kv_row_bytes(c);
  for (HostBuffer& b : buffers_) {
    auto* base = b.as<uint8_t>();
    for (const SlotMoves& m : seqs) {
      for (size_t i = 0; i < m.from.size(); ++i) {
        if (m.from[i] == m.to[i]) continue;
        std::memmove(base + storage_slot(c, m.block_table, m.to[i]) * row_bytes,
                     base + storage_slot(c, m.block_table, m.from[i]) * row_bytes, row_bytes);
      }
    }
  }
  return {};
}

Status KvCache::read_page(int32_t page, void* host) const {
  SAKER_RETURN_IF_ERROR(check_page(config_, page, host, "read_page"));
  const uint64_t n = tensor_page_bytes();
  auto* out = static_cast<uint8_t*>(host);
  for (size_t t = 0; t < buffers_.size(); ++t) std::memcpy(out + t * n, buffers_[t].as<uint8_t>() + page * n, n);
  return {};
}

Status KvCache::write_page(int32_t page, const void* host) {
  SAKER_RETURN_IF_ERROR(check_page(config_, page, host, "write_page"));
  const uint64_t n = tensor_page_bytes();
  const auto* in = static_cast<const uint8_t*>(host);
  for (size_t t = 0; t < buffers_.size(); ++t) std::memcpy(buffers_[t].as<uint8_t>() + page * n, in + t * n, n);
  return {};
}

uint64_t KvCache::size_bytes() const {
  uint64_t n = 0;
  for (const auto& b : buffers_) n += b.size_bytes();
  return n;
}

}  // namespace saker
