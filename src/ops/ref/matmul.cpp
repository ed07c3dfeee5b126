#include "ops/ref/matmul.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "formats/quant/codec.h"
#include "ops/ref/check.h"

namespace saker::ref {

Status check_matmul_args(const TensorView& x, const TensorView& w, const TensorView& out, const char* op) {
  if (!can_dequantize(w.dtype)) {
    return make_error(StatusCode::kUnsupported, "{}: weight {} has a dtype with no dequantiser", op,
                      w.shape_string());
  }
  SAKER_RETURN_IF_ERROR(check_packed_rows(w, op, "weight"));
  if (w.n_dims != 2) {
    return make_error(StatusCode::kInvalidArgument, "{}: weight {} must be 2-D [n_out, n_in]", op,
                      w.shape_string());
  }
  SAKER_RETURN_IF_ERROR(check_f32_rows(x, op, "x", w.dim(1)));
  SAKER_RETURN_IF_ERROR(check_f32_rows(out, op, "out", w.dim(0)));
  SAKER_RETURN_IF_ERROR(check_same_rows(x, out, op, "x", "out"));
  return {};
}

Status matmul(const TensorView& x, const TensorView& w, const TensorView& out) {
  SAKER_RETURN_IF_ERROR(check_matmul_args(x, w, out, "ref::matmul"));
  const int64_t n_tokens = x.n_rows();
  const int64_t n_out = w.dim(0);
  const int64_t n_in = w.dim(1);
  // Output rows are independent, so splitting them over threads cannot change a single bit of the result;
  // it only keeps the oracle usable on real model sizes.
  const int64_t min_rows = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n_in * n_tokens));
  ThreadPool::current().parallel_for(
      n_out,
      [&](int64_t begin, int64_t end) {
        std::vector<float> w_row(static_cast<size_t>(n_in));
        for (int64_t o = begin; o < end; ++o) {
          // Cannot fail: the dtype and the row length were checked above.
          (void)dequantize_row(w.dtype, w.row(o), w_row.data(), n_in);
          for (int64_t t = 0; t < n_tokens; ++t) {
            const float* xr = static_cast<const float*>(x.row(t));
            double acc = 0.0;
            for (int64_t i = 0; i < n_in; ++i) acc += static_cast<double>(xr[i]) * w_row[i];
            static_cast<float*>(out.row(t))[o] = static_cast<float>(acc);
          }
        }
      },
      min_rows);
  return {};
}

}  // namespace saker::ref
