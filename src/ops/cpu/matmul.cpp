#include "ops/cpu/matmul.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu/act_quant.h"
#include "ops/cpu/blas_matmul.h"
#include "ops/cpu/convert.h"
#include "ops/cpu/vec_dot.h"
#include "ops/ref/matmul.h"

namespace saker::cpu {

namespace {

// Rows of x (or out) one stride apart, as sgemm needs: 2-D, or contiguous.
bool uniform_rows(const TensorView& t) { return t.n_dims <= 2 || t.is_contiguous(); }

void dot_f32_portable(const void* w, const float* const* x, int n_rows, int64_t n, float* out) {
  for (int r = 0; r < n_rows; ++r) out[r] = dot_f32_generic(static_cast<const float*>(w), x[r], n);
}

// Calls dot for weight row `wr` against all token rows, kMaxDotRows at a time; row_of(t) gives token t's
// activations.
template <typename Dot, typename RowOf>
void dot_all_tokens(Dot dot, const void* wr, int64_t n_tokens, int64_t n_in, RowOf row_of, const TensorView& out,
                    int64_t o) {
  using Row = decltype(row_of(int64_t{0}));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxDotRows) {
    const int n_rows = static_cast<int>(std::min<int64_t>(kMaxDotRows, n_tokens - t0));
    Row rows[kMaxDotRows];
    float results[kMaxDotRows];
    for (int r = 0; r < n_rows; ++r) rows[r] = row_of(t0 + r);
    dot(wr, rows, n_rows, n_in, results);
    for (int r = 0; r < n_rows; ++r) static_cast<float*>(out.row(t0 + r))[o] = results[r];
  }
}

// Rows per thread-pool task: enough multiply-adds that scheduling costs little.
int64_t min_rows_per_task(int64_t n_in, int64_t n_tokens) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n_in * n_tokens));
}

void matmul_quant(const TensorView& x, const TensorView& w, const TensorView& out, QuantDotFn dot) {
  const int64_t n_tokens = x.n_rows(), n_out = w.dim(0), n_in = w.dim(1);
  const int64_t n_blocks = n_in / kActBlock;
  const ActQuant style = act_quant_for(w.dtype);
  std::vector<ActBlock> xq(static_cast<size_t>(n_tokens * n_blocks));
  ThreadPool::current().parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      quantize_act_row(static_cast<const float*>(x.row(t)), &xq[t * n_blocks], n_in, style);
    }
  }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n_in)));
  ThreadPool::current().parallel_for(n_out, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      dot_all_tokens(dot, w.row(o), n_tokens, n_in, [&](int64_t t) -> const ActBlock* { return &xq[t * n_blocks]; },
                     out, o);
    }
  }, min_rows_per_task(n_in, n_tokens));
}

void matmul_float(const TensorView& x, const TensorView& w, const TensorView& out, FloatDotFn dot) {
  const int64_t n_tokens = x.n_rows(), n_out = w.dim(0), n_in = w.dim(1);
  ThreadPool::current().parallel_for(n_out, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      dot_all_tokens(dot, w.row(o), n_tokens, n_in, [&](int64_t t) { return static_cast<const float*>(x.row(t)); },
                     out, o);
    }
  }, min_rows_per_task(n_in, n_tokens));
}

// Any dtype: each weight row is dequantised once into f32 and dotted with every token row.
void matmul_dequant(const TensorView& x, const TensorView& w, const TensorView& out, FloatDotFn dot) {
  const int64_t n_tokens = x.n_rows(), n_out = w.dim(0), n_in = w.dim(1);
  ThreadPool::current().parallel_for(n_out, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(n_in));
    for (int64_t o = begin; o < end; ++o) {
      to_f32_row(w.dtype, w.row(o), row.data(), n_in, false);  // dtype checked by check_matmul_args
      dot_all_tokens(dot, row.data(), n_tokens, n_in, [&](int64_t t) { return static_cast<const float*>(x.row(t)); },
                     out, o);
    }
  }, min_rows_per_task(n_in, n_tokens));
}

}  // namespace

Status matmul(const TensorView& x, const TensorView& w, const TensorView& out, const MatmulOptions& options) {
  SAKER_RETURN_IF_ERROR(ref::check_matmul_args(x, w, out, "cpu::matmul"));
  const int64_t n_tokens = x.n_rows(), n_out = w.dim(0), n_in = w.dim(1);
  if (n_tokens == 0 || n_out == 0) return {};

  const bool blas_fits = n_tokens <= INT_MAX && n_out <= INT_MAX && n_in <= INT_MAX;
  const int64_t blas_min_tokens =
      options.blas_min_tokens > 0 ? options.blas_min_tokens : traits(w.dtype).quantized ? 32 : 16;
  if (options.blas && blas_available() && n_tokens >= blas_min_tokens && blas_fits && uniform_rows(x) &&
      uniform_rows(out)) {
    return blas_matmul(x, w, out);
  }
  const bool simd = options.simd && have_avx2();
  if (QuantDotFn dot = simd ? avx2_quant_dot(w.dtype) : nullptr) {
    matmul_quant(x, w, out, dot);
  } else if (FloatDotFn fdot = simd ? avx2_float_dot(w.dtype) : nullptr) {
    matmul_float(x, w, out, fdot);
  } else {
    matmul_dequant(x, w, out, simd ? avx2_float_dot(DType::kF32) : dot_f32_portable);
  }
  return {};
}

}  // namespace saker::cpu
