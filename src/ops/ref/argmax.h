#pragma once
// Row-wise argmax (greedy sampling), reference version. Ties go to the lowest index, so greedy decoding and
// speculative verification pick the same token from equal logits. NaN entries are skipped; a row with no
// comparable entry (all NaN, or empty) gives -1, which the caller must treat as an error.
#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

Status argmax(const TensorView& logits,  // [n_rows, n_vocab] f32
              std::span<int32_t> out);   // [n_rows] index of the largest logit of each row

}  // namespace saker::ref
