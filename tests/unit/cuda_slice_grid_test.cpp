// The fixed-slice attention's grid along the key slices (ops/cuda/slice_grid.h), checked on the host: the
// shortcut search picks what trying every grid picks, a launch that fits the GPU once keeps one slice a block,
// and long contexts get blocks that stay resident.
#include <gtest/gtest.h>

#include <cstdint>

#include "ops/cuda/slice_grid.h"

namespace saker {
namespace {

// Every grid tried, written out independently of the header.
int32_t brute_force(int32_t n_splits, int64_t blocks_a_slice, int64_t resident) {
  int32_t best = 1;
  int64_t best_cost = -1;
  for (int32_t grid = 1; grid <= n_splits; ++grid) {
    const int64_t waves = (grid * blocks_a_slice + resident - 1) / resident;
    const int64_t per_block = (n_splits + grid - 1) / grid;
    const int64_t cost = waves * (per_block + 1);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = grid;
    }
  }
  return best;
}

TEST(CudaSliceGrid, EqualsTryingEveryGrid) {
  int mismatches = 0;
  for (int32_t n = 1; n <= 1024; ++n) {
    for (int64_t blocks : {1, 2, 3, 8, 32, 100, 256, 1000, 4096}) {
      for (int64_t resident : {1, 7, 132, 264, 396, 1056}) {
        const int32_t got = cuda::best_slice_grid(n, blocks, resident);
        const int32_t want = brute_force(n, blocks, resident);
        if (got != want && ++mismatches <= 5) {
          ADD_FAILURE() << n << " splits, " << blocks << " blocks a slice, " << resident << " resident: " << got
                        << " blocks along the slices, trying every grid gives " << want;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CudaSliceGrid, OneSliceABlockWhenTheLaunchFitsOnce) {
  // 8 KV heads x one token tile, 396 blocks resident (three a SM of 132): up to 49 slices fit at once.
  for (int32_t n : {1, 2, 5, 33, 49}) EXPECT_EQ(cuda::best_slice_grid(n, 8, 396), n) << n << " splits";
}

TEST(CudaSliceGrid, LongContextsKeepTheBlocksResident) {
  // One decode row at 32,768 keys: 257 slices of 128 keys x 8 KV heads. The blocks fit in one wave and take
  // five or six slices each (43 x 8 = 344 blocks), rather than 2,056 blocks in six waves.
  const int32_t grid = cuda::best_slice_grid(257, 8, 396);
  EXPECT_EQ(grid, 43);
  EXPECT_LE(grid * 8, 396);
  // Bad inputs do not divide by zero: no resident count or no other dimension counts as one.
  EXPECT_GE(cuda::best_slice_grid(100, 0, 0), 1);
  EXPECT_EQ(cuda::best_slice_grid(0, 8, 396), 1);
}

}  // namespace
}  // namespace saker
