// KvCache: geometry from layer sizes, and copy_slots (a speculative tree's accepted rows moving to consecutive
// slots) through a block table that is not the identity.
#include <gtest/gtest.h>

#include <vector>

#include "engine/kv_cache.h"

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
  EXPECT_TRUE(c.host_storage);
}

TEST(KvCache, CopySlotsMovesRowsInEveryLayerThroughTheBlockTable) {
  auto kv = KvCache::create(kv_cache_config(2, 2, 4, 64, DType::kF32));
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  const std::vector<int32_t> table = {3, 1, 0, 2};  // slot 16..31 lives in block 1, ...
  fill(*kv, table);
  // A tree rooted at slot 14 whose accepted path is nodes at slots 14, 17, 20, 29 -> slots 14, 15, 16, 17.
  const std::vector<int32_t> from = {14, 17, 20, 29}, to = {14, 15, 16, 17};
  ASSERT_TRUE(kv->copy_slots(table, from, to).ok());
  for (int64_t l = 0; l < 2; ++l) {
    for (size_t i = 0; i < from.size(); ++i) {
      for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(k_at(*kv, table, l, to[i], e), 1000.0f * l + from[i]);
      const float* v = static_cast<const float*>(kv->layers()[l].v.data);
      EXPECT_EQ(v[(table[to[i] / 16] * 16 + to[i] % 16) * 8], -(1000.0f * l + from[i]));
    }
    EXPECT_EQ(k_at(*kv, table, l, 13), 1000.0f * l + 13) << "rows not named stay";
    EXPECT_EQ(k_at(*kv, table, l, 29), 1000.0f * l + 29) << "a source row is copied, not cleared";
  }
}

TEST(KvCache, CopySlotsRefusesBadArguments) {
  auto kv = KvCache::create(kv_cache_config(1, 1, 4, 32, DType::kF32));
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> table = {0, 1};
  const std::vector<int32_t> a = {1, 2}, b = {3}, far = {40};
  EXPECT_EQ(kv->copy_slots(table, a, b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv->copy_slots(table, far, b).code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> bad_table = {0, 9};
  const std::vector<int32_t> s20 = {20}, s1 = {1};
  EXPECT_EQ(kv->copy_slots(bad_table, s20, s1).code(), StatusCode::kOutOfRange);
  KvCacheConfig no_host = kv_cache_config(1, 1, 4, 32, DType::kF32);
  no_host.host_storage = false;
  auto device = KvCache::create(no_host);
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(device->copy_slots(table, s1, s1).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace saker
