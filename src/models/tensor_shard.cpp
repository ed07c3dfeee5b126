#include "models/tensor_shard.h"

#include <fmt/format.h>

namespace saker {

Result<TensorView> slice_rows(const TensorView& t, int64_t first, int64_t n, const std::string& name) {
  if (t.n_dims < 1 || t.n_dims > 2 || first < 0 || n < 0 || first + n > t.dim(0)) {
    return make_error(StatusCode::kInvalidArgument, "{} {}: rows [{}, {}) are not a row slice of it", name,
                      t.shape_string(), first, first + n);
  }
  TensorView s = t;
  s.shape[0] = n;
  if (t.n_dims == 2) {
    s.data = static_cast<char*>(t.data) + first * t.stride_bytes[0];
    return s;
  }
  const DTypeTraits& tr = traits(t.dtype);
  if (first % tr.block_elements != 0 || n % tr.block_elements != 0) {
    return make_error(StatusCode::kUnsupported, "{} {}: elements [{}, {}) are not whole {}-element blocks", name,
                      t.shape_string(), first, first + n, tr.block_elements);
  }
  s.data = static_cast<char*>(t.data) + first / tr.block_elements * tr.block_bytes;
  return s;
}

Result<TensorView> slice_columns(const TensorView& t, int64_t first, int64_t n, const std::string& name) {
  if (t.n_dims != 2 || first < 0 || n < 0 || first + n > t.dim(1)) {
    return make_error(StatusCode::kInvalidArgument, "{} {}: columns [{}, {}) are not a column slice of it", name,
                      t.shape_string(), first, first + n);
  }
  const DTypeTraits& tr = traits(t.dtype);
  if (first % tr.block_elements != 0 || n % tr.block_elements != 0) {
    return make_error(StatusCode::kUnsupported,
                      "{} {}: columns [{}, {}) are not whole {}-element quantization blocks", name, t.shape_string(),
                      first, first + n, tr.block_elements);
  }
  TensorView s = t;  // same row stride (stride_bytes[0]); the innermost stride stays the dtype's
  s.shape[1] = n;
  s.data = static_cast<char*>(t.data) + first / tr.block_elements * tr.block_bytes;
  return s;
}

Status check_tensor_parallel(const ModelWeights& w, int n_ranks) {
  const ModelHParams& h = w.hparams();
  if (n_ranks < 1) {
    return make_error(StatusCode::kInvalidArgument, "tensor parallelism needs at least 1 rank (got {})", n_ranks);
  }
  const auto divides = [&](int64_t n, const char* what) -> Status {
    if (n % n_ranks == 0) return {};
    return make_error(StatusCode::kUnsupported,
                      "tensor parallelism over {} ranks needs the model's {} {} divisible by {}", n_ranks, n, what,
                      n_ranks);
  };
  SAKER_RETURN_IF_ERROR(divides(h.n_head, "attention heads (attention.head_count)"));
  SAKER_RETURN_IF_ERROR(divides(h.n_head_kv, "kv heads (attention.head_count_kv)"));
  SAKER_RETURN_IF_ERROR(divides(h.n_ff, "MLP columns (feed_forward_length)"));
  if (h.n_vocab < n_ranks) {
    return make_error(StatusCode::kUnsupported, "{} vocabulary rows cannot be split over {} ranks", h.n_vocab,
                      n_ranks);
  }
  // The row-parallel matrices: each rank's input columns must start and end on quantization blocks.
  for (int64_t l = 0; l < h.n_layer; ++l) {
    for (const auto& [part, cols] :
         {std::pair{"attn_output.weight", h.q_dim()}, std::pair{"ffn_down.weight", h.n_ff}}) {
      const std::string name = fmt::format("blk.{}.{}", l, part);
      const TensorView* t = w.find(name);
      if (!t) continue;  // binding names the missing tensor
      const int64_t block = traits(t->dtype).block_elements, per_rank = cols / n_ranks;
      if (per_rank % block != 0) {
        return make_error(StatusCode::kUnsupported,
                          "tensor parallelism over {} ranks gives each rank {} of the {} input columns of {} ({}), "
                          "not a whole number of its {}-element quantization blocks (needs {} divisible by {} x {})",
                          n_ranks, per_rank, cols, name, dtype_name(t->dtype), block, cols, n_ranks, block);
      }
    }
  }
  return {};
}

}  // namespace saker
