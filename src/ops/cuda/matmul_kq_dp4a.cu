// The width-invariant K-quant matmul for the narrowest calls (1 .. kKqDp4aMaxRows activation rows) with
// __dp4a: one warp per output row, its loads straight from global memory (the arithmetic and its canonical
// order: kq_dp4a_units.cuh). On Hopper the streaming kernel (matmul_kq_stream.cu) runs the same arithmetic on
// bulk-copied stages instead, where it is selected.
#include <cuda_runtime.h>

#include <type_traits>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_dp4a_units.cuh"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

constexpr int kWarps = 4;  // output rows per thread block

template <DType T, int R>
__global__ void __launch_bounds__(kWarps * 32)
    kq_dp4a_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_out, int n_blocks,
                   const int8_t* __restrict__ xq,     // [rows, n_in] codes
                   const KxBlock* __restrict__ kx,    // [rows, n_blocks]
                   int64_t n_in, int rows, float* __restrict__ out, int64_t out_stride, int accumulate) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWarps;  // the block's rows: first .. first + 3
  prefetch_weights_l2(w, row_bytes, first, kWarps, n_out);
  chain_in();
  const int lane = threadIdx.x & 31;
  const int64_t o = first + (threadIdx.x >> 5);
  if (o >= n_out) return;  // whole warp
  dp4a::RowAcc<R> acc(rows);
  dp4a::row_span<T, q8::GlobalBytes, R>(w + o * row_bytes, 0, lane >> 3, lane & 7, 0, n_blocks, xq, kx, n_in, n_blocks,
                                        acc);
  __syncwarp();
  dp4a::row_finish<R>(acc, lane, rows, o, out, out_stride, accumulate);
}

template <DType T>
Status launch_dp4a_for(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                       int64_t out_stride, bool accumulate, cudaStream_t stream) {
  const int64_t blocks = (w.n_out + kWarps - 1) / kWarps;
  if (blocks > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int n_blocks = static_cast<int>(w.n_in / kq::kBlock);
  auto launch = [&](auto r) {
    constexpr int R = decltype(r)::value;
    launch_chained(kq_dp4a_kernel<T, R>, static_cast<unsigned>(blocks), kWarps * 32, 0, stream, wp, matrix_row_bytes(w),
                   w.n_out, n_blocks, xq, kx, w.n_in, static_cast<int>(rows), out, out_stride, accumulate ? 1 : 0);
  };
  static_assert(kKqDp4aMaxRows <= 2, "row tiles of the dp4a kernel");
  if (rows == 1) launch(std::integral_constant<int, 1>{});
  else launch(std::integral_constant<int, 2>{});
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status{};
}

}  // namespace

Status launch_kq_dp4a(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                      int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ4_K: return launch_dp4a_for<DType::kQ4_K>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K: return launch_dp4a_for<DType::kQ5_K>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K: return launch_dp4a_for<DType::kQ6_K>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no dp4a kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
