// The width-invariant F16 / BF16 matmul for 1-64 activation rows (decode, speculative verify, the drafter's
// blocks): weights stream from global memory in 16-byte loads straight into mma.m16n8k16 A fragments (index
// math and the invariance argument in float_mma_layout.h), activations are rounded to the weight's type, f32
// accumulators. Each weight byte is read once per call whatever the row count. Opt-in
// (MatmulOptions::invariant): on the H200 it is slower than cuBLAS today (docs/performance.md).
//
// A block of four warps owns 16 * MT output rows; warp w walks its quarter of K in chunks of 32 through a
// ring of cp.async stages in shared memory, and the four partial sums meet in shared memory, added in a fixed
// order. Activations come as f32 (rounded in registers, no extra launch: decode rows) or as f16 / bf16 already
// rounded into the context's scratch by one conversion launch (wider calls, where every warp re-reads them and
// half the bytes matter); both give the same rounded values, so the same bits.
#include <algorithm>
#include <cstdint>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cp_async.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/float_mma_layout.h"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/mma_f16.cuh"

namespace saker::cuda::detail {
namespace {

using float_mma::kChunk;
using float_mma::kWarps;

// Shared memory of one block: per warp, a ring of S stages of one chunk each; a stage holds, lane-major (lane l
// reads back only the 16-byte slots it copied, so no barrier is needed), the weight rows g and g + 8 of each
// m-tile and the activation row g of each n-tile (two slots for f32, one for f16 / bf16). The copies of S - 1
// chunks are in flight while one is multiplied: the bytes in flight per warp do not depend on how the
// compiler schedules loads.
template <int MT, int NT, bool kXf32>
struct Stage {
  static constexpr int kXSlots = kXf32 ? 2 : 1;
  static constexpr int kSlots = 2 * MT + NT * kXSlots;  // 16-byte slots per lane
  static __device__ __forceinline__ int w_slot(int mt, int r) { return 2 * mt + r; }
  static __device__ __forceinline__ int x_slot(int nt, int part) { return 2 * MT + nt * kXSlots + part; }
};

template <bool kBf16, int MT, int NT, int S, bool kXf32>
__global__ void __launch_bounds__(kWarps * 32)
    matmul_float_wi_kernel(const uint16_t* __restrict__ w,  // [n_out, n_in] f16 / bf16
                           int64_t n_out, int64_t n_in,
                           const void* __restrict__ x,  // [rows, n_in] f32 (kXf32) or f16 / bf16, 16-byte aligned
                           int rows,
                           float* __restrict__ out,  // [rows, out_stride] f32
                           int64_t out_stride, int accumulate) {
  chain_in_late();
  using St = Stage<MT, NT, kXf32>;
  constexpr int kRingSlots = kWarps * S * St::kSlots * 32;
  constexpr int kRedFloats = kWarps * MT * NT * 4 * 32;
  static_assert(kRedFloats * 4 <= kRingSlots * 16, "the reduction reuses the ring");
  __shared__ __align__(16) uint4 smem[kRingSlots];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * 16 * MT;
  const int64_t k0 = float_mma::warp_k_begin(n_in, warp) + 8 * t;  // this lane's first element
  const int64_t n_chunks = n_in / kWarps / kChunk;
  uint4* ring = smem + warp * S * St::kSlots * 32 + lane;
  auto slot = [&](int stage, int j) { return ring + (stage * St::kSlots + j) * 32; };

  const uint16_t* wr[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // Rows past n_out re-read the last row; their results are never written.
      const int64_t o = std::min<int64_t>(o0 + 16 * mt + g + 8 * r, n_out - 1);
      wr[mt][r] = w + o * n_in + k0;
    }
  }
  const int x_elem_bytes = kXf32 ? 4 : 2;
  const char* xr[NT];
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int n = nt * 8 + g;
    xok[nt] = n < rows;  // rows past the call's read as zeros (the copy reads nothing)
    xr[nt] = static_cast<const char*>(x) + (static_cast<int64_t>(xok[nt] ? n : 0) * n_in + k0) * x_elem_bytes;
  }
  auto issue = [&](int64_t c, int stage) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) cp_async16(slot(stage, St::w_slot(mt, r)), wr[mt][r] + c * kChunk);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int part = 0; part < St::kXSlots; ++part) {
        cp_async16(slot(stage, St::x_slot(nt, part)), xr[nt] + (c * kChunk + 4 * part) * x_elem_bytes, xok[nt]);
      }
    }
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;
    }
  }
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < n_chunks) issue(s, s);
    cp_async_commit();
  }
  for (int64_t c = 0; c < n_chunks; ++c) {
    if (c + S - 1 < n_chunks) issue(c + S - 1, static_cast<int>((c + S - 1) % S));
    cp_async_commit();
    cp_async_wait<S - 1>();  // chunk c has landed
    const int stage = static_cast<int>(c % S);
    uint4 a[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      a[mt][0] = *slot(stage, St::w_slot(mt, 0));
      a[mt][1] = *slot(stage, St::w_slot(mt, 1));
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      uint4 xv;
      if constexpr (kXf32) {
        const uint4 p = *slot(stage, St::x_slot(nt, 0)), q = *slot(stage, St::x_slot(nt, 1));
        xv = make_uint4(mma_pack<kBf16>(__uint_as_float(p.x), __uint_as_float(p.y)),
                        mma_pack<kBf16>(__uint_as_float(p.z), __uint_as_float(p.w)),
                        mma_pack<kBf16>(__uint_as_float(q.x), __uint_as_float(q.y)),
                        mma_pack<kBf16>(__uint_as_float(q.z), __uint_as_float(q.w)));
      } else {
        xv = *slot(stage, St::x_slot(nt, 0));
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        // MMA 0 takes the lane's elements 0..3, MMA 1 elements 4..7 (float_mma_layout.h).
        const uint32_t a0[4] = {a[mt][0].x, a[mt][1].x, a[mt][0].y, a[mt][1].y};
        mma_16816<kBf16>(acc[mt][nt], a0, xv.x, xv.y);
        const uint32_t a1[4] = {a[mt][0].z, a[mt][1].z, a[mt][0].w, a[mt][1].w};
        mma_16816<kBf16>(acc[mt][nt], a1, xv.z, xv.w);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with its ring: reuse it for the reduction
  float* red = reinterpret_cast<float*>(smem);  // [kWarps][MT][NT][4][32]
  auto red_at = [&](int ww, int mt, int nt, int i, int l) { return red + (((ww * MT + mt) * NT + nt) * 4 + i) * 32 + l; };
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) *red_at(warp, mt, nt, i, lane) = acc[mt][nt][i];
    }
  }
  __syncthreads();
  // C register i of lane l: row (l >> 2) + 8 (i >> 1) of the m-tile, activation row 2 (l & 3) + (i & 1) of
  // the n-tile (mma_layout.h c_elem). The warps' sums in a fixed order.
  for (int e = threadIdx.x; e < MT * NT * 4 * 32; e += kWarps * 32) {
    const int l = e & 31, i = (e >> 5) & 3, nt = (e >> 7) % NT, mt = (e >> 7) / NT;
    float sum = *red_at(0, mt, nt, i, l) + *red_at(1, mt, nt, i, l);
    sum += *red_at(2, mt, nt, i, l);
    sum += *red_at(3, mt, nt, i, l);
    const int64_t o = o0 + 16 * mt + (l >> 2) + 8 * (i >> 1);
    const int n = nt * 8 + 2 * (l & 3) + (i & 1);
    if (o < n_out && n < rows) {
      float* dst = out + static_cast<int64_t>(n) * out_stride + o;
      *dst = accumulate ? *dst + sum : sum;
    }
  }
}

template <bool kBf16>
Status launch_for(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                  bool accumulate, void* x16, cudaStream_t stream) {
  const auto* wp = static_cast<const uint16_t*>(w.data);
  const int r = static_cast<int>(rows), acc = accumulate ? 1 : 0;
  auto launch = [&](auto mt_c, auto nt_c, auto s_c, auto xf32_c, const void* xin) {
    constexpr int MT = decltype(mt_c)::value, NT = decltype(nt_c)::value, S = decltype(s_c)::value;
    constexpr bool kXf32 = decltype(xf32_c)::value;
    const int64_t blocks = (w.n_out + 16 * MT - 1) / (16 * MT);
    launch_chained(matmul_float_wi_kernel<kBf16, MT, NT, S, kXf32>, static_cast<unsigned>(blocks), kWarps * 32, 0,
                   stream, wp, w.n_out, w.n_in, xin, r, out, out_stride, acc);
  };
  using std::integral_constant;
  using I1 = integral_constant<int, 1>;
  using I2 = integral_constant<int, 2>;
  using I3 = integral_constant<int, 3>;
  using I4 = integral_constant<int, 4>;
  using I6 = integral_constant<int, 6>;
  using I8 = integral_constant<int, 8>;
  // Stages of at most 12 KB a warp (48 KB a block). Decode widths copy f32 activations (one launch); aligned rows
  // only, else the scratch path, which gives the same bits.
  const bool x_aligned = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  if (rows <= 8 && x_aligned) {
    launch(I1{}, I1{}, I6{}, std::true_type{}, x);
  } else {
    SAKER_RETURN_IF_ERROR(launch_convert_f32(x, rows * w.n_in, kBf16 ? DType::kBF16 : DType::kF16, x16, stream));
    if (rows <= 8) launch(I1{}, I1{}, I6{}, std::false_type{}, x16);
    else if (rows <= 16) launch(I2{}, I2{}, I4{}, std::false_type{}, x16);
    else if (rows <= 32) launch(I2{}, I4{}, I3{}, std::false_type{}, x16);
    else launch(I2{}, I8{}, I2{}, std::false_type{}, x16);
  }
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace

bool matmul_float_wi_supported(const DeviceMatrix& w, int64_t rows, int64_t scratch_rows, int64_t scratch_n_in) {
  if (w.type != DType::kF16 && w.type != DType::kBF16) return false;
  if (w.layout != 0 || rows < 1 || rows > float_mma::kMaxRows || !float_mma::n_in_supported(w.n_in)) return false;
  if ((reinterpret_cast<uintptr_t>(w.data) & 15) != 0) return false;
  if ((w.n_out + 15) / 16 > 0x7FFFFFFF) return false;
  // Every call may need the scratch (unaligned x, or more than 8 rows).
  return rows <= scratch_rows && w.n_in <= scratch_n_in;
}

Status launch_matmul_float_wi(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                              bool accumulate, void* x16, cudaStream_t stream) {
  if ((reinterpret_cast<uintptr_t>(x) & 3) != 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda matmul: activations must be 4-byte aligned");
  }
  if (w.type == DType::kBF16) return launch_for<true>(w, x, rows, out, out_stride, accumulate, x16, stream);
  return launch_for<false>(w, x, rows, out, out_stride, accumulate, x16, stream);
}

}  // namespace saker::cuda::detail
