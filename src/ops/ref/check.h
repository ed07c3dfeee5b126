#pragma once
// Argument checks shared by the CPU ops (ref/ and cpu/): every op validates its views the same way and
// names the op and the tensor in its error, so a caller's mistake comes back as a Status, never a crash.
#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

// A host tensor of dtype F32 whose innermost dimension is contiguous, with n_cols columns (any when < 0).
// Rows may be strided (a column slice of a wider tensor is fine: read it through TensorView::row).
Status check_f32_rows(const TensorView& t, const char* op, const char* name, int64_t n_cols = -1);

// A host tensor of `type` (any dtype) whose rows are whole blocks and whose innermost dimension is packed.
Status check_packed_rows(const TensorView& t, const char* op, const char* name);

// Both tensors have the same number of rows (all dimensions but the innermost, flattened).
Status check_same_rows(const TensorView& a, const TensorView& b, const char* op, const char* name_a,
                       const char* name_b);

}  // namespace saker::ref
