// The per-device caches of ops/cuda/per_device_cache.h, checked on the host: a figure is worked out once per
// device (and key), later calls read it, a failed computation is not kept, and keys past the slots are
// computed at every call without displacing the kept ones.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "ops/cuda/per_device_cache.h"

namespace saker {
namespace {

using cuda::detail::once_per_device;
using cuda::detail::once_per_device_key;

TEST(PerDeviceCache, OnceADevice) {
  static std::atomic<int64_t> cache[64] = {};
  int calls = 0;
  auto compute = [&](int64_t v) {
    return [&calls, v]() -> Result<int64_t> {
      ++calls;
      return v;
    };
  };
  EXPECT_EQ(once_per_device(cache, 0, compute(7)).value(), 7);
  EXPECT_EQ(once_per_device(cache, 0, compute(9)).value(), 7);  // kept
  EXPECT_EQ(once_per_device(cache, 1, compute(9)).value(), 9);  // another device
  EXPECT_EQ(calls, 2);
}

TEST(PerDeviceCache, OnceADeviceAndKey) {
  static std::atomic<uint64_t> cache[64][2] = {};
  int calls = 0;
  auto compute = [&](int64_t v) {
    return [&calls, v]() -> Result<int64_t> {
      ++calls;
      return v;
    };
  };
  EXPECT_EQ(once_per_device_key(cache, 0, 100, compute(3)).value(), 3);
  EXPECT_EQ(once_per_device_key(cache, 0, 200, compute(4)).value(), 4);
  EXPECT_EQ(once_per_device_key(cache, 0, 100, compute(5)).value(), 3);  // kept for key 100
  EXPECT_EQ(once_per_device_key(cache, 0, 200, compute(5)).value(), 4);  // and for key 200
  EXPECT_EQ(calls, 2);
  // Both slots taken: a third key is computed each time, the first two stay.
  EXPECT_EQ(once_per_device_key(cache, 0, 300, compute(6)).value(), 6);
  EXPECT_EQ(once_per_device_key(cache, 0, 300, compute(8)).value(), 8);
  EXPECT_EQ(once_per_device_key(cache, 0, 100, compute(5)).value(), 3);
  EXPECT_EQ(calls, 4);
  // Another device has its own slots; a key's value is never another key's.
  EXPECT_EQ(once_per_device_key(cache, 3, 100, compute(11)).value(), 11);
  EXPECT_EQ(once_per_device_key(cache, 0, 100, compute(5)).value(), 3);
}

TEST(PerDeviceCache, AFailureIsNotKept) {
  static std::atomic<uint64_t> cache[64][4] = {};
  const Result<int64_t> failed =
      once_per_device_key(cache, 0, 1, []() -> Result<int64_t> { return make_error(StatusCode::kInternal, "no"); });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(once_per_device_key(cache, 0, 1, []() -> Result<int64_t> { return 12; }).value(), 12);
}

}  // namespace
}  // namespace saker
