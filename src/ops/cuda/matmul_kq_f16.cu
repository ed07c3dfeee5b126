// The Q4_K and Q6_K matmul of 1-64 activation rows on f16 tensor cores: weights dequantised in registers to f16
// (Q4_K: d * sc * q - dmin * m; Q6_K: d * sc * (q - 32); each scale and each weight rounded once), activations
// rounded to f16, f32 accumulators. Each weight byte is read from DRAM once per call whatever the row count; a row's output bits
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
// (as the 16-byte chunks that cover them: Q6_K blocks are 2-byte aligned) into its own ring of shared-memory
// stages with cp.async (no block-wide barrier), and the streams of an m-tile meet in shared memory in a fixed
// order. Activations are read from global memory (L1 / L2: every block reads the
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
#include <type_traits>

#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cp_async.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/mma_f16.cuh"

namespace saker::cuda::detail {
namespace {

using kq_f16::kWarps;
using kq_f16::staged_word;  // a staged row's word at an even byte offset

__device__ __forceinline__ __half2 as_h2(uint32_t v) { return *reinterpret_cast<const __half2*>(&v); }
__device__ __forceinline__ uint32_t as_u32(__half2 v) { return *reinterpret_cast<const uint32_t*>(&v); }

// One staged row's block header: its scale words and (d, dmin).
struct RowScales {
  kq_f16::ScaleWords words;
  __half2 dd;
};
__device__ __forceinline__ RowScales load_scales(const uint8_t* row) {
  const uint4 hdr = *reinterpret_cast<const uint4*>(row);
  return {kq_f16::unpack_scales(hdr.y, hdr.z, hdr.w), as_h2(hdr.x)};
}
// Sub-block j's (d * sc_j, dmin * m_j): (1024 + sc) - 1024 is sc exactly, times d rounds once. (One FMA with
// -1024 d would save an instruction but overflows f16 for d >= 64.)
__device__ __forceinline__ __half2 sub_scale(const RowScales& r, int j) {
  return __hmul2(__hsub2(as_h2(kq_f16::scale_magic(r.words, j)), __float2half2_rn(1024.0f)), r.dd);
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

// The B fragments of one activation row for elements at .. at + 3: [0] = (i 0, 2), [1] = (i 1, 3).
template <bool kXf32>
__device__ __forceinline__ void load_b4(const void* xrow, int64_t at, bool ok, uint32_t (&b)[2]) {
  if (!ok) {
    b[0] = b[1] = 0;
    return;
  }
  if constexpr (kXf32) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(xrow) + at));
    b[0] = mma_pack<false>(v.x, v.z);
    b[1] = mma_pack<false>(v.y, v.w);
  } else {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(static_cast<const __half*>(xrow) + at));
    b[0] = kq_f16::x16_pair(u.x, u.y, 0);
    b[1] = kq_f16::x16_pair(u.x, u.y, 1);
  }
}

// The B fragments of one activation row for sub-block j (elements 8t .. 8t + 7 of it): [p][0] = (i 0, 2),
// [p][1] = (i 1, 3) of elements 8t + 4p + i. f16 activations in one 16-byte load.
template <bool kXf32>
__device__ __forceinline__ void load_b(const void* xrow, int64_t at, bool ok, uint32_t (&b)[2][2]) {
  if (kXf32 || !ok) {
    load_b4<kXf32>(xrow, at, ok, b[0]);
    load_b4<kXf32>(xrow, at + 4, ok, b[1]);
    return;
  }
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(xrow) + at));
  b[0][0] = kq_f16::x16_pair(u.x, u.y, 0);
  b[0][1] = kq_f16::x16_pair(u.x, u.y, 1);
  b[1][0] = kq_f16::x16_pair(u.z, u.w, 0);
  b[1][1] = kq_f16::x16_pair(u.z, u.w, 1);
}


// ---- formats: how a block's 16 staged rows are multiplied with the activations. s0 / s1: the staged rows g and
// g + 8 (16-byte aligned), the block starting at byte at0 / at1 of them (always 0 for Q4_K); xr / xok: the lane's
// activation rows; b: the block index.

struct Q4Fmt {
  static constexpr int kBlockBytes = kq_f16::kBlockBytes;
  static constexpr int kChunks = kBlockBytes / 16;  // blocks start 16-byte aligned
  static constexpr int kRowStride = 160;            // rows g and g + 4 land 8 banks apart
  template <int NT, bool kXf32>
  __device__ __forceinline__ static void block(const uint8_t* s0, int, const uint8_t* s1, int,
                                               const char* const (&xr)[NT], const bool (&xok)[NT], int64_t b, int t,
                                               float (&acc)[NT][4]) {
    const RowScales rs0 = load_scales(s0), rs1 = load_scales(s1);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      // B fragments of sub-blocks 2c, 2c + 1 for every n-tile.
      uint32_t bf[NT][2][2][2];  // [nt][h][p][reg]
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) load_b<kXf32>(xr[nt], b * 256 + 32 * (2 * c + h) + 8 * t, xok[nt], bf[nt][h]);
      }
      // Words p = 0, 1 of rows g and g + 8 (word_byte(c, t, 1) = word_byte(c, t, 0) + 4).
      const int at = kq_f16::kQs + kq_f16::word_byte(c, t, 0);
      const uint2 q0 = *reinterpret_cast<const uint2*>(s0 + at);
      const uint2 q1 = *reinterpret_cast<const uint2*>(s1 + at);
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
  }
};

struct Q6Fmt {
  static constexpr int kBlockBytes = kq_f16::q6::kBlockBytes;
  static constexpr int kChunks = kq_f16::q6::kStageChunks;
  static constexpr int kRowStride = 240;  // 60 words: a half-warp's loads of eight rows on distinct banks
  // The scale pairs (s_i, s_{i+1}) = f16(d * sc) of sub-blocks i = 8h + 2r, 8h + 2r + 1 (k = 4h + r) of a row.
  __device__ __forceinline__ static void load_scales(const uint8_t* row, int at, __half2 (&sp)[8]) {
    // d is the high half of the word at kD - 2, which stays inside the staged chunks.
    const __half d = __ushort_as_half(static_cast<unsigned short>(staged_word(row, at + kq_f16::q6::kD - 2) >> 16));
    const __half2 dd = __half2half2(d);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t word = staged_word(row, at + kq_f16::q6::kScales + 4 * w);
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        // (1152 + sc) - 1152 is sc exactly; times d rounds once.
        const __half2 sc = __hsub2(as_h2(kq_f16::q6::scale_magic(word, 2 * m)), __float2half2_rn(1152.0f));
        sp[2 * w + m] = __hmul2(sc, dd);
      }
    }
  }
  template <int NT, bool kXf32>
  __device__ __forceinline__ static void block(const uint8_t* s0, int at0, const uint8_t* s1, int at1,
                                               const char* const (&xr)[NT], const bool (&xok)[NT], int64_t b, int t,
                                               float (&acc)[NT][4]) {
    namespace q6 = kq_f16::q6;
    __half2 sp0[8], sp1[8];
    load_scales(s0, at0, sp0);
    load_scales(s1, at1, sp1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        uint32_t bf[NT][4][2];  // [nt][r][reg]
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
          for (int r = 0; r < 4; ++r) load_b4<kXf32>(xr[nt], b * 256 + q6::elem(h, r, s, t, 0, 0), xok[nt], bf[nt][r]);
        }
        const uint32_t ql0[2] = {staged_word(s0, at0 + q6::ql_byte(h, 0, s, t)), staged_word(s0, at0 + q6::ql_byte(h, 1, s, t))};
        const uint32_t ql1[2] = {staged_word(s1, at1 + q6::ql_byte(h, 0, s, t)), staged_word(s1, at1 + q6::ql_byte(h, 1, s, t))};
        const uint32_t qh0 = staged_word(s0, at0 + q6::qh_byte(h, s, t)), qh1 = staged_word(s1, at1 + q6::qh_byte(h, s, t));
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          // Sub-block i = 8h + 2r + s: the low or high half of scale pair 4h + r, for every element of the pair.
          const __half2 sc0 = s ? __high2half2(sp0[4 * h + r]) : __low2half2(sp0[4 * h + r]);
          const __half2 sc1 = s ? __high2half2(sp1[4 * h + r]) : __low2half2(sp1[4 * h + r]);
          const uint32_t c0 = q6::codes(ql0[r & 1], qh0, r), c1 = q6::codes(ql1[r & 1], qh1, r);
          uint32_t a[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {  // A register j: pair j >> 1 of row g (j even) or g + 8
            const uint32_t m = q6::code_magic(j & 1 ? c1 : c0, j >> 1);
            a[j] = as_u32(__hmul2(__hsub2(as_h2(m), __float2half2_rn(1056.0f)), j & 1 ? sc1 : sc0));
          }
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma_16816<false>(acc[nt], a, bf[nt][r][0], bf[nt][r][1]);
        }
      }
    }
  }
};

template <class F, int S>
constexpr int kSmemBytes = kWarps * S * 16 * F::kRowStride;

// KS: K streams of a block (1, 2 or 4). Warp w owns m-tile w / KS of the block's kWarps / KS (16 output rows
// each) and is stream w % KS of it: it takes the weight blocks w % KS, w % KS + KS, ... of its rows in order.
// The streams of an m-tile meet in shared memory in a fixed order, so the bits depend on KS (one KS per
// matrix) and never on the row count. Warps of a block that share a stream read the same activations at about
// the same time (L1 hits): fewer streams, less activation traffic per weight byte, fewer blocks in the grid.
template <class F, int KS, int NT, int S, bool kXf32>
__global__ void __launch_bounds__(kWarps * 32)
    kq_f16_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes] GGUF blocks
                  int64_t row_bytes, int64_t n_out, int n_blocks,
                  const void* __restrict__ x,  // [rows, n_in] f32 (kXf32) or f16, 16-byte aligned rows
                  int64_t n_in, int rows,
                  float* __restrict__ out,  // [rows, out_stride] f32
                  int64_t out_stride, int accumulate) {
  chain_in_late();
  constexpr int kTiles = kWarps / KS;  // m-tiles a block
  constexpr int kTileBytes = 16 * F::kRowStride;
  static_assert(kWarps * NT * 4 * 32 * 4 <= kSmemBytes<F, S>, "the reduction reuses the ring");
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int tile = warp / KS, stream = warp % KS;
  uint8_t* ring = smem + warp * S * kTileBytes;
  const int64_t o0 = (static_cast<int64_t>(blockIdx.x) * kTiles + tile) * 16;  // the warp's first output row
  const int my_blocks = stream < n_blocks ? (n_blocks - stream + KS - 1) / KS : 0;
  // Rows past n_out re-read the last row of the matrix (their results are never written).
  auto row_off = [&](int r) { return std::min<int64_t>(o0 + r, n_out - 1) * row_bytes; };

  // Copies: piece p (0 .. 16 * kChunks - 1) of the m-tile is the 16 bytes kp = p % kChunks of its row p / kChunks,
  // counted from the 16-byte boundary at or below the block's start; lane l copies pieces l, l + 32, ..., so a
  // copy instruction reads whole runs of consecutive rows' bytes.
  constexpr int kLanePieces = (16 * F::kChunks + 31) / 32;
  int64_t src_row[kLanePieces];
  int dst_off[kLanePieces], kp_of[kLanePieces];
#pragma unroll
  for (int k = 0; k < kLanePieces; ++k) {
    const int p = lane + 32 * k, r = min(p / F::kChunks, 15), kp = p % F::kChunks;
    dst_off[k] = r * F::kRowStride + 16 * kp;
    src_row[k] = row_off(r);
    kp_of[k] = kp;
  }
  int copied = 0;
  auto issue = [&]() {
    if (copied < my_blocks) {
      const int64_t boff = static_cast<int64_t>(stream + KS * copied) * F::kBlockBytes;
      uint8_t* st = ring + (copied % S) * kTileBytes;
#pragma unroll
      for (int k = 0; k < kLanePieces; ++k) {
        if (lane + 32 * k < 16 * F::kChunks) cp_async16(st + dst_off[k], w + kq_f16::stage_chunk_src(src_row[k] + boff, kp_of[k]));
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
  // Where rows g and g + 8 start inside their staged chunks: (row start + block offset) mod 16.
  const int64_t lo0 = row_off(g), lo1 = row_off(g + 8);

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
  }

  for (int i = 0; i < my_blocks; ++i) {
    cp_async_wait<S - 2>();  // block i has landed (this lane's pieces)
    __syncwarp();            // and every lane's; every lane is also done with block i - 1's stage
    issue();                 // block i + S - 1 into that stage, in flight while block i is computed
    const int64_t b = stream + KS * i;
    const uint8_t* st = ring + (i % S) * kTileBytes;
    const int at0 = kq_f16::stage_at(lo0 + b * F::kBlockBytes), at1 = kq_f16::stage_at(lo1 + b * F::kBlockBytes);
    F::template block<NT, kXf32>(st + g * F::kRowStride, at0, st + (g + 8) * F::kRowStride, at1, xr, xok, b, t, acc);
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

template <class F, int KS, int NT, int S, bool kXf32>
Status launch(const DeviceMatrix& w, const void* x, int rows, float* out, int64_t out_stride, bool accumulate,
              cudaStream_t stream) {
  constexpr int kSmem = kSmemBytes<F, S>;
  static_assert(kSmem <= 48 * 1024, "no opt-in to more shared memory: launchable on every device and in a capture");
  constexpr int kRowsPerBlock = 16 * (kWarps / KS);
  const int64_t blocks = (w.n_out + kRowsPerBlock - 1) / kRowsPerBlock;
  launch_chained(kq_f16_kernel<F, KS, NT, S, kXf32>, static_cast<unsigned>(blocks), kWarps * 32, kSmem, stream,
                 static_cast<const uint8_t*>(w.data), matrix_row_bytes(w), w.n_out, static_cast<int>(w.n_in / 256), x,
                 w.n_in, rows, out, out_stride, accumulate ? 1 : 0);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

// Every width of one format and KS: f32 activations rounded in registers at up to 8 aligned rows, else the f16
// copy. Stages: four of Q4_K's 2.5 KB a warp, three of Q6_K's 3.75 KB (48 KB a block at most).
template <class F, int KS>
Status launch_streams(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                      bool accumulate, void* x16, cudaStream_t stream) {
  constexpr int S = std::is_same_v<F, Q4Fmt> ? 4 : 3;
  const int r = static_cast<int>(rows);
  if (rows <= 8 && (reinterpret_cast<uintptr_t>(x) & 15) == 0) {
    return launch<F, KS, 1, S, true>(w, x, r, out, out_stride, accumulate, stream);
  }
  SAKER_RETURN_IF_ERROR(launch_convert_f32(x, rows * w.n_in, DType::kF16, x16, stream));
  if (rows <= 8) return launch<F, KS, 1, S, false>(w, x16, r, out, out_stride, accumulate, stream);
  if (rows <= 16) return launch<F, KS, 2, S, false>(w, x16, r, out, out_stride, accumulate, stream);
  if (rows <= 32) return launch<F, KS, 4, S, false>(w, x16, r, out, out_stride, accumulate, stream);
  return launch<F, KS, 8, 3, false>(w, x16, r, out, out_stride, accumulate, stream);
}

template <class F>
Status launch_format(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                     bool accumulate, void* x16, int k_streams, cudaStream_t stream) {
  switch (k_streams) {
    case 1: return launch_streams<F, 1>(w, x, rows, out, out_stride, accumulate, x16, stream);
    case 2: return launch_streams<F, 2>(w, x, rows, out, out_stride, accumulate, x16, stream);
    case 4: return launch_streams<F, 4>(w, x, rows, out, out_stride, accumulate, x16, stream);
    default:
      return make_error(StatusCode::kInvalidArgument,
                        "cuda matmul: " + std::to_string(k_streams) + " K streams asked for (1, 2 or 4)");
  }
}

}  // namespace

bool matmul_kq_f16_supported(const DeviceMatrix& w, int64_t rows, int64_t scratch_rows, int64_t scratch_n_in) {
  if ((w.type != DType::kQ4_K && w.type != DType::kQ6_K) || w.layout != 0 || rows < 1 || rows > kKqF16MaxRows) {
    return false;
  }
  if (w.n_in % 256 != 0 || w.n_in / 256 > 0x7FFFFFFF || (reinterpret_cast<uintptr_t>(w.data) & 15) != 0) return false;
  if ((w.n_out + 15) / 16 > 0x7FFFFFFF) return false;
  return rows <= scratch_rows && w.n_in <= scratch_n_in;  // every call may need the f16 copy
}

Status launch_matmul_kq_f16(const DeviceMatrix& w, const float* x, int64_t rows, float* out, int64_t out_stride,
                            bool accumulate, void* x16, int k_streams, cudaStream_t stream) {
  if (w.type == DType::kQ6_K) return launch_format<Q6Fmt>(w, x, rows, out, out_stride, accumulate, x16, k_streams, stream);
  return launch_format<Q4Fmt>(w, x, rows, out, out_stride, accumulate, x16, k_streams, stream);
}

}  // namespace saker::cuda::detail
