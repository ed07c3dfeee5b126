// The width-invariant K-quant matmul's entry: x quantised once per call (kq_canon.h's activation blocks),
// then the dp4a kernel for the narrowest calls (one warp streams one weight row: the fastest at decode) or
// the tensor-core kernel beyond. Both compute the canonical order, so which one ran never shows in the bits.
// SAKER_CUDA_MATMUL=kqmma sends every row count to the tensor-core kernel (to measure the split); kqwg* sends
// Q4_K / Q5_K calls of 2-64 rows to the warpgroup-MMA kernel (matmul_kq_wgmma.cu).
#include <cuda_runtime.h>

#include "core/env.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

// ---- activation quantisation: one warp per 256-element block (kq_quantize_warp), no shared memory or
// barrier: a matmul waits on this kernel, so its latency is what counts.
constexpr int kQuantWarps = 8;

// Block blk is block b of row r (n_row_blocks a row, the last one partial where n_in is not a multiple of 256).
__global__ void __launch_bounds__(kQuantWarps * 32)
    kx_quantize_kernel(const float* __restrict__ x, int8_t* __restrict__ xq, KxBlock* __restrict__ kx, int64_t n_blk,
                       int64_t n_in, int64_t n_row_blocks) {
  chain_in();
  const int64_t blk = static_cast<int64_t>(blockIdx.x) * kQuantWarps + (threadIdx.x >> 5);
  if (blk >= n_blk) return;  // whole warp
  const int64_t r = blk / n_row_blocks, b = blk - r * n_row_blocks;
  const int64_t at = r * n_in + b * kq::kBlock;
  const int64_t left = n_in - b * kq::kBlock;
  kq_quantize_warp(x + at, xq + at, kx + blk, threadIdx.x & 31, left < kq::kBlock ? static_cast<int>(left) : kq::kBlock);
}

// Calls of up to this many rows take the dp4a kernel: one row, and two where the tensor-core kernel has no TMA
// stages. With them two rows run faster there: H100, 8B Q4_K_M verify step after 512 tokens, two rows 3.82 /
// 3.86 ms on the tensor-core kernel against 4.29 / 4.24 on dp4a, while one row stays on dp4a (3.48 against
// 3.58-3.59; docs/performance.md). Not measured off Hopper, where two rows stay on dp4a.
int64_t kq_dp4a_rows() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return kKqDp4aMaxRows;
  return kq_tma_stages_on(device) ? 1 : kKqDp4aMaxRows;
}

bool kq_force_mma() {
  static const bool force = cuda_matmul_is("kqmma");
  return force;
}

}  // namespace

bool kq_kernel_kquant(DType type) { return type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ6_K; }

bool kq_kernel_takes_type(DType type, int64_t n_in) {
  switch (type) {
    case DType::kQ4_K: case DType::kQ5_K: case DType::kQ6_K: case DType::kIQ4_XS: return n_in % kq::kBlock == 0;
    case DType::kQ8_0: case DType::kQ4_0: case DType::kQ4_1: case DType::kQ5_0: case DType::kQ5_1: case DType::kIQ4_NL:
      return n_in % kq::kSub == 0;  // a row may end in a partial 256-element group
    default: return false;
  }
}

bool matmul_kq_supported(const DeviceMatrix& w, const float* x, int64_t rows, int64_t scratch_rows,
                         int64_t scratch_n_in) {
  if (!kq_kernel_takes_type(w.type, w.n_in)) return false;
  if (rows < 1 || rows > kKqMaxRows || rows > scratch_rows || w.n_in > scratch_n_in) return false;
  if (w.n_in <= 0 || w.n_in / kq::kBlock > 0x7FFFFFFF || w.layout != 0) return false;
  // Rows are staged as the 16-byte chunks that cover them, counted from a 16-byte aligned matrix (IQ4_XS's
  // staging assumes blocks 0 or 8 bytes past a boundary); upload_matrix's allocations are.
  return (reinterpret_cast<uintptr_t>(w.data) & 15) == 0 && (reinterpret_cast<uintptr_t>(x) & 3) == 0;
}

Status launch_kx_quantize(const float* x, int64_t rows, int64_t n_in, int8_t* xq, KxBlock* kx, cudaStream_t stream) {
  const int64_t n_row_blocks = (n_in + kq::kBlock - 1) / kq::kBlock;
  const int64_t n_blocks_total = rows * n_row_blocks;
  if (n_blocks_total > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: x too large");
  launch_chained(kx_quantize_kernel, static_cast<unsigned>((n_blocks_total + kQuantWarps - 1) / kQuantWarps),
                 kQuantWarps * 32, 0, stream, x, xq, kx, n_blocks_total, n_in, n_row_blocks);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

Status launch_matmul_kq(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                        bool accumulate, int8_t* xq, void* kx_scratch, cudaStream_t stream) {
  auto* kx = static_cast<KxBlock*>(kx_scratch);
  SAKER_RETURN_IF_ERROR(launch_kx_quantize(x, rows, w.n_in, xq, kx, stream));
  return launch_kq_quantized(w, xq, kx, rows, out, out_stride, accumulate, stream);
}

Status launch_kq_quantized(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                           int64_t out_stride, bool accumulate, cudaStream_t stream) {
  // One row of Q4_K / Q6_K: a lane a block (kq_lane_takes). dp4a: K-quants only; the device is asked only for
  // the widths it may take.
  // A row whose staged activations and stages do not fit the device's shared memory (kUnsupported, decided
  // before anything is launched) takes the dp4a kernel instead.
  if (!kq_force_mma() && kq_lane_takes(w, rows)) {
    Status lane = launch_kq_lane(w, xq, kx, out, accumulate, stream);
    if (lane.code() != StatusCode::kUnsupported) return lane;
  }
  if (rows >= 2 && kq_wgmma_selected()) {
    Status wg = launch_kq_wgmma(w, xq, kx, rows, out, out_stride, accumulate, stream);
    if (wg.code() != StatusCode::kUnsupported) return wg;
  }
  if (rows <= kKqDp4aMaxRows && !kq_force_mma() && kq_kernel_kquant(w.type) && rows <= kq_dp4a_rows()) {
    return launch_kq_dp4a(w, xq, kx, rows, out, out_stride, accumulate, stream);
  }
  return launch_kq_mma(w, xq, kx, rows, out, out_stride, accumulate, stream);
}

}  // namespace saker::cuda::detail
