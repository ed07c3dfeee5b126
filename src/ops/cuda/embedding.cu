// Embedding lookup on the device: rows of a DeviceMatrix (any supported dtype) dequantised to f32.
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda {
namespace {

constexpr int kThreads = 256;

// One block per token; threads stride over the row's units (block types) or elements (plain floats).
// A token id outside [0, n_vocab) cannot be reported from the device: its row is written as NaN so it
// cannot pass unnoticed.
template <class F>
__global__ void __launch_bounds__(kThreads)
    embedding_kernel(const uint8_t* __restrict__ table,  // [n_vocab, row_bytes]
                     int64_t row_bytes, int64_t n_vocab, int64_t n_embd, DType type,
                     const int32_t* __restrict__ tokens,  // [n]
                     float scale,
                     float* __restrict__ out) {  // [n, n_embd] f32
  chain_in();
  const int64_t t = blockIdx.x;
  const int32_t id = tokens[t];
  float* o = out + t * n_embd;
  if (id < 0 || id >= n_vocab) {
    for (int64_t i = threadIdx.x; i < n_embd; i += kThreads) o[i] = __int_as_float(0x7FC00000);
    return;
  }
  const uint8_t* row = table + static_cast<int64_t>(id) * row_bytes;
  if (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) {
    for (int64_t i = threadIdx.x; i < n_embd; i += kThreads) o[i] = blocks::float_element(type, row, i) * scale;
    return;
  }
  const int64_t n_units = n_embd / 32;
  for (int64_t u = threadIdx.x; u < n_units; u += kThreads) {
    const int64_t b = u / F::kUnits;
    const int uu = static_cast<int>(u % F::kUnits);
    float v[32];
    F::decode_unit(row + b * F::kBlockBytes, uu, v);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      float* d = o + b * F::kBlockElems + F::run_start(uu, r);
#pragma unroll
      for (int j = 0; j < 8; ++j) d[j] = v[8 * r + j] * scale;
    }
  }
}

}  // namespace

Status embedding(const DeviceMatrix& table, const int32_t* tokens, int64_t n, float scale, float* out,
                 cudaStream_t stream) {
  if (n <= 0) return {};
  if (!table.data || !tokens || !out) return make_error(StatusCode::kInvalidArgument, "cuda embedding: null pointer");
  if (n > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda embedding: too many tokens");
  const int64_t rb = detail::matrix_row_bytes(table);
  const bool known = detail::visit_dtype(table.type, [&](auto fmt) {
    using F = decltype(fmt);
    launch_chained(embedding_kernel<F>, static_cast<unsigned>(n), kThreads, 0, stream,
                   static_cast<const uint8_t*>(table.data), rb, table.n_out, table.n_in, table.type, tokens, scale,
                   out);
  });
  if (!known) return make_error(StatusCode::kUnsupported, "cuda embedding: table dtype not supported");
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace saker::cuda
