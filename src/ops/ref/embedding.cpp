#include "ops/ref/embedding.h"

#include "formats/quant/codec.h"
#include "ops/ref/check.h"

namespace saker::ref {

Status embedding(const TensorView& table, std::span<const int32_t> tokens, const TensorView& out) {
  constexpr const char* kOp = "ref::embedding";
  SAKER_RETURN_IF_ERROR(check_packed_rows(table, kOp, "table"));
  if (table.n_dims != 2 || !can_dequantize(table.dtype)) {
    return make_error(StatusCode::kUnsupported, "{}: table {} must be 2-D [n_vocab, n_embd] of a dtype with a "
                      "dequantiser", kOp, table.shape_string());
  }
  const int64_t n_vocab = table.dim(0), n_embd = table.dim(1);
  SAKER_RETURN_IF_ERROR(check_f32_rows(out, kOp, "out", n_embd));
  if (out.n_rows() != static_cast<int64_t>(tokens.size())) {
    return make_error(StatusCode::kInvalidArgument, "{}: out {} has {} rows for {} tokens", kOp,
                      out.shape_string(), out.n_rows(), tokens.size());
  }
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= n_vocab) {
      return make_error(StatusCode::kOutOfRange, "{}: token {} at index {} is outside the vocabulary of {}", kOp,
                        tokens[t], t, n_vocab);
    }
  }
  for (size_t t = 0; t < tokens.size(); ++t) {
    SAKER_RETURN_IF_ERROR(dequantize_row(table.dtype, table.row(tokens[t]), static_cast<float*>(out.row(t)), n_embd)
                              .with_context(kOp));
  }
  return {};
}

}  // namespace saker::ref
