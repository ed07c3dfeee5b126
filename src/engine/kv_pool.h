#pragma once
// KvPool: the engine's KV memory. Every layer's K/V pages live in one KvStorage on the model's device; the
// pool hands pages to sequences (a block table each), counts their owners, and keeps a global prefix cache in
// the same pages.
//
// Prefix cache. A full page whose K/V are computed gets a key, hash(parent page's key, its page_tokens token
// ids), so a key names the whole token prefix up to the page's end. Any later request whose tokens hash to
// the same keys reuses those pages (whichever connection it came on). A page without owners that has a key
// stays cached, in least-recently-used order, and is evicted only when a sequence needs a page and none is
// free. With a host-RAM tier, an evicted page's bytes move to host memory under its key and come back when a
// prefix asks for it again. Cached pages are immutable: a sequence only writes slots past its matched prefix,
// which live in pages of its own.
//
// Host-side bookkeeping only (plus page copies through the storage); validate() checks every invariant and
// tests call it after every scheduler step.
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "models/kv_storage.h"

namespace saker {

struct KvPoolOptions {
  bool prefix_cache = true;
  uint64_t host_cache_bytes = 0;  // host-RAM tier for evicted prefix pages (0: none)
};

struct KvPoolStats {
  int64_t lookup_tokens = 0;     // prompt tokens looked up in the prefix cache
  int64_t hit_tokens = 0;        // of those, tokens served from cached pages
  int64_t host_hit_tokens = 0;   // of the hits, tokens brought back from the host-RAM tier
  int64_t evictions = 0;         // cached pages evicted to make room
  int32_t pages_total = 0;
  int32_t pages_free = 0;        // neither owned nor cached
  int32_t pages_cached = 0;      // no owner, kept for their prefix key
  int64_t host_pages = 0;        // pages held in the host-RAM tier
};

class KvPool {
 public:
  KvPool(std::unique_ptr<KvStorage> storage, KvPoolOptions options);

  int32_t page_tokens() const { return static_cast<int32_t>(storage_->config().block_size); }
  int32_t n_pages() const { return static_cast<int32_t>(pages_.size()); }
  // Pages a sequence could get now: free ones plus cached ones that would be evicted.
  int32_t n_available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  std::span<const LayerKv> layers() const { return storage_->layers(); }
  KvStorage& storage() { return *storage_; }
  const KvPoolOptions& options() const { return options_; }

  // Grows `table` so that it holds n_slots slots (all or nothing). kOutOfRange when too few pages are
  // available; nothing changes then.
  Status reserve(std::vector<int32_t>* table, int64_t n_slots);
  // Appends to an empty `table` the pages of the longest cached prefix of tokens[0, max_tokens) (whole pages
  // only), each retained for the caller. Returns the number of tokens they cover.
  int64_t match_prefix(std::span<const int32_t> tokens, int64_t max_tokens, std::vector<int32_t>* table);
  // The first n_computed tokens of a sequence have their K/V in `table`'s pages: its full pages get their
  // prefix keys (those that have none yet), so later requests can reuse them.
  void commit(std::span<const int32_t> table, std::span<const int32_t> tokens, int64_t n_computed);
  // A new table sharing `from`'s first n_slots slots: full pages are shared (retained), a partial last page
  // is copied into a page of its own. All or nothing.
  Status fork(std::span<const int32_t> from, int64_t n_slots, std::vector<int32_t>* to);
  // Drops the table's references (it becomes empty). Pages with a key stay cached; the others are free.
  void release(std::vector<int32_t>* table);

  int32_t ref_count(int32_t page) const { return pages_[page].owners; }
  // Whether the page carries a prefix key (then its contents must not change: copy it with fork()).
  bool is_keyed(int32_t page) const { return pages_[page].keyed; }
  KvPoolStats stats() const;
  // Counts, free list, LRU list and key map agree; every page is free, cached or owned, exactly once.
  Status validate() const;

 private:
  struct Page {
    int32_t owners = 0;
    bool keyed = false;
    uint64_t key = 0;
    uint64_t parent_key = 0;
    std::vector<int32_t> tokens;          // [page_tokens] the ids the key was made of (checked on a match)
    std::list<int32_t>::iterator lru_it;  // valid while cached (keyed, no owners)
  };
  struct HostPage {
    uint64_t parent_key = 0;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> bytes;  // [page_bytes]
    std::list<uint64_t>::iterator lru_it;
  };

  uint64_t page_key(uint64_t parent_key, std::span<const int32_t> tokens) const;
  // One page for a new owner: a free one, else the least recently used cached one (its key dropped and its
  // bytes moved to the host tier). -1 when none is left.
  int32_t take_page();
  void retain(int32_t page);
  void evict_to_host(int32_t page);
  // A page holding the host tier's copy of `key` (taken, filled, keyed, retained), or -1.
  int32_t restore_from_host(uint64_t key, uint64_t parent_key, std::span<const int32_t> tokens);

  std::unique_ptr<KvStorage> storage_;
  KvPoolOptions options_;
  std::vector<Page> pages_;
  std::vector<int32_t> free_;               // a stack: the most recently freed page is reused first
  std::list<int32_t> lru_;                  // cached pages, least recently used first
  std::unordered_map<uint64_t, int32_t> by_key_;
  std::unordered_map<uint64_t, HostPage> host_;
  std::list<uint64_t> host_lru_;            // host-tier keys, least recently used first
  uint64_t host_bytes_ = 0;
  int64_t lookup_tokens_ = 0, hit_tokens_ = 0, host_hit_tokens_ = 0, evictions_ = 0;
};

}  // namespace saker
