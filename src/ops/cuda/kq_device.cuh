#pragma once
// Device pieces shared by the two width-invariant K-quant kernels (matmul_kq_mma.cu on tensor cores,
// matmul_kq_dp4a.cu with __dp4a): the activation side's metadata and unaligned word loads. The canonical
// arithmetic itself is kq_canon.h.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/kq_canon.h"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda::detail {

// A 32-bit little-endian word from a 2-byte-aligned address: the covering aligned words, funnel-shifted.
__device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t* p) {
  const auto* base = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{3});
  const uint32_t sh = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 3) * 8;
  const uint32_t x0 = __ldg(base);
  return sh == 0 ? x0 : __funnelshift_r(x0, __ldg(base + 1), sh);
}

// The activation side of one (block, n-tile) for this lane: its B fragments and, for the two output columns
// it holds, the KxBlock fields.
struct ColMeta {  // one activation row's KxBlock of one weight block
  float d8;
  uint32_t sh[2];  // sh[j] bytes 0..7
  uint32_t qs[4];  // qsum[j] int16 pairs
  // Selects, not indexing: j may differ between lanes, and an indexed array would go to local memory.
  __device__ __forceinline__ int shift(int j) const {
    const uint32_t w = (j & 4) ? sh[1] : sh[0];
    return static_cast<int>(__byte_perm(w, 0, 0x4440 | (j & 3)));  // one PRMT, not a shift and a mask
  }
  __device__ __forceinline__ int qsum(int j) const {
    const uint32_t w = (j & 4) ? ((j & 2) ? qs[3] : qs[2]) : ((j & 2) ? qs[1] : qs[0]);
    return static_cast<int>(static_cast<int16_t>((w >> (16 * (j & 1))) & 0xFFFF));
  }
};
__device__ __forceinline__ ColMeta load_meta(const kq::KxBlock* kb) {
  const uint4 a = __ldg(reinterpret_cast<const uint4*>(kb));
  const uint4 b = __ldg(reinterpret_cast<const uint4*>(kb) + 1);
  ColMeta m;
  m.d8 = __uint_as_float(a.x);
  m.sh[0] = a.y;
  m.sh[1] = a.z;
  m.qs[0] = a.w;
  m.qs[1] = b.x;
  m.qs[2] = b.y;
  m.qs[3] = b.z;
  return m;
}

// One warp quantises one 256-element block of x (kq_canon.h) held in its lanes' registers: lane l holds
// elements 8l .. 8l+7 (sub-block l / 4) in v. live: the lane's elements lie inside the row (a row's last block
// may hold fewer than 256; the lanes past them hold zeros and write no codes). Every producer that writes the
// K-quant kernels' activation blocks ends here, so all of them write the same bits for the same values.
__device__ __forceinline__ void kq_quantize_values(const float (&v)[8], bool live, int8_t* __restrict__ xq_blk,
                                                   kq::KxBlock* __restrict__ kb, int lane) {
  const int j = lane >> 2;
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) a = fmaxf(a, fabsf(v[i]));
  a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, 1));
  a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, 2));  // the sub-block's max
  float amax = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, 4));
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 8));
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 16));  // the block's
  const float d = amax / 127.0f;
  const float inv = kq::inv_step(d);
  uint32_t w[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int8_t q = kq::quantize_code(v[i], inv);
    sum += q;
    w[i >> 2] |= static_cast<uint32_t>(static_cast<uint8_t>(q)) << (8 * (i & 3));
  }
  sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
  sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
  if (live) *reinterpret_cast<uint2*>(xq_blk + 8 * lane) = make_uint2(w[0], w[1]);
  if ((lane & 3) == 0) {
    kb->sh[j] = static_cast<uint8_t>(kq::kMaxShift);
    kb->qsum[j] = static_cast<int16_t>(sum * (1 << kq::kMaxShift));
  }
  if (lane == 0) {
    kb->d8 = d * 0.125f;
    kb->pad = 0;
  }
}

// The same block read from memory: lane l loads elements 8l .. 8l+7 of xs_blk. Used by the quantisation
// kernel and by the fused norm (rms_norm_quantized). A row's last block may hold only `valid` elements (a
// multiple of 32).
// xs_blk carries no __restrict__: the fused norm reads back values the same kernel has just written.
__device__ __forceinline__ void kq_quantize_warp(const float* xs_blk, int8_t* __restrict__ xq_blk,
                                                 kq::KxBlock* __restrict__ kb, int lane, int valid = kq::kBlock) {
  const bool live = 8 * lane < valid;
  const float* xs = xs_blk + 8 * lane;
  float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (!live) {
  } else if ((reinterpret_cast<uintptr_t>(xs_blk) & 15) == 0) {  // always in the engine; tests also pass offset rows
    const float4 v0 = reinterpret_cast<const float4*>(xs)[0], v1 = reinterpret_cast<const float4*>(xs)[1];
    v[0] = v0.x, v[1] = v0.y, v[2] = v0.z, v[3] = v0.w, v[4] = v1.x, v[5] = v1.y, v[6] = v1.z, v[7] = v1.w;
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = xs[i];
  }
  kq_quantize_values(v, live, xq_blk, kb, lane);
}

// x [rows, n_in] f32 (rows of n_in floats) -> the K-quant kernels' activation blocks (xq codes [rows, n_in], kx
// [rows, ceil(n_in / 256)]), one launch: the quantisation launch_matmul_kq runs first.
Status launch_kx_quantize(const float* x, int64_t rows, int64_t n_in, int8_t* xq, kq::KxBlock* kx, cudaStream_t stream);

// The launchers behind launch_matmul_kq, after x is quantised (xq codes, kx metadata).
Status launch_kq_mma(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, int64_t rows, float* out,
                     int64_t out_stride, bool accumulate, cudaStream_t stream);
Status launch_kq_dp4a(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, int64_t rows, float* out,
                      int64_t out_stride, bool accumulate, cudaStream_t stream);
// Q4_K / Q5_K at 2-64 rows on warpgroup MMA (matmul_kq_wgmma.cu), where SAKER_CUDA_MATMUL=kqwg* selects it;
// kUnsupported for other calls and devices.
bool kq_wgmma_selected();
Status launch_kq_wgmma(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, int64_t rows, float* out,
                       int64_t out_stride, bool accumulate, cudaStream_t stream);
// One activation row on Q4_K / Q6_K weights, a lane a weight block (matmul_kq_lane.cu), where kq_lane_takes says so.
bool kq_lane_takes(const DeviceMatrix& w, int64_t rows);
Status launch_kq_lane(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, float* out, bool accumulate,
                      cudaStream_t stream);
// Both, on activation blocks already in xq / kx (rows x w.n_in).
Status launch_kq_quantized(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, int64_t rows, float* out,
                           int64_t out_stride, bool accumulate, cudaStream_t stream);
inline constexpr int64_t kKqDp4aMaxRows = 2;  // the dp4a kernel up to here at most, tensor cores beyond
// Whether the tensor-core kernel fills its stages by TMA on this device (Hopper, unless SAKER_CUDA_MATMUL=kqcp);
// then calls of two rows take it too (matmul_kq.cu).
bool kq_tma_stages_on(int device);

}  // namespace saker::cuda::detail
