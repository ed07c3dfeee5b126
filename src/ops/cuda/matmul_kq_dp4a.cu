// The width-invariant K-quant matmul for the narrowest calls (1 .. kKqDp4aMaxRows activation rows) with
// __dp4a: one warp per output row, lane l on unit l & 7 of blocks (l >> 3) + 4i, i = 0, 1, ..., so each
// 8-lane group reads a block's 16-byte code runs together and the warp streams the row (q8_dot.h unit
// loaders). A lane's integer share of its block's T and M (kq_canon.h) is summed over the group's eight
// lanes by shuffles (exact), the block value is formed as the canonical kq_value_*, and block b goes to
// stream b mod 8: group G holds streams G (even i) and G + 4 (odd i). The final butterflies over groups
// build the canonical tree, so the bits equal the tensor-core kernel's at any width.
// Measured against a variant with 4-lane groups (two units a lane, one stream a group, two shuffle levels):
// on the H200 that one was no faster for Q4_K and 28% slower for Q6_K (whose 2-byte-aligned units cost more
// per lane), so eight lanes a block it is.
#include <cuda_runtime.h>

#include <type_traits>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/q8_dot.h"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

constexpr int kWarps = 4;  // output rows per thread block

// The activation side of one unit against one activation row: its codes and the KxBlock fields it needs
// (kb: that row's KxBlock of the weight block). Loaded for a whole batch of blocks before any arithmetic,
// so the loads are in flight together (the shuffles of the reductions would otherwise keep the compiler
// from hoisting the next block's loads above them).
struct XMin {  // Q4_K / Q5_K unit u = 2c + half: 16 codes under the low nibbles (sub-block 2c), 16 under the high
  blocks::Bytes16 xl, xh;
  uint32_t qs;  // qsum[2c] | qsum[2c + 1] << 16 (read by the even unit of the pair only)
  float d8;
};
__device__ __forceinline__ XMin load_x(const q8::Q4KUnit& w, const int8_t* xb, const KxBlock* kb) {
  XMin x;
  const auto* xp = reinterpret_cast<const uint8_t*>(xb) + 64 * w.c + 16 * w.half;
  x.xl = blocks::ld16(xp);
  x.xh = blocks::ld16(xp + 32);
  x.qs = w.half == 0 ? __ldg(reinterpret_cast<const uint32_t*>(kb->qsum + 2 * w.c)) : 0u;
  x.d8 = __ldg(&kb->d8);
  return x;
}
// Integer shares of the unit's block sums: T += (S * sc) << 3 per sub-block (the activation shift is 3 in every
// sub-block, kq_canon.h); the min term once per pair.
__device__ __forceinline__ void unit_ints(const q8::Q4KUnit& w, const XMin& x, int* t_part, int* m_part) {
  int s1 = 0, s2 = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    s1 = q8::dp4a(w.lo[k], x.xl.w[k], s1);
    s2 = q8::dp4a(w.hi[k], x.xh.w[k], s2);
  }
  *t_part = (s1 * w.sc1 + s2 * w.sc2) << kq::kMaxShift;
  *m_part = w.m1 * static_cast<int>(static_cast<int16_t>(x.qs & 0xFFFF)) +
            w.m2 * static_cast<int>(static_cast<int16_t>(x.qs >> 16));  // 0 for the odd unit: qs = 0
}
__device__ __forceinline__ float unit_value(const q8::Q4KUnit& w, float d8, int t_sum, int m_sum) {
  return kq::kq_value_min(d8, w.d, w.dmin, t_sum, m_sum);
}

struct XSym {  // Q6_K unit u: half h = u >> 2, l0 = 8 (u & 3); run r = elements 128h + 32r + l0 .. +7
  uint32_t x[4][2];
  float d8;
};
__device__ __forceinline__ XSym load_x(const q8::Q6KUnit& w, const int8_t* xb, const KxBlock* kb) {
  XSym x;
  const auto* xp = reinterpret_cast<const uint8_t*>(xb) + w.xoff;
#pragma unroll
  for (int r = 0; r < 4; ++r) blocks::ld8(xp + 32 * r, &x.x[r][0], &x.x[r][1]);
  x.d8 = __ldg(&kb->d8);
  return x;
}
__device__ __forceinline__ void unit_ints(const q8::Q6KUnit& w, const XSym& x, int* t_part, int* m_part) {
  int t = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int x32 = q8::dp4a(0x20202020u, x.x[r][1], q8::dp4a(0x20202020u, x.x[r][0], 0));
    const int s = q8::dp4a(w.q[r][1], x.x[r][1], q8::dp4a(w.q[r][0], x.x[r][0], 0)) - x32;
    t += s * w.sc[r];
  }
  *t_part = t << kq::kMaxShift;
  *m_part = 0;
}
__device__ __forceinline__ float unit_value(const q8::Q6KUnit& w, float d8, int t_sum, int) {
  return kq::kq_value_sym(d8, w.d, t_sum);
}

template <DType T>
struct Dp4aFmt;
template <>
struct Dp4aFmt<DType::kQ4_K> {
  static constexpr int kBlockBytes = 144;
  static constexpr bool kMin = true;
  __device__ __forceinline__ static q8::Q4KUnit load(const uint8_t* blk, int u) { return q8::q4k_load(blk, u); }
};
template <>
struct Dp4aFmt<DType::kQ5_K> {
  static constexpr int kBlockBytes = 176;
  static constexpr bool kMin = true;
  __device__ __forceinline__ static q8::Q4KUnit load(const uint8_t* blk, int u) { return q8::q5k_load(blk, u); }
};
template <>
struct Dp4aFmt<DType::kQ6_K> {
  static constexpr int kBlockBytes = 210;
  static constexpr bool kMin = false;
  __device__ __forceinline__ static q8::Q6KUnit load(const uint8_t* blk, int u) { return q8::q6k_load(blk, u); }
};

template <DType T, int R>
__global__ void __launch_bounds__(kWarps * 32)
    kq_dp4a_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_out, int n_blocks,
                   const int8_t* __restrict__ xq,     // [rows, n_in] codes
                   const KxBlock* __restrict__ kx,    // [rows, n_blocks]
                   int64_t n_in, int rows, float* __restrict__ out, int64_t out_stride, int accumulate) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kWarps;  // the block's rows: first .. first + 3
  prefetch_weights_l2(w, row_bytes, first, kWarps, n_out);
  chain_in();
  using F = Dp4aFmt<T>;
  using WUnit = decltype(F::load(w, 0));
  using XUnit = decltype(load_x(WUnit{}, xq, kx));
  const int lane = threadIdx.x & 31, grp = lane >> 3, unit = lane & 7;
  const int64_t o = first + (threadIdx.x >> 5);
  if (o >= n_out) return;  // whole warp
  const uint8_t* wr = w + o * row_bytes;
  const unsigned gmask = 0xFFu << (8 * grp);  // the group's lanes: they run the same blocks
  float acc0[R], acc1[R];  // streams G and G + 4, per activation row
#pragma unroll
  for (int t = 0; t < R; ++t) acc0[t] = acc1[t] = 0.0f;
  // Activation rows past `rows` re-read the last row (their results are never written).
  int xrow[R];
#pragma unroll
  for (int t = 0; t < R; ++t) xrow[t] = min(t, rows - 1);

  // N blocks of this group (grp + 4 (i + k), k < N) in four phases: weight and activation loads, integer
  // shares, the group reductions (interleaved across the batch), then block values into the streams in
  // block order. Block k of a batch starting at even i belongs to stream G + 4 (k & 1).
  auto batch = [&](int i, auto count) {
    constexpr int N = decltype(count)::value;
    WUnit wu[N];
    XUnit xu[N][R];
#pragma unroll
    for (int k = 0; k < N; ++k) wu[k] = F::load(wr + static_cast<int64_t>(grp + 4 * (i + k)) * F::kBlockBytes, unit);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int b = grp + 4 * (i + k);
#pragma unroll
      for (int t = 0; t < R; ++t) {
        xu[k][t] = load_x(wu[k], xq + static_cast<int64_t>(xrow[t]) * n_in + static_cast<int64_t>(b) * kq::kBlock,
                          kx + static_cast<int64_t>(xrow[t]) * n_blocks + b);
      }
    }
    int tp[N][R], mp[N][R];
#pragma unroll
    for (int k = 0; k < N; ++k) {
#pragma unroll
      for (int t = 0; t < R; ++t) unit_ints(wu[k], xu[k][t], &tp[k][t], &mp[k][t]);
    }
#pragma unroll
    for (int off = 1; off < 8; off <<= 1) {
#pragma unroll
      for (int k = 0; k < N; ++k) {
#pragma unroll
        for (int t = 0; t < R; ++t) {
          tp[k][t] += __shfl_xor_sync(gmask, tp[k][t], off);
          if constexpr (F::kMin) mp[k][t] += __shfl_xor_sync(gmask, mp[k][t], off);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < N; ++k) {
#pragma unroll
      for (int t = 0; t < R; ++t) {
        const float v = unit_value(wu[k], xu[k][t].d8, tp[k][t], mp[k][t]);
        if (((i + k) & 1) == 0) {
          acc0[t] = kq::fadd(acc0[t], v);
        } else {
          acc1[t] = kq::fadd(acc1[t], v);
        }
      }
    }
  };
  // Blocks a group loads before it computes (even: a batch holds both streams of its group); any count gives
  // the same bits. One row: four, but two for Q4_K, which then needs 50 registers instead of 64 (ten blocks
  // an SM instead of eight) and measured faster on the H100 (one row, % of DRAM peak: 4096x4096 +9%,
  // 12288x4096 +2%, 4096x12288 equal; 8B Q4_K_M tg64 +1%), while Q6_K at two measured 2-4% slower and Q5_K
  // was not measured. Asking for twelve blocks an SM (__launch_bounds__) spilled and cost 20-45%.
  constexpr int U = (R > 1 || T == DType::kQ4_K) ? 2 : 4;
  int i = 0;
  for (; grp + 4 * (i + U - 1) < n_blocks; i += U) batch(i, std::integral_constant<int, U>{});
  for (; grp + 4 * i < n_blocks; ++i) batch(i, std::integral_constant<int, 1>{});
  __syncwarp();
  // ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)): xor 8 pairs groups 0-1 and 2-3, xor 16 the pairs.
#pragma unroll
  for (int t = 0; t < R; ++t) {
    float a = acc0[t], b = acc1[t];
    a = kq::fadd(a, __shfl_xor_sync(0xFFFFFFFFu, a, 8));
    b = kq::fadd(b, __shfl_xor_sync(0xFFFFFFFFu, b, 8));
    a = kq::fadd(a, __shfl_xor_sync(0xFFFFFFFFu, a, 16));
    b = kq::fadd(b, __shfl_xor_sync(0xFFFFFFFFu, b, 16));
    if (lane == 0 && t < rows) {
      const float y = kq::fadd(a, b);
      float* dst = out + static_cast<int64_t>(t) * out_stride + o;
      *dst = accumulate ? kq::fadd(*dst, y) : y;
    }
  }
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
