// KvCache (host KvStorage): geometry from layer sizes, copy_slots (a speculative tree's accepted rows moving to
// consecutive slots) through a block table that is not the identity, and pages out to host bytes and back.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "models/kv_cache.h"

namespace saker {
namespace {

// Every element of a slot's K row holds 1000 * layer + slot, its V row the negative.
void fill(KvCache& kv, const std::vector<int32_t>& table) {
  const auto& c = kv.config();
  const int64_t row = c.n_head_kv * c.head_dim;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    float* k = static_cast<float*>(kv.layers()[l].k.data);
    float* v = static_cast<float*>(kv.layers()[l].v.data);
    for (int32_t s = 0; s < static_cast<int32_t>(table.size() * c.block_size); ++s) {
      const int64_t at = (table[s / c.block_size] * c.block_size + s % c.block_size) * row;
      for (int64_t e = 0; e < row; ++e) {
        k[at + e] = static_cast<float>(1000 * l + s);
        v[at + e] = -static_cast<float>(1000 * l + s);
      }
    }
  }
}

float k_at(const KvCache& kv, const std::vector<int32_t>& table, int64_t layer, int32_t slot, int64_t e = 0) {
  const auto& c = kv.config();
  const float* k = static_cast<const float*>(kv.layers()[layer].k.data);
  return k[(table[slot / c.block_size] * c.block_size + slot % c.block_size) * c.n_head_kv * c.head_dim + e];
}

TEST(KvCache, GeometryFromLayerSizes) {
  const KvCacheConfig c = kv_cache_config(3, 2, 64, 100, DType::kF16);
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_EQ(c.block_size, 16);
  EXPECT_EQ(c.n_blocks, 7);  // ceil(100 / 16)
  EXPECT_EQ(c.dtype, DType::kF16);
  auto kv = KvCache::create(c);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ((*kv)->page_bytes(), 2u * 3 * 16 * 2 * 64 * 2);  // K and V of 3 layers, 16 slots of 2 x 64 f16
  EXPECT_EQ((*kv)->size_bytes(), 7 * (*kv)->page_bytes());
  EXPECT_EQ((*kv)->device(), Device::kCpu);
  EXPECT_EQ((*kv)->layers().size(), 3u);
  EXPECT_EQ((*kv)->layers()[2].v.shape_string(), "[7, 16, 2, 64] f16");
}

TEST(KvCache, RefusesBadConfigs) {
  EXPECT_FALSE(KvCache::create(kv_cache_config(2, 2, 64, 100, DType::kQ8_0)).ok());
  EXPECT_FALSE(KvCache::create(kv_cache_config(2, 2, 64, 0, DType::kF32)).ok());
  EXPECT_FALSE(KvCache::create(kv_cache_config(0, 2, 64, 100, DType::kF32)).ok());
}

TEST(KvCache, CopySlotsMovesRowsInEveryLayerThroughTheBlockTable) {
  auto kv = KvCache::create(kv_cache_config(2, 2, 4, 64, DType::kF32));
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  const std::vector<int32_t> table = {3, 1, 0, 2};  // slot 16..31 lives in block 1, ...
  fill(**kv, table);
  // A tree rooted at slot 14 whose accepted path is nodes at slots 14, 17, 20, 29 -> slots 14, 15, 16, 17.
  const std::vector<int32_t> from = {14, 17, 20, 29}, to = {14, 15, 16, 17};
  ASSERT_TRUE((*kv)->copy_slots(table, from, to).ok());
  for (int64_t l = 0; l < 2; ++l) {
    for (size_t i = 0; i < from.size(); ++i) {
      for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(k_at(**kv, table, l, to[i], e), 1000.0f * l + from[i]);
      const float* v = static_cast<const float*>((*kv)->layers()[l].v.data);
      EXPECT_EQ(v[(table[to[i] / 16] * 16 + to[i] % 16) * 8], -(1000.0f * l + from[i]));
    }
    EXPECT_EQ(k_at(**kv, table, l, 13), 1000.0f * l + 13) << "rows not named stay";
    EXPECT_EQ(k_at(**kv, table, l, 29), 1000.0f * l + 29) << "a source row is copied, not cleared";
  }
}

TEST(KvCache, CopySlotsRefusesBadArguments) {
  auto kv = KvCache::create(kv_cache_config(1, 1, 4, 32, DType::kF32));
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> table = {0, 1};
  const std::vector<int32_t> a = {1, 2}, b = {3}, far = {40};
  EXPECT_EQ((*kv)->copy_slots(table, a, b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*kv)->copy_slots(table, far, b).code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> bad_table = {0, 9};
  const std::vector<int32_t> s20 = {20}, s1 = {1};
  EXPECT_EQ((*kv)->copy_slots(bad_table, s20, s1).code(), StatusCode::kOutOfRange);
}

// Several sequences' moves in one call (what the engine gives at the end of a step) land as the same moves
// made one sequence at a time; a bad sequence anywhere in the call refuses the whole call, moving nothing.
TEST(KvCache, CopySlotsOfSeveralSequencesInOneCall) {
  const KvCacheConfig c = kv_cache_config(2, 2, 4, 8 * 16, DType::kF32);
  auto one = KvCache::create(c), each = KvCache::create(c);
  ASSERT_TRUE(one.ok() && each.ok());
  const std::vector<int32_t> ta = {3, 1}, tb = {0, 5, 2};
  fill(**one, {0, 1, 2, 3, 4, 5, 6, 7});
  fill(**each, {0, 1, 2, 3, 4, 5, 6, 7});
  // a: path 0, 2, 3 of a tree at slot 12 (slot 14 is read by the first move, then written by the second);
  // b: a tree at slot 33 and its accepted nodes 35, 40.
  const std::vector<int32_t> fa = {14, 15}, da = {13, 14}, fb = {35, 40}, db = {34, 35};
  const std::vector<SlotMoves> both = {{ta, fa, da}, {tb, fb, db}};
  ASSERT_TRUE((*one)->copy_slots(both).ok());
  ASSERT_TRUE((*each)->copy_slots(ta, fa, da).ok());
  ASSERT_TRUE((*each)->copy_slots(tb, fb, db).ok());
  for (int32_t p = 0; p < c.n_blocks; ++p) {
    std::vector<uint8_t> x((*one)->page_bytes()), y((*each)->page_bytes());
    ASSERT_TRUE((*one)->read_page(p, x.data()).ok() && (*each)->read_page(p, y.data()).ok());
    EXPECT_EQ(x, y) << "page " << p;
  }
  // (fill through the identity table: a slot's value names its storage slot; a's slot 14 is storage slot 62)
  EXPECT_EQ(k_at(**one, ta, 1, 13), 1000.0f + 62) << "read before it was written";
  EXPECT_EQ(k_at(**one, ta, 1, 14), 1000.0f + 63);
  const std::vector<int32_t> far = {60};
  const std::vector<SlotMoves> bad = {{ta, da, fa}, {tb, far, {db.data(), 1}}};
  EXPECT_EQ((*one)->copy_slots(bad).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(k_at(**one, ta, 1, 14), 1000.0f + 63) << "the refused call moved nothing";
}

// A page leaves as host bytes (layer 0 K, layer 0 V, layer 1 K, ...) and comes back bit for bit, into another
// page too, leaving every other page alone: what the prefix cache's host tier does with evicted pages.
TEST(KvCache, PagesRoundTripBitExactThroughHostBytes) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    auto made = KvCache::create(kv_cache_config(3, 2, 8, 64, dt));  // 4 pages
    ASSERT_TRUE(made.ok()) << made.status().to_string();
    KvCache& kv = **made;
    // Every byte distinct per (tensor, offset), including NaN and denormal bit patterns of f16 / bf16.
    for (size_t l = 0; l < kv.layers().size(); ++l) {
      for (int which = 0; which < 2; ++which) {
        const TensorView& t = which == 0 ? kv.layers()[l].k : kv.layers()[l].v;
        auto* b = static_cast<uint8_t*>(t.data);
        for (uint64_t i = 0; i < t.n_bytes(); ++i) b[i] = static_cast<uint8_t>(i * 7 + l * 31 + which * 101);
      }
    }
    const uint64_t n = kv.page_bytes();
    ASSERT_EQ(n, 2u * 3 * 16 * 2 * 8 * traits(dt).block_bytes);
    std::vector<uint8_t> page2(n), page0(n), again(n);
    ASSERT_TRUE(kv.read_page(2, page2.data()).ok());
    ASSERT_TRUE(kv.read_page(0, page0.data()).ok());
    // The host layout: tensor t's slice of page p is its bytes [p * n / 6, (p + 1) * n / 6).
    const uint64_t slice = n / 6;
    const auto* v1 = static_cast<const uint8_t*>(kv.layers()[1].v.data);
    EXPECT_EQ(std::memcmp(page2.data() + 3 * slice, v1 + 2 * slice, slice), 0) << "layer 1 V is the 4th slice";
    // Page 2 written over page 0, then read back: the same bytes; pages 1 and 3 untouched.
    std::vector<uint8_t> page1(n), page3(n);
    ASSERT_TRUE(kv.read_page(1, page1.data()).ok());
    ASSERT_TRUE(kv.read_page(3, page3.data()).ok());
    ASSERT_TRUE(kv.write_page(0, page2.data()).ok());
    ASSERT_TRUE(kv.read_page(0, again.data()).ok());
    EXPECT_EQ(again, page2) << dtype_name(dt);
    ASSERT_TRUE(kv.read_page(1, again.data()).ok());
    EXPECT_EQ(again, page1);
    ASSERT_TRUE(kv.read_page(3, again.data()).ok());
    EXPECT_EQ(again, page3);
    // And the original page 0 restored.
    ASSERT_TRUE(kv.write_page(0, page0.data()).ok());
    ASSERT_TRUE(kv.read_page(0, again.data()).ok());
    EXPECT_EQ(again, page0);
  }
}

TEST(KvCache, PagesRefuseBadArguments) {
  auto kv = KvCache::create(kv_cache_config(1, 1, 4, 32, DType::kF32));
  ASSERT_TRUE(kv.ok());
  std::vector<uint8_t> buf((*kv)->page_bytes());
  EXPECT_EQ((*kv)->read_page(2, buf.data()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*kv)->read_page(-1, buf.data()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*kv)->write_page(2, buf.data()).code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*kv)->read_page(0, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*kv)->write_page(0, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace saker
