#pragma once
// TensorShard: which slice of a model one tensor-parallel rank holds (Megatron-style):
//   attn_q | attn_k | attn_v (and their biases)  column-parallel: rank r of N holds q heads
//                                                [r n_head / N, (r + 1) n_head / N) and kv heads likewise
//   attn_output                                  row-parallel: the input columns of its q heads; the product is
//                                                a partial sum, all-reduced before it joins the residual stream
//   ffn_gate | ffn_up                            column-parallel: n_ff / N rows each
//   ffn_down                                     row-parallel: its n_ff / N input columns, then all-reduced
//   output (or the tied token_embd)              split by vocabulary rows: rank r computes logits
//                                                [r n_vocab / N, (r + 1) n_vocab / N), the row is their concatenation
//   token_embd, norms, q/k norms (per head_dim)  replicated
// Slices are views of the file's tensors (no copies): a row slice moves the data pointer by whole rows, a column
// slice by whole quantization blocks and keeps the row stride.
#include <cstdint>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/model_weights.h"

namespace saker {

struct TensorShard {
  int rank = 0;
  int size = 1;
  bool split() const { return size > 1; }
  // Rank r's part [first(n), first(n) + count(n)) of n items split as evenly as the count allows (heads and
  // n_ff divide exactly, checked by check_tensor_parallel; vocabulary rows need not).
  int64_t first(int64_t n) const { return n * rank / size; }
  int64_t count(int64_t n) const { return n * (rank + 1) / size - n * rank / size; }
};

// Rows [first, first + n) of a matrix [rows, cols], or elements [first, first + n) of a plain-typed vector.
Result<TensorView> slice_rows(const TensorView& t, int64_t first, int64_t n, const std::string& name);
// Columns [first, first + n) of a matrix [rows, cols]: whole quantization blocks only (errors name the tensor).
Result<TensorView> slice_columns(const TensorView& t, int64_t first, int64_t n, const std::string& name);

// Whether a dense decoder splits over n_ranks ranks: attention heads, kv heads and n_ff divide by n_ranks, and
// each rank's input columns of attn_output and ffn_down are whole quantization blocks of their dtype. The error
// names the hyper-parameter or the tensor and the divisibility it lacks.
Status check_tensor_parallel(const ModelWeights& weights, int n_ranks);

}  // namespace saker
