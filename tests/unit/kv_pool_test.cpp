// KvPool: pages handed out and returned, the prefix cache (keys, reuse, LRU eviction, the host-RAM tier),
// fork, and validate() catching nothing on legal use.
#include "engine/kv_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "models/kv_cache.h"

namespace saker {
namespace {

constexpr int64_t kPage = 4;

std::unique_ptr<KvPool> make_pool(int64_t n_pages, KvPoolOptions o = {}) {
  KvCacheConfig c = kv_cache_config(2, 1, 2, n_pages * kPage, DType::kF32);
  c.block_size = kPage;
  c.n_blocks = n_pages;
  auto kv = KvCache::create(c);
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  return std::make_unique<KvPool>(std::move(kv).value(), o);
}

std::vector<int32_t> ids(int32_t first, int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Writes a recognisable value into every K/V element of slot s of a table's pages.
void stamp(KvPool& pool, const std::vector<int32_t>& table, int32_t slot, float value) {
  for (const LayerKv& l : pool.layers()) {
    for (const TensorView* t : {&l.k, &l.v}) {
      float* page = static_cast<float*>(t->data) + table[slot / kPage] * kPage * 2;
      page[(slot % kPage) * 2] = value;
      page[(slot % kPage) * 2 + 1] = value;
    }
  }
}

float k_at(KvPool& pool, const std::vector<int32_t>& table, int32_t slot) {
  const TensorView& k = pool.layers()[1].k;
  return static_cast<float*>(k.data)[table[slot / kPage] * kPage * 2 + (slot % kPage) * 2];
}

TEST(KvPool, ReserveIsAllOrNothingAndReleaseReturnsPages) {
  auto pool = make_pool(4);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool->reserve(&a, 9).ok());  // 3 pages
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(pool->n_available(), 1);
  const Status full = pool->reserve(&b, 8);
  EXPECT_EQ(full.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool->n_available(), 1);
  ASSERT_TRUE(pool->reserve(&a, 12).ok());  // grows in place
  EXPECT_EQ(a.size(), 3u);
  ASSERT_TRUE(pool->validate().ok());
  pool->release(&a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(pool->n_available(), 4);
  EXPECT_TRUE(pool->validate().ok());
}

TEST(KvPool, CommittedFullPagesAreReusedByALaterPrompt) {
  auto pool = make_pool(8);
  const std::vector<int32_t> prompt = ids(100, 10);  // two full pages + 2
  std::vector<int32_t> a;
  ASSERT_TRUE(pool->reserve(&a, 10).ok());
  for (int32_t s = 0; s < 10; ++s) stamp(*pool, a, s, static_cast<float>(s + 1));
  pool->commit(a, prompt, 10);
  EXPECT_TRUE(pool->validate().ok());

  // A prompt with the same first 9 tokens matches the two full pages (8 tokens), in place.
  std::vector<int32_t> other = prompt;
  other[9] = 7;
  std::vector<int32_t> b;
  EXPECT_EQ(pool->match_prefix(other, 9, &b), 8);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0], a[0]);
  EXPECT_EQ(b[1], a[1]);
  EXPECT_EQ(pool->ref_count(a[0]), 2);
  // A different first page matches nothing, and so does a different second page beyond the first.
  std::vector<int32_t> c;
  std::vector<int32_t> diff = prompt;
  diff[5] = 1;
  EXPECT_EQ(pool->match_prefix(diff, 9, &c), 4);
  pool->release(&c);
  diff[0] = 1;
  EXPECT_EQ(pool->match_prefix(diff, 9, &c), 0);
  EXPECT_TRUE(c.empty());
  pool->release(&a);
  pool->release(&b);
  // Released keyed pages stay cached and still match.
  const KvPoolStats st = pool->stats();
  EXPECT_EQ(st.pages_cached, 2);
  std::vector<int32_t> d;
  EXPECT_EQ(pool->match_prefix(prompt, 9, &d), 8);
  EXPECT_FLOAT_EQ(k_at(*pool, d, 7), 8.0f);
  pool->release(&d);
  EXPECT_TRUE(pool->validate().ok());
}

TEST(KvPool, EvictsLeastRecentlyUsedCachedPagesWhenFull) {
  auto pool = make_pool(4);
  std::vector<int32_t> a, b;
  const std::vector<int32_t> pa = ids(0, 8), pb = ids(50, 8);
  ASSERT_TRUE(pool->reserve(&a, 8).ok());
  pool->commit(a, pa, 8);
  pool->release(&a);
  ASSERT_TRUE(pool->reserve(&b, 8).ok());
  pool->commit(b, pb, 8);
  pool->release(&b);
  EXPECT_EQ(pool->stats().pages_cached, 4);
  // Touch prompt a again so that b's pages are the least recently used.
  std::vector<int32_t> t;
  EXPECT_EQ(pool->match_prefix(pa, 8, &t), 8);
  pool->release(&t);
  std::vector<int32_t> n;
  ASSERT_TRUE(pool->reserve(&n, 8).ok());  // evicts b's two pages
  EXPECT_EQ(pool->stats().evictions, 2);
  pool->release(&n);
  std::vector<int32_t> x;
  EXPECT_EQ(pool->match_prefix(pb, 8, &x), 0);
  EXPECT_EQ(pool->match_prefix(pa, 8, &x), 8);
  pool->release(&x);
  EXPECT_TRUE(pool->validate().ok());
}

TEST(KvPool, HostTierBringsEvictedPagesBackBitForBit) {
  KvPoolOptions o;
  o.host_cache_bytes = 1 << 20;
  auto pool = make_pool(2, o);
  const std::vector<int32_t> pa = ids(0, 8), pb = ids(50, 8);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool->reserve(&a, 8).ok());
  for (int32_t s = 0; s < 8; ++s) stamp(*pool, a, s, 0.5f + s);
  pool->commit(a, pa, 8);
  pool->release(&a);
  std::vector<int32_t> b;
  ASSERT_TRUE(pool->reserve(&b, 8).ok());  // both of a's pages go to the host tier
  for (int32_t s = 0; s < 8; ++s) stamp(*pool, b, s, -1.0f);
  pool->commit(b, pb, 8);
  pool->release(&b);
  EXPECT_EQ(pool->stats().host_pages, 2);
  std::vector<int32_t> back;
  EXPECT_EQ(pool->match_prefix(pa, 8, &back), 8);
  for (int32_t s = 0; s < 8; ++s) EXPECT_EQ(k_at(*pool, back, s), 0.5f + s) << "slot " << s;
  EXPECT_EQ(pool->stats().host_hit_tokens, 8);
  pool->release(&back);
  EXPECT_TRUE(pool->validate().ok());
}

TEST(KvPool, ForkSharesFullPagesAndCopiesThePartialOne) {
  auto pool = make_pool(6);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool->reserve(&a, 6).ok());
  for (int32_t s = 0; s < 6; ++s) stamp(*pool, a, s, 10.0f + s);
  std::vector<int32_t> f;
  ASSERT_TRUE(pool->fork(a, 6, &f).ok());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0], a[0]);
  EXPECT_NE(f[1], a[1]);
  EXPECT_EQ(pool->ref_count(a[0]), 2);
  EXPECT_EQ(k_at(*pool, f, 5), 15.0f);
  stamp(*pool, f, 5, 99.0f);  // the fork writes its own copy
  EXPECT_EQ(k_at(*pool, a, 5), 15.0f);
  pool->release(&a);
  pool->release(&f);
  EXPECT_EQ(pool->n_available(), 6);
  EXPECT_TRUE(pool->validate().ok());
}

TEST(KvPool, PrefixCacheOffMatchesNothing) {
  KvPoolOptions o;
  o.prefix_cache = false;
  auto pool = make_pool(4, o);
  std::vector<int32_t> a;
  const std::vector<int32_t> p = ids(0, 8);
  ASSERT_TRUE(pool->reserve(&a, 8).ok());
  pool->commit(a, p, 8);
  pool->release(&a);
  EXPECT_EQ(pool->stats().pages_cached, 0);
  EXPECT_EQ(pool->match_prefix(p, 8, &a), 0);
  EXPECT_TRUE(pool->validate().ok());
}

}  // namespace
}  // namespace saker
