#pragma once
// K/V row moves inside one allocation of equally strided tensors (CudaKvStorage: every layer's K and V), the
// moves of every sequence of an engine step in one launch.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"

namespace saker::cuda {

// base: n_tensors tensors, tensor t at base + t * tensor_stride bytes, slot s's row at s * row_bytes in each.
// moves: device int64 [2 * n_moves], (from slot, to slot) pairs grouped by sequence; groups: device int32
// [n_groups + 1], group g's pairs are [groups[g], groups[g + 1]). A group's moves are done in order, one by one
// (a thread carries one word of every row of its group, so a move reads what an earlier one wrote); different
// groups must not share slots. Queued on `stream`.
Status move_kv_rows(void* base, uint64_t tensor_stride, int64_t n_tensors, uint64_t row_bytes, const int64_t* moves,
                    const int32_t* groups, int64_t n_groups, cudaStream_t stream);

}  // namespace saker::cuda
