#pragma once
// How many blocks the fixed-slice tensor-core attention (attention_decode_mma.cu) launches along the key
// slices, each block taking slices x, x + grid, ... Host-only, apart from the kernel so that a unit test checks
// the choice on a machine without a GPU.
#include <cstdint>

namespace saker::cuda {

// The grid (1 .. n_splits blocks along the slices; blocks_a_slice: the launch's other dimensions, KV heads x
// token tiles) whose blocks finish the slices soonest, counting a block's start as one slice of work (gathering
// its rows and queries, its first tile's latency) and the blocks past the `resident` ones the GPU holds at once
// as later waves: cost(grid) = waves(grid) x (ceil(n_splits / grid) + 1); the smallest grid of the lowest cost.
// A launch that fits the GPU once keeps one slice a block (cost 2, the least there is).
// Waves grow with the grid, so for each count k of slices a block only the smallest grid giving it,
// ceil(n_splits / k), can win: every grid up to sqrt(n_splits) is tried, then those of k up to it (~2
// sqrt(n_splits) tries a launch instead of n_splits; the same choice).
inline int32_t best_slice_grid(int32_t n_splits, int64_t blocks_a_slice, int64_t resident) {
  if (n_splits <= 1) return 1;
  if (blocks_a_slice < 1) blocks_a_slice = 1;
  if (resident < 1) resident = 1;
  int32_t best = n_splits;
  int64_t best_cost = INT64_MAX;
  auto consider = [&](int64_t grid) {
    if (grid < 1 || grid > n_splits) return;
    const int64_t waves = (grid * blocks_a_slice + resident - 1) / resident;
    const int64_t cost = waves * ((n_splits + grid - 1) / grid + 1);
    if (cost < best_cost || (cost == best_cost && grid < best)) {
      best_cost = cost;
      best = static_cast<int32_t>(grid);
    }
  };
  int64_t grid = 1;
  for (; grid * grid <= n_splits; ++grid) consider(grid);
  consider(grid);
  for (int64_t k = 1; k * k <= n_splits; ++k) consider((n_splits + k - 1) / k);
  return best;
}

}  // namespace saker::cuda
