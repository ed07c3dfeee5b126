#include "ops/cpu/blas_matmul.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu/convert.h"
#include "ops/cpu/matmul.h"

#if SAKER_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace saker::cpu {

#if SAKER_HAVE_OPENBLAS

bool blas_available() { return true; }

Status blas_matmul(const TensorView& x, const TensorView& w, const TensorView& out) {
  // saker's pool already runs one tile per core; OpenBLAS's own threads would only oversubscribe it.
  static std::once_flag single_thread;
  std::call_once(single_thread, [] { openblas_set_num_threads(1); });

  const int64_t n_tokens = x.n_rows(), n_out = w.dim(0), n_in = w.dim(1);
  // Tiles of up to 256 weight rows (measured on a 4096 x 4096 Q4_K, 512 rows: 16-row tiles cost 1.6x more
  // time, 1024-row tiles no less), but at least two tiles per thread so the pool stays balanced.
  const int64_t per_thread = (n_out + 2 * ThreadPool::current().size() - 1) / (2 * ThreadPool::current().size());
  const int64_t tile_rows = std::clamp<int64_t>((per_thread + 15) / 16 * 16, 32, 256);
  const int64_t n_tiles = (n_out + tile_rows - 1) / tile_rows;
  const int64_t ldx = x.n_dims >= 2 ? x.stride_bytes[x.n_dims - 2] / 4 : n_in;
  const int64_t ldo = out.n_dims >= 2 ? out.stride_bytes[out.n_dims - 2] / 4 : n_out;
  const bool direct = w.dtype == DType::kF32;  // f32 weights are used in place
  const auto* x0 = static_cast<const float*>(x.data);
  auto* out0 = static_cast<float*>(out.data);
  ThreadPool::current().parallel_for(n_tiles, [&](int64_t begin, int64_t end) {
    std::vector<float> tile(direct ? 0 : static_cast<size_t>(tile_rows * n_in));
    for (int64_t ti = begin; ti < end; ++ti) {
      const int64_t r0 = ti * tile_rows, rows = std::min(tile_rows, n_out - r0);
      const float* wt = static_cast<const float*>(w.row(r0));
      int64_t ldw = w.stride_bytes[0] / 4;
      if (!direct) {
        for (int64_t r = 0; r < rows; ++r) to_f32_row(w.dtype, w.row(r0 + r), &tile[r * n_in], n_in);
        wt = tile.data();
        ldw = n_in;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_tokens), static_cast<int>(rows),
                  static_cast<int>(n_in), 1.0f, x0, static_cast<int>(ldx), wt, static_cast<int>(ldw), 0.0f, out0 + r0,
                  static_cast<int>(ldo));
    }
  });
  return {};
}

#else

bool blas_available() { return false; }

Status blas_matmul(const TensorView&, const TensorView&, const TensorView&) {
  return make_error(StatusCode::kUnsupported, "cpu::matmul: saker was built without OpenBLAS");
}

#endif

}  // namespace saker::cpu
