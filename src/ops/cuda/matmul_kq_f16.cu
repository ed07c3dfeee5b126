// The Q4_K matmul of 1-64 activation rows on f16 tensor cores: weights dequantised in registers to f16 (d * sc
// * q - dmin * m, one rounding each for the scale, the min and the weight), activations rounded to f16, f32
// accumulators. Each weight byte is read from DRAM once per call whatever the row count; a row's output bits
// do not depend on how many rows share the call (the order below never looks at the row count).
//
// Why not the int8 kernel of matmul_kq_mma.cu at verify widths: its exact integer sums must be folded into the
// float result per 32-element sub-block, row and column (a shift, a multiply and an add per C element and
// sub-block), a dependent chain behind every MMA that kept 16 rows at 2.6x one row. Here a weight is dequantised
// once for every activation row (about 1.6 instructions an element: masks into the f16 exponent, an exact
// subtraction, one FMA with the sub-block's scale and min), and the MMAs accumulate a whole warp's share of K
// with nothing between them.
//
// Layout of the work: a block of four warps owns 16, 32 or 64 output rows (KS = 4, 2 or 1 K streams an m-tile);
// a warp takes every KS-th weight block (256 elements) of its m-tile in order, copying each block's 16 GGUF rows
// into its own ring of shared-memory stages with cp.async (no block-wide barrier), and the streams of an m-tile
// meet in shared memory in a fixed order. Activations are read from global memory (L1 / L2: every block reads the
// same rows): f32 rounded in registers at decode widths (no extra launch), or the context's f16 copy (one
// conversion launch) at wider calls, where half the bytes matter; both round the same values the same way.
//
// Which element each fragment position stands for, and the bit tricks of the dequantisation: kq_f16_layout.h
// (checked lane by lane on the host by tests/unit/cuda_kq_f16_layout_test.cpp).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/cuda/cp_async.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/mma_f16.cuh"

namespace saker::cuda::detail {
namespace {

using kq_f16::kBlockBytes;
using kq_f16::kWarps;
constexpr int kPieces = kBlockBytes / 16;  // 16-byte copies a staged row
constexpr int kRowStride = 160;            // staged row stride: rows g and g + 4 land 8 banks apart
constexpr int kTileBytes = 16 * kRowStride;

__device__ __forceinline__ __half2 as_h2(uint32_t v) { return *reinterpret_cast<const __half2*>(&v); }
__device__ __forceinline__ uint32_t as_u32(__half2 v) { return *reinterpret_cast<const uint32_t*>(&v); }

// One staged row's block header: its scale words, (d, dmin) and -1024 * (d, dmin) (exact).
struct RowScales {
  kq_f16::ScaleWords words;
  __half2 dd, dd1024;
};
__device__ __forceinline__ RowScales load_scales(const uint8_t* row) {
  const uint4 hdr = *reinterpret_cast<const uint4*>(row);
  RowScales r;
  r.words = kq_f16::unpack_scales(hdr.y, hdr.z, hdr.w);
  r.dd = as_h2(hdr.x);
  r.dd1024 = __hmul2(r.dd, __float2half2_rn(-1024.0f));
  return r;
}
// Sub-block j's (d * sc_j, dmin * m_j): (1024 + sc) * d - 1024 * d in one FMA, so each is rounded once.
__device__ __forceinline__ __half2 sub_scale(const RowScales& r, int j) {
  return __hfma2(as_h2(kq_f16::scale_magic(r.words, j)), r.dd, r.dd1024);
}
// w = n * s - m for a pair of codes held as 1024 + n (h 0) or 1024 + 16 n (h 1): n exactly, then one FMA.
__device__ __forceinline__ uint32_t weight_pair(uint32_t magic, int h, __half2 sm) {
  const __half2 n = h ? __hfma2(as_h2(magic), __float2half2_rn(0.0625f), __float2half2_rn(-64.0f))
                      : __hsub2(as_h2(magic), __float2half2_rn(1024.0f));
  return as_u32(__hfma2(n, __low2half2(sm), __hneg2(__high2half2(sm))));
}

// A fragments of one code word (lane t's bytes of sub-block pair c for one MMA p) of one row: a[h][pair] for
// sub-block 2c + h (kq_f16_layout.h).
__device__ __forceinline__ void dequant_word(uint32_t q, __half2 sm_lo, __half2 sm_hi, uint32_t (&a)[2][2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) a[h][pair] = weight_pair(kq_f16::code_magic(q, h, pair), h, h ? sm_hi : sm_lo);
  }
}

// The B fragments of one activation row for sub-block j (elements 8t .. 8t + 7 of it): [p][0] = (i 0, 2),
// [p][1] = (i 1, 3) of elements 8t + 4p + i.
template <bool kXf32>
__device__ __forceinline__ void load_b(const void* xrow, int64_t at, bool ok, uint32_t (&b)[2][2]) {
  if (!ok) {
    b[0][0] = b[0][1] = b[1][0] = b[1][1] = 0;
    return;
  }
  if constexpr (kXf32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(xrow) + at);
    const float4 v0 = __ldg(p), v1 = __ldg(p + 1);
    b[0][0] = mma_pack<false>(v0.x, v0.z);
    b[0][1] = mma_pack<false>(v0.y, v0.w);
    b[1][0] = mma_pack<false>(v1.x, v1.z);
    b[1][1] = mma_pack<false>(v1.y, v1.w);
  } else {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(xrow) + at));
    b[0][0] = kq_f16::x16_pair(u.x, u.y, 0);
    b[0][1] = kq_f16::x16_pair(u.x, u.y, 1);
    b[1][0] = kq_f16::x16_pair(u.z, u.w, 0);
    b[1][1] = kq_f16::x16_pair(u.z, u.w, 1);
  }
}

template <int S>
constexpr int kSmemBytes = kWarps * S * kTileBytes;

// KS: K streams of a block (1, 2 or 4). Warp w owns m-tile w / KS of the block's kWarps / KS (16 output rows
// each) and is stream w % KS of it: it takes the weight blocks w % KS, w % KS + KS, ... of its rows in order.
// The streams of an m-tile meet in shared memory in a fixed order, so the bits depend on KS (one KS per
// matrix, chosen by the launcher from nothing but the dtype) and never on the row count. Warps of a block
// that share a stream read the same activations at about the same time (L1 hits): fewer streams, less
// activation traffic per weight byte, fewer blocks in the grid.
template <int KS, int NT, int S, bool kXf32>
__global__ void __launch_bounds__(kWarps * 32)
    kq_f16_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes] GGUF Q4_K blocks, 16-byte aligned
                  int64_t row_bytes, int64_t n_out, int n_blocks,
                  const void* __restrict__ x,  // [rows, n_in] f32 (kXf32) or f16, 16-byte aligned rows
                  int64_t n_in, int rows,
                  float* __restrict__ out,  // [rows, out_stride] f32
                  int64_t out_stride, int accumulate) {
  constexpr int kTiles = kWarps / KS;  // m-tiles a block
  static_assert(kWarps * NT * 4 * 32 * 4 <= kSmemBytes<S>, "the reduction reuses the ring");
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int tile = warp / KS, stream = warp % KS;
  uint8_t* ring = smem + warp * S * kTileBytes;
  const int64_t o0 = (static_cast<int64_t>(blockIdx.x) * kTiles + tile) * 16;  // the warp's first output row
  const int my_blocks = stream < n_blocks ? (n_blocks - stream + KS - 1) / KS : 0;

  // Copies: piece p (0 .. 16 * kPieces - 1) of the m-tile is 16 bytes kp = p % kPieces of its row p / kPieces;
  // lane l copies pieces l, l + 32, ..., so a copy instruction reads whole runs of consecutive rows' bytes.
  constexpr int kLanePieces = (16 * kPieces + 31) / 32;
  int64_t src_off[kLanePieces];
  int dst_off[kLanePieces];
#pragma unroll
  for (int k = 0; k < kLanePieces; ++k) {
    const int p = lane + 32 * k, r = p / kPieces, kp = p % kPieces;
    dst_off[k] = r * kRowStride + 16 * kp;
    // Rows past n_out re-read the last row of the matrix (their results are never written).
    const int64_t o = std::min<int64_t>(o0 + (r < 16 ? r : 15), n_out - 1);
    src_off[k] = o * row_bytes + 16 * kp;
  }
  int copied = 0;
  auto issue = [&]() {
    if (copied < my_blocks) {
      const int64_t boff = static_cast<int64_t>(stream + KS * copied) * kBlockBytes;
      uint8_t* st = ring + (copied % S) * kTileBytes;
#pragma unroll
      for (int k = 0; k < kLanePieces; ++k) {
        if (lane + 32 * k < 16 * kPieces) cp_async16(st + dst_off[k], w + src_off[k] + boff);
      }
      ++copied;
    }
    cp_async_commit();  // possibly empty: the group count stays uniform
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) issue();

  // Activation rows: lane's column of n-tile nt is nt * 8 + g; rows past the call's multiply as zeros.
  const int x_elem = kXf32 ? 4 : 2;
  const char* xr[NT];
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int n = nt * 8 + g;
    xok[nt] = n < rows;
    xr[nt] = static_cast<const char*>(x) + static_cast<int64_t>(xok[nt] ? n : 0) * n_in * x_elem;
  }

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
  }

  for (int i = 0; i < my_blocks; ++i) {
    cp_async_wait<S - 2>();  // block i has landed (this lane's pieces)
    __syncwarp();            // and every lane's
    const int b = stream + KS * i;
    const uint8_t* st = ring + (i % S) * kTileBytes;
    const RowScales rs0 = load_scales(st + g * kRowStride), rs1 = load_scales(st + (g + 8) * kRowStride);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      // B fragments of sub-blocks 2c, 2c + 1 for every n-tile.
      uint32_t bf[NT][2][2][2];  // [nt][h][p][reg]
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          load_b<kXf32>(xr[nt], static_cast<int64_t>(b) * 256 + 32 * (2 * c + h) + 8 * t, xok[nt], bf[nt][h]);
        }
      }
      // Words p = 0, 1 of rows g and g + 8 (word_byte(c, t, 1) = word_byte(c, t, 0) + 4).
      const uint8_t* r0 = st + g * kRowStride + kq_f16::kQs + kq_f16::word_byte(c, t, 0);
      const uint2 q0 = *reinterpret_cast<const uint2*>(r0);
      const uint2 q1 = *reinterpret_cast<const uint2*>(r0 + 8 * kRowStride);
      const __half2 s0lo = sub_scale(rs0, 2 * c), s0hi = sub_scale(rs0, 2 * c + 1);
      const __half2 s1lo = sub_scale(rs1, 2 * c), s1hi = sub_scale(rs1, 2 * c + 1);
      uint32_t a0[2][2][2], a1[2][2][2];  // [p][h][pair]: rows g and g + 8
      dequant_word(q0.x, s0lo, s0hi, a0[0]);
      dequant_word(q0.y, s0lo, s0hi, a0[1]);
      dequant_word(q1.x, s1lo, s1hi, a1[0]);
      dequant_word(q1.y, s1lo, s1hi, a1[1]);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          const uint32_t a[4] = {a0[p][h][0], a1[p][h][0], a0[p][h][1], a1[p][h][1]};
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma_16816<false>(acc[nt], a, bf[nt][h][p][0], bf[nt][h][p][1]);
        }
      }
    }
    __syncwarp();  // every lane is done with the stage before it is refilled
    issue();
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with its ring: reuse it for the reduction
  float* red = reinterpret_cast<float*>(smem);  // [kWarps][NT][4][32], warp = tile * KS + stream
  auto red_at = [&](int ww, int nt, int e, int l) { return red + ((ww * NT + nt) * 4 + e) * 32 + l; };
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) *red_at(warp, nt, e, lane) = acc[nt][e];
  }
  __syncthreads();
  // C register e of lane l: weight row (l >> 2) + 8 (e >> 1) of the m-tile, activation row 2 (l & 3) + (e & 1)
  // of the n-tile. The streams of an m-tile in the order (s0 + s1) + (s2 + s3) (KS 4), s0 + s1 (KS 2).
  for (int k = threadIdx.x; k < kTiles * NT * 4 * 32; k += kWarps * 32) {
    const int l = k & 31, e = (k >> 5) & 3, nt = (k >> 7) % NT, mt = (k >> 7) / NT;
    const int w0 = mt * KS;
    float sum = *red_at(w0, nt, e, l);
    if constexpr (KS == 2) sum = __fadd_rn(sum, *red_at(w0 + 1, nt, e, l));
    if constexpr (KS == 4) {
      sum = __fadd_rn(__fadd_rn(sum, *red_at(w0 + 1, nt, e, l)),
                      __fadd_rn(*red_at(w0 + 2, nt, e, l), *red_at(w0 + 3, nt, e, l)));
    }
    const int64_t o = (static_cast<int64_t>(blockIdx.x) * kTiles + mt) * 16 + (l >> 2) + 8 * (e >> 1);
    const int n = nt * 8 + 2 * (l & 3) + (e & 1);
    if (o < n_out && n < rows) {
      float* dst = out + static_cast<int64_t>(n) * out_stride + o;
      *dst = accumulate ? __fadd_rn(*dst, sum) : sum;
    }
  }
}

template <int KS, int NT, int S, bool kXf32>
Status launch(const DeviceMatrix& w, const void* x, int rows, float* out, int64_t out_stride, bool accumulate,
              cudaStream_t stream) {
  constexpr int kSmem = kSmemBytes<S>;
  static_assert(kSmem <= 48 * 1024, "no opt-in to more shared memory: launchable on every device and in a capture");
  constexpr int kRowsPerBlock = 16 * (kWarps / KS);
  const int64_t blocks = (w.n_out + kRowsPerBlock - 1) / kRowsPerBlock;
  kq_f16_kernel<KS, NT, S, kXf32><<<static_cast<unsigned>(blocks), kWarps * 32, kSmem, stream>>>(
      static_cast<const uint8_t*>(w.data), matrix_row_bytes(w), w.n_out, static_cast<int>(w.n_in / 256), x, w.n_in,
      rows, out, out_stride, accumulate ? 1 : 0);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

// Every width of one KS: f32 activations rounded in registers at up to 8 aligned rows, else the f16 copy.
template <int KS>
Status launch_streams(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                      bool accumulate, void* x16, cudaStream_t stream) {
  const int r = static_cast<int>(rows);
  if (rows <= 8 && (reinterpret_cast<uintptr_t>(x) & 15) == 0) {
    return launch<KS, 1, 4, true>(w, x, r, out, out_stride, accumulate, stream);
  }
  SAKER_RETURN_IF_ERROR(launch_convert_f32(x, rows * w.n_in, DType::kF16, x16, stream));
  if (rows <= 8) return launch<KS, 1, 4, false>(w, x16, r, out, out_stride, accumulate, stream);
  if (rows <= 16) return launch<KS, 2, 4, false>(w, x16, r, out, out_stride, accumulate, stream);
  if (rows <= 32) return launch<KS, 4, 4, false>(w, x16, r, out, out_stride, accumulate, stream);
  return launch<KS, 8, 3, false>(w, x16, r, out, out_stride, accumulate, stream);
}

}  // namespace

bool matmul_kq_f16_supported(const DeviceMatrix& w, int64_t rows, int64_t scratch_rows, int64_t scratch_n_in) {
  if (w.type != DType::kQ4_K || w.layout != 0 || rows < 1 || rows > kKqF16MaxRows) return false;
  if (w.n_in % 256 != 0 || w.n_in / 256 > 0x7FFFFFFF || (reinterpret_cast<uintptr_t>(w.data) & 15) != 0) return false;
  if ((w.n_out + 15) / 16 > 0x7FFFFFFF) return false;
  return rows <= scratch_rows && w.n_in <= scratch_n_in;  // every call may need the f16 copy
}

Status launch_matmul_kq_f16(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                            bool accumulate, void* x16, int k_streams, cudaStream_t stream) {
  switch (k_streams) {
    case 1: return launch_streams<1>(w, x, rows, out, out_stride, accumulate, x16, stream);
    case 2: return launch_streams<2>(w, x, rows, out, out_stride, accumulate, x16, stream);
    case 4: return launch_streams<4>(w, x, rows, out, out_stride, accumulate, x16, stream);
    default:
      return make_error(StatusCode::kInvalidArgument,
                        "cuda matmul: " + std::to_string(k_streams) + " K streams asked for (1, 2 or 4)");
  }
}

}  // namespace saker::cuda::detail
