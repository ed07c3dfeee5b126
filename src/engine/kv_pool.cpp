#include "engine/kv_pool.h"

#include <xxhash.h>

#include <algorithm>

namespace saker {

namespace {
constexpr uint64_t kRootKey = 0x5a6b3e2d1c0f9e87ull;  // the parent key of a sequence's first page
}

KvPool::KvPool(std::unique_ptr<KvStorage> storage, KvPoolOptions options)
    : storage_(std::move(storage)), options_(options) {
  const int32_t n = static_cast<int32_t>(storage_->config().n_blocks);
  pages_.resize(n);
  free_.reserve(n);
  for (int32_t p = n - 1; p >= 0; --p) free_.push_back(p);  // page 0 handed out first
}

uint64_t KvPool::page_key(uint64_t parent_key, std::span<const int32_t> tokens) const {
  return XXH64(tokens.data(), tokens.size_bytes(), parent_key);
}

void KvPool::retain(int32_t page) {
  Page& p = pages_[page];
  if (p.owners == 0 && p.keyed) lru_.erase(p.lru_it);
  ++p.owners;
}

int32_t KvPool::take_page() {
  int32_t page = -1;
  if (!free_.empty()) {
    page = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    page = lru_.front();
    lru_.pop_front();
    Page& p = pages_[page];
    if (options_.host_cache_bytes > 0) evict_to_host(page);
    by_key_.erase(p.key);
    p.keyed = false;
    p.tokens.clear();
    ++evictions_;
  } else {
    return -1;
  }
  pages_[page].owners = 1;
  return page;
}

void KvPool::evict_to_host(int32_t page) {
  const Page& p = pages_[page];
  const uint64_t bytes = storage_->page_bytes();
  if (bytes > options_.host_cache_bytes || host_.count(p.key)) return;
  while (host_bytes_ + bytes > options_.host_cache_bytes && !host_lru_.empty()) {
    host_bytes_ -= host_[host_lru_.front()].bytes.size();
    host_.erase(host_lru_.front());
    host_lru_.pop_front();
  }
  HostPage h;
  h.parent_key = p.parent_key;
  h.tokens = p.tokens;
  h.bytes.resize(bytes);
  if (!storage_->read_page(page, h.bytes.data()).ok()) return;  // the tier is a cache: a failed copy is a miss
  host_lru_.push_back(p.key);
  h.lru_it = std::prev(host_lru_.end());
  host_bytes_ += bytes;
  host_.emplace(p.key, std::move(h));
}

int32_t KvPool::restore_from_host(uint64_t key, uint64_t parent_key, std::span<const int32_t> tokens) {
  auto it = host_.find(key);
  if (it == host_.end() || it->second.parent_key != parent_key ||
      !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(), it->second.tokens.end())) {
    return -1;
  }
  const int32_t page = take_page();
  if (page < 0) return -1;
  if (!storage_->write_page(page, it->second.bytes.data()).ok()) {
    pages_[page].owners = 0;
    free_.push_back(page);
    return -1;
  }
  Page& p = pages_[page];
  p.keyed = true;
  p.key = key;
  p.parent_key = parent_key;
  p.tokens.assign(tokens.begin(), tokens.end());
  by_key_[key] = page;
  host_bytes_ -= it->second.bytes.size();
  host_lru_.erase(it->second.lru_it);
  host_.erase(it);
  return page;
}

Status KvPool::reserve(std::vector<int32_t>* table, int64_t n_slots) {
  const int64_t pt = page_tokens();
  const int64_t need = (n_slots + pt - 1) / pt - static_cast<int64_t>(table->size());
  if (need <= 0) return {};
  if (need > n_available()) {
    return make_error(StatusCode::kOutOfRange, "KV pool full: {} pages needed, {} of {} available", need,
                      n_available(), n_pages());
  }
  for (int64_t i = 0; i < need; ++i) table->push_back(take_page());
  return {};
}

int64_t KvPool::match_prefix(std::span<const int32_t> tokens, int64_t max_tokens, std::vector<int32_t>* table) {
  const int64_t pt = page_tokens();
  max_tokens = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  lookup_tokens_ += std::max<int64_t>(max_tokens, 0);
  if (!options_.prefix_cache || !table->empty()) return 0;
  uint64_t parent = kRootKey;
  int64_t covered = 0;
  while (covered + pt <= max_tokens) {
    const std::span<const int32_t> ids = tokens.subspan(covered, pt);
    const uint64_t key = page_key(parent, ids);
    int32_t page = -1;
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      const Page& p = pages_[it->second];
      if (p.parent_key == parent && std::equal(ids.begin(), ids.end(), p.tokens.begin(), p.tokens.end())) {
        page = it->second;
        retain(page);
      }
    } else if (options_.host_cache_bytes > 0) {
      page = restore_from_host(key, parent, ids);
      if (page >= 0) host_hit_tokens_ += pt;
    }
    if (page < 0) break;
    // A cached page moves to the most recently used end when it is released again.
    table->push_back(page);
    covered += pt;
    parent = key;
  }
  hit_tokens_ += covered;
  return covered;
}

void KvPool::commit(std::span<const int32_t> table, std::span<const int32_t> tokens, int64_t n_computed) {
  if (!options_.prefix_cache) return;
  const int64_t pt = page_tokens();
  const int64_t n_full = std::min<int64_t>(n_computed / pt, static_cast<int64_t>(table.size()));
  uint64_t parent = kRootKey;
  for (int64_t i = 0; i < n_full; ++i) {
    Page& p = pages_[table[i]];
    if (p.keyed) {
      parent = p.key;
      continue;
    }
    const std::span<const int32_t> ids = tokens.subspan(i * pt, pt);
    const uint64_t key = page_key(parent, ids);
    // Another sequence may have computed the same prefix at the same time: the first page published keeps the
    // key, this one stays private (freed when its owner lets go).
    if (by_key_.count(key)) {
      parent = key;
      continue;
    }
    p.keyed = true;
    p.key = key;
    p.parent_key = parent;
    p.tokens.assign(ids.begin(), ids.end());
    by_key_[key] = table[i];
    parent = key;
  }
}

Status KvPool::fork(std::span<const int32_t> from, int64_t n_slots, std::vector<int32_t>* to) {
  const int64_t pt = page_tokens();
  const int64_t n_full = n_slots / pt;
  const bool partial = n_slots % pt != 0;
  if (n_full + (partial ? 1 : 0) > static_cast<int64_t>(from.size())) {
    return make_error(StatusCode::kInvalidArgument, "fork: {} slots but the table has {} pages", n_slots, from.size());
  }
  if (partial && n_available() < 1) return make_error(StatusCode::kOutOfRange, "KV pool full: no page to fork into");
  to->clear();
  for (int64_t i = 0; i < n_full; ++i) {
    retain(from[i]);
    to->push_back(from[i]);
  }
  if (partial) {
    to->push_back(take_page());
    std::vector<int32_t> slots(n_slots % pt);
    for (size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<int32_t>(n_full * pt + i);
    // Copy within a table that maps the source's last page for reading and the new page for writing: slots
    // of the last page read through `src`, land through `*to`.
    std::vector<int32_t> both(from.begin(), from.begin() + n_full + 1);
    both.push_back(to->back());
    std::vector<int32_t> dst(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) dst[i] = static_cast<int32_t>(slots[i] + pt);
    Status st = storage_->copy_slots(both, slots, dst);
    if (!st.ok()) {
      release(to);
      return st;
    }
  }
  return {};
}

void KvPool::release(std::vector<int32_t>* table) {
  // Release in reverse so a sequence's deepest pages sit nearest the LRU end: evicting a prefix's tail first
  // keeps its head (shared by more requests) cached longer.
  for (auto it = table->rbegin(); it != table->rend(); ++it) {
    Page& p = pages_[*it];
    if (p.owners <= 0) continue;  // validate() reports the imbalance
    if (--p.owners > 0) continue;
    if (p.keyed) {
      lru_.push_back(*it);
      p.lru_it = std::prev(lru_.end());
    } else {
      free_.push_back(*it);
    }
  }
  table->clear();
}

KvPoolStats KvPool::stats() const {
  KvPoolStats s;
  s.lookup_tokens = lookup_tokens_;
  s.hit_tokens = hit_tokens_;
  s.host_hit_tokens = host_hit_tokens_;
  s.evictions = evictions_;
  s.pages_total = n_pages();
  s.pages_free = static_cast<int32_t>(free_.size());
  s.pages_cached = static_cast<int32_t>(lru_.size());
  s.host_pages = static_cast<int64_t>(host_.size());
  return s;
}

Status KvPool::validate() const {
  const int32_t n = n_pages();
  std::vector<int> seen(n, 0);
  for (int32_t p : free_) {
    if (p < 0 || p >= n) return make_error(StatusCode::kInternal, "KV pool: free list holds invalid page {}", p);
    if (seen[p]++) return make_error(StatusCode::kInternal, "KV pool: page {} listed twice", p);
    if (pages_[p].owners != 0 || pages_[p].keyed) {
      return make_error(StatusCode::kInternal, "KV pool: free page {} has {} owners or a key", p, pages_[p].owners);
    }
  }
  for (int32_t p : lru_) {
    if (p < 0 || p >= n) return make_error(StatusCode::kInternal, "KV pool: LRU list holds invalid page {}", p);
    if (seen[p]++) return make_error(StatusCode::kInternal, "KV pool: page {} listed twice", p);
    if (pages_[p].owners != 0 || !pages_[p].keyed) {
      return make_error(StatusCode::kInternal, "KV pool: cached page {} has owners or no key", p);
    }
  }
  for (int32_t p = 0; p < n; ++p) {
    const Page& pg = pages_[p];
    if (pg.owners < 0) return make_error(StatusCode::kInternal, "KV pool: page {} has a negative count", p);
    if (pg.owners == 0 && !seen[p]) return make_error(StatusCode::kInternal, "KV pool: page {} is lost", p);
    if (pg.keyed) {
      auto it = by_key_.find(pg.key);
      if (it == by_key_.end() || it->second != p) {
        return make_error(StatusCode::kInternal, "KV pool: page {} has a key the map does not point back from", p);
      }
      if (static_cast<int64_t>(pg.tokens.size()) != page_tokens()) {
        return make_error(StatusCode::kInternal, "KV pool: keyed page {} holds {} token ids", p, pg.tokens.size());
      }
    }
  }
  for (const auto& [key, p] : by_key_) {
    if (p < 0 || p >= n || !pages_[p].keyed || pages_[p].key != key) {
      return make_error(StatusCode::kInternal, "KV pool: key map entry for page {} is stale", p);
    }
  }
  uint64_t host_bytes = 0;
  for (const auto& [key, h] : host_) host_bytes += h.bytes.size();
  if (host_bytes != host_bytes_ || host_.size() != host_lru_.size() || host_bytes_ > options_.host_cache_bytes) {
    return make_error(StatusCode::kInternal, "KV pool: host tier holds {} bytes in {} pages, counted {} (limit {})",
                      host_bytes, host_.size(), host_bytes_, options_.host_cache_bytes);
  }
  return {};
}

}  // namespace saker
