#include "models/sharded_kv_storage.h"

namespace saker {

Result<std::unique_ptr<ShardedKvStorage>> ShardedKvStorage::create(const KvCacheConfig& config,
                                                                   std::vector<std::unique_ptr<KvStorage>> ranks) {
  SAKER_RETURN_IF_ERROR(check_kv_config(config));
  if (ranks.empty()) return make_error(StatusCode::kInvalidArgument, "sharded KV storage: no ranks");
  int64_t n_head_kv = 0;
  for (const auto& r : ranks) {
    const KvCacheConfig& c = r->config();
    if (c.n_layer != config.n_layer || c.head_dim != config.head_dim || c.block_size != config.block_size ||
        c.n_blocks != config.n_blocks || c.dtype != config.dtype) {
      return make_error(StatusCode::kInvalidArgument, "sharded KV storage: a rank's pages differ from the model's");
    }
    n_head_kv += c.n_head_kv;
  }
  if (n_head_kv != config.n_head_kv) {
    return make_error(StatusCode::kInvalidArgument, "sharded KV storage: the ranks hold {} kv heads of {}", n_head_kv,
                      config.n_head_kv);
  }
  std::unique_ptr<ShardedKvStorage> s(new ShardedKvStorage());
  s->config_ = config;
  s->ranks_ = std::move(ranks);
  for (const auto& r : s->ranks_) {
    const std::span<const LayerKv> l = r->layers();
    s->layers_.insert(s->layers_.end(), l.begin(), l.end());
  }
  return s;
}

uint64_t ShardedKvStorage::size_bytes() const {
  uint64_t n = 0;
  for (const auto& r : ranks_) n += r->size_bytes();
  return n;
}

Status ShardedKvStorage::copy_slots(std::span<const SlotMoves> seqs) {
  SAKER_RETURN_IF_ERROR(check_copy_slots(config_, seqs));
  for (const auto& r : ranks_) SAKER_RETURN_IF_ERROR(r->copy_slots(seqs));
  return {};
}

Status ShardedKvStorage::read_page(int32_t page, void* host) const {
  SAKER_RETURN_IF_ERROR(check_page(config_, page, host, "read_page"));
  auto* out = static_cast<uint8_t*>(host);
  for (const auto& r : ranks_) {
    SAKER_RETURN_IF_ERROR(r->read_page(page, out));
    out += r->page_bytes();
  }
  return {};
}

Status ShardedKvStorage::write_page(int32_t page, const void* host) {
  SAKER_RETURN_IF_ERROR(check_page(config_, page, host, "write_page"));
  const auto* in = static_cast<const uint8_t*>(host);
  for (const auto& r : ranks_) {
    SAKER_RETURN_IF_ERROR(r->write_page(page, in));
    in += r->page_bytes();
  }
  return {};
}

}  // namespace saker
