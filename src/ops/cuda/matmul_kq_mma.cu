// The K-quant decode and verify matmul (Q4_K, Q5_K, Q6_K weights, 1-64 activation rows) on int8 tensor
// cores, in the canonical order of kq_canon.h, so a row's output bits do not depend on the row count:
//   1. kx_quantize_kernel: x [rows, n_in] f32 -> int8 codes + one KxBlock per 256 elements (the context's
//      int8 scratch);
//   2. kq_mma_kernel: a block of eight warps owns 16 * MT output rows; warp w is stream w of the canonical
//      sum and takes weight blocks w, w + 8, ... For each it loads its lanes' fragments of the weight codes
//      straight from the GGUF rows (no shared memory), multiplies them with every 8-row n-tile of codes by
//      mma.sync (m16n8k32 for Q4_K / Q5_K sub-blocks of 32, m16n8k16 for Q6_K's of 16), folds the exact
//      int32 sums into T and M with the scales and shifts, and adds the block's value to its stream. The
//      eight streams meet in shared memory in the canonical tree.
// Each weight byte is read from DRAM once per call; the codes of x (1 byte an element) are re-read from L1/L2
// by every block of output rows, which is what MT > 1 (more output rows per block) saves at wide calls.
//
// Fragment layouts (PTX ISA, mma.m16n8k32 / m16n8k16 with .s8): groupID g = lane >> 2, t = lane & 3.
//   k32 A: reg0 row g k 4t..4t+3, reg1 row g+8 k 4t.., reg2 row g k 4t+16.., reg3 row g+8 k 4t+16..
//   k32 B: reg0 k 4t..4t+3, reg1 k 4t+16..4t+19, column (activation row) g
//   k16 A: reg0 row g k 4t..4t+3, reg1 row g+8 k 4t..;  k16 B: reg0 k 4t..4t+3, column g
//   C: c0 c1 row g, columns 2t, 2t+1; c2 c3 row g+8, same columns
// Which element of a sub-block an MMA k index stands for is free (the sum is exact in any order), as long as
// A and B agree. Here lane t's k indices of a 32-element sub-block are its elements 8t .. 8t+7 (k 4t+i <->
// 8t+i, k 4t+16+i <-> 8t+4+i), so each lane reads 8 consecutive code bytes; for Q6_K's 16-element
// sub-blocks, elements 4t .. 4t+3.
#include <cuda_runtime.h>

#include <type_traits>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/matmul_internal.cuh"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

// ---- tensor-core instructions

__device__ __forceinline__ void mma_k32(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0), "r"(0), "r"(0), "r"(0));
}
__device__ __forceinline__ void mma_k16(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
               : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
               : "r"(a0), "r"(a1), "r"(b0), "r"(0), "r"(0), "r"(0), "r"(0));
}

// T[e] += S[e] * (weight row's scale << column's shift) for the four C elements (rows g, g, g+8, g+8;
// columns c0, c1, c0, c1) of one sub-block.
__device__ __forceinline__ void fold_scaled(int (&T)[4], const int (&s)[4], int sc0, int sc1, int sh0, int sh1) {
  // Q6_K's scales are signed: C++20 defines sc << sh as sc * 2^sh for them too. One SHL; a build with
  // sc * (1 << sh) measured 9.5 against 8.9 ms for 16 verify rows (8B Q4_K_M, on another machine that day).
  T[0] += s[0] * (sc0 << sh0);
  T[1] += s[1] * (sc0 << sh1);
  T[2] += s[2] * (sc1 << sh0);
  T[3] += s[3] * (sc1 << sh1);
}

// ---- weight formats. Each gives one lane's view of a weight row's block (Row), the MMAs of a row pair
// against one n-tile's codes (sums S per sub-block, folded into T at once) and the block value.

// Q4_K (144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles) and Q5_K (176:
// the same header, 32 bytes of 5th bits, 128 of nibbles). Sub-block j = 2c + h: elements 64c + 32h + l are
// nibble h of qs[32c + l] (| bit j of qh[l] << 4 for Q5_K). Lane t reads bytes 8t .. 8t+7 of each.
template <bool k5Bit>
struct KqMinFmt {
  static constexpr int kBlockBytes = k5Bit ? 176 : 144;
  static constexpr int kQs = k5Bit ? 48 : 16;
  struct Row {
    float d, dmin;
    uint32_t sc[2], mn[2];  // the eight 6-bit scales and mins, one per byte (unpacked once per block)
    uint32_t q[4][2];       // qs bytes 32c + 8t .. +7
    uint32_t h[2];          // Q5_K: qh bytes 8t .. 8t+7
  };
  // X: the lane's B fragments of one activation row: sub-block j's elements 8t .. 8t+7.
  struct X {
    uint32_t b[8][2];
  };
  __device__ __forceinline__ static Row load(const uint8_t* blk, int t) {
    Row r;
    const uint4 hdr = __ldg(reinterpret_cast<const uint4*>(blk));
    r.d = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x & 0xFFFF)));
    r.dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x >> 16)));
    r.sc[0] = r.sc[1] = r.mn[0] = r.mn[1] = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q8::k_scale_min_sel(hdr.y, hdr.z, hdr.w, j, &sc, &m);
      r.sc[j >> 2] |= static_cast<uint32_t>(sc) << (8 * (j & 3));
      r.mn[j >> 2] |= static_cast<uint32_t>(m) << (8 * (j & 3));
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(blk + kQs + 32 * c + 8 * t));
      r.q[c][0] = v.x;
      r.q[c][1] = v.y;
    }
    if constexpr (k5Bit) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(blk + 16 + 8 * t));
      r.h[0] = v.x;
      r.h[1] = v.y;
    } else {
      r.h[0] = r.h[1] = 0;
    }
    return r;
  }
  __device__ __forceinline__ static X load_x(const int8_t* xb, int t) {  // xb: the block's 256 codes
    X x;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(xb + 32 * j + 8 * t));
      x.b[j][0] = v.x;
      x.b[j][1] = v.y;
    }
    return x;
  }
  __device__ __forceinline__ static uint32_t codes(const Row& r, int j, int w) {
    const uint32_t raw = r.q[j >> 1][w];
    uint32_t c = (j & 1) ? (raw >> 4) & 0x0F0F0F0Fu : raw & 0x0F0F0F0Fu;
    if constexpr (k5Bit) c |= ((r.h[w] >> j) & 0x01010101u) << 4;
    return c;
  }
  // T (and M) of the four C elements (rows g, g, g+8, g+8; columns c0, c1, c0, c1) of a row pair.
  __device__ __forceinline__ static void block_ints(const Row& r0, const Row& r1, const X& x, const ColMeta (&col)[2],
                                                    int (&T)[4], int (&M)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) T[e] = M[e] = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      int s[4];
      mma_k32(s, codes(r0, j, 0), codes(r1, j, 0), codes(r0, j, 1), codes(r1, j, 1), x.b[j][0], x.b[j][1]);
      const int sc0 = byte_at(r0.sc, j), sc1 = byte_at(r1.sc, j), m0 = byte_at(r0.mn, j), m1 = byte_at(r1.mn, j);
      fold_scaled(T, s, sc0, sc1, col[0].shift(j), col[1].shift(j));
      const int q0 = col[0].qsum(j), q1 = col[1].qsum(j);
      M[0] += m0 * q0;
      M[1] += m0 * q1;
      M[2] += m1 * q0;
      M[3] += m1 * q1;
    }
  }
  __device__ __forceinline__ static float value(const Row& r, float d8, int t_sum, int m_sum) {
    return kq::kq_value_min(d8, r.d, r.dmin, t_sum, m_sum);
  }
  __device__ __forceinline__ static int byte_at(const uint32_t (&w)[2], int j) {
    return static_cast<int>((w[j >> 2] >> (8 * (j & 3))) & 0xFF);
  }
};

// Q6_K (210 bytes, 2-byte aligned: ql[128], qh[64], int8 scales[16], f16 d). Element 128h + 32r + l (h 0..1,
// r 0..3, l 0..31) is nibble (r >> 1) of ql[64h + 32(r & 1) + l] | bits 2r, 2r+1 of qh[32h + l] << 4, minus
// 32; 16-element sub-block i = 8h + 2r + (l >> 4) has scale i. Lane t holds elements 4t .. 4t+3 of each.
struct KqQ6Fmt {
  static constexpr int kBlockBytes = 210;
  struct Row {
    float d;
    uint32_t lo[2][2][2];  // [h][s][r & 1]: ql word at 64h + 32(r & 1) + 16s + 4t
    uint32_t hb[2][2];     // [h][s]: qh word at 128 + 32h + 16s + 4t
    uint32_t sc[4];        // the 16 int8 scales
  };
  struct X {
    uint32_t b[16];  // sub-block i's elements 4t .. 4t+3
  };
  __device__ __forceinline__ static Row load(const uint8_t* blk, int t) {
    Row r;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        r.lo[h][s][0] = ld_u32_a2(blk + 64 * h + 16 * s + 4 * t);
        r.lo[h][s][1] = ld_u32_a2(blk + 64 * h + 32 + 16 * s + 4 * t);
        r.hb[h][s] = ld_u32_a2(blk + 128 + 32 * h + 16 * s + 4 * t);
      }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) r.sc[k] = ld_u32_a2(blk + 192 + 4 * k);
    r.d = __half2float(__ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(blk + 208))));
    return r;
  }
  __device__ __forceinline__ static X load_x(const int8_t* xb, int t) {
    X x;
#pragma unroll
    for (int i = 0; i < 16; ++i) x.b[i] = __ldg(reinterpret_cast<const uint32_t*>(xb + 16 * i + 4 * t));
    return x;
  }
  __device__ __forceinline__ static uint32_t codes(const Row& r, int i) {
    const int h = i >> 3, rr = (i >> 1) & 3, s = i & 1;
    const uint32_t raw = r.lo[h][s][rr & 1];
    const uint32_t nib = (rr >> 1) ? (raw >> 4) & 0x0F0F0F0Fu : raw & 0x0F0F0F0Fu;
    const uint32_t code = nib | (((r.hb[h][s] >> (2 * rr)) & 0x03030303u) << 4);
    return __vsub4(code, 0x20202020u);  // 0..63 -> -32..31 per byte
  }
  __device__ __forceinline__ static int scale(const Row& r, int i) {
    return static_cast<int>(static_cast<int8_t>((r.sc[i >> 2] >> (8 * (i & 3))) & 0xFF));
  }
  __device__ __forceinline__ static void block_ints(const Row& r0, const Row& r1, const X& x, const ColMeta (&col)[2],
                                                    int (&T)[4], int (&M)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) T[e] = M[e] = 0;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      int s[4];
      mma_k16(s, codes(r0, i), codes(r1, i), x.b[i]);
      const int sc0 = scale(r0, i), sc1 = scale(r1, i);
      fold_scaled(T, s, sc0, sc1, col[0].shift(i >> 1), col[1].shift(i >> 1));
    }
  }
  __device__ __forceinline__ static float value(const Row& r, float d8, int t_sum, int) {
    return kq::kq_value_sym(d8, r.d, t_sum);
  }
};

constexpr int kKqWarps = kq::kStreams;

// out[n, o] for o in [o_base, o_base + 16 MT), n < rows. NT 8-row n-tiles cover the rows.
template <class F, int MT, int NT, int U>
__global__ void __launch_bounds__(kKqWarps * 32)
    kq_mma_kernel(const uint8_t* __restrict__ w,  // [n_out, row_bytes] GGUF blocks
                  int64_t row_bytes, int64_t n_out, int n_blocks,
                  const int8_t* __restrict__ xq,  // [rows, n_in] codes
                  const KxBlock* __restrict__ kx,  // [rows, n_blocks]
                  int64_t n_in, int rows, float* __restrict__ out, int64_t out_stride, int accumulate) {
  __shared__ float red[kKqWarps / 2][MT * NT * 4][32];  // one slot per pair of a tree level
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t o_base = static_cast<int64_t>(blockIdx.x) * 16 * MT;

  // Weight rows g and g + 8 of each m-tile; rows past n_out re-read the last row (never written).
  const uint8_t* wrow[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int64_t o = o_base + 16 * mt + g + 8 * hf;
      wrow[mt][hf] = w + (o < n_out ? o : n_out - 1) * row_bytes;
    }
  }
  // B rows (column g of each n-tile) and the C columns 2t, 2t+1; rows past `rows` read the last row.
  int brow[NT], ccol[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    brow[nt] = min(nt * 8 + g, rows - 1);
    ccol[nt][0] = min(nt * 8 + 2 * t, rows - 1);
    ccol[nt][1] = min(nt * 8 + 2 * t + 1, rows - 1);
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;
    }
  }

  // The integer sums of one block (its weight rows already loaded) with every n-tile, into the streams.
  auto compute = [&](const typename F::Row (&r)[MT][2], int b) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const typename F::X xf =
          F::load_x(xq + static_cast<int64_t>(brow[nt]) * n_in + static_cast<int64_t>(b) * kq::kBlock, t);
      ColMeta col[2];
      col[0] = load_meta(kx + static_cast<int64_t>(ccol[nt][0]) * n_blocks + b);
      col[1] = load_meta(kx + static_cast<int64_t>(ccol[nt][1]) * n_blocks + b);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        int T[4], M[4];
        F::block_ints(r[mt][0], r[mt][1], xf, col, T, M);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float v = F::value(r[mt][e >> 1], col[e & 1].d8, T[e], M[e]);
          acc[mt][nt][e] = kq::fadd(acc[mt][nt][e], v);
        }
      }
    }
  };
  auto load = [&](typename F::Row (&r)[MT][2], int b) {
    const int64_t boff = static_cast<int64_t>(b) * F::kBlockBytes;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      r[mt][0] = F::load(wrow[mt][0] + boff, t);
      r[mt][1] = F::load(wrow[mt][1] + boff, t);
    }
  };
  // U of this warp's blocks (b, b + 8, ...) are loaded before the first is computed, so their loads are in
  // flight together; the stream still adds them in block order.
  for (int b = warp; b < n_blocks; b += U * kKqWarps) {
    const int next = b + U * kKqWarps;
    if (next < n_blocks && t == 0) {  // the next iteration's first block into L2 meanwhile
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const uint8_t* p = wrow[mt][hf] + static_cast<int64_t>(next) * F::kBlockBytes;
          asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
          asm volatile("prefetch.global.L2 [%0];" ::"l"(p + F::kBlockBytes - 1));
        }
      }
    }
    typename F::Row r[U][MT][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u == 0 || b + u * kKqWarps < n_blocks) load(r[u], b + u * kKqWarps);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u == 0 || b + u * kKqWarps < n_blocks) compute(r[u], b + u * kKqWarps);
    }
  }

  // The streams meet in the canonical tree ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)): at each level
  // the right-hand warps of the pairs store, the left-hand ones add (fadd is commutative, so a + b is b + a).
  auto level = [&](int span) {  // pairs (w, w + span) for w a multiple of 2 span
    if ((warp & (2 * span - 1)) == span) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) red[warp / (2 * span)][(mt * NT + nt) * 4 + e][lane] = acc[mt][nt][e];
        }
      }
    }
    __syncthreads();
    if ((warp & (2 * span - 1)) == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            acc[mt][nt][e] = kq::fadd(acc[mt][nt][e], red[warp / (2 * span)][(mt * NT + nt) * 4 + e][lane]);
          }
        }
      }
    }
    __syncthreads();
  };
  level(1);
  level(2);
  level(4);
  if (warp != 0) return;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t o = o_base + 16 * mt + g + 8 * (e >> 1);
        const int n = nt * 8 + 2 * t + (e & 1);
        if (o < n_out && n < rows) {
          float* dst = out + static_cast<int64_t>(n) * out_stride + o;
          *dst = accumulate ? kq::fadd(*dst, acc[mt][nt][e]) : acc[mt][nt][e];
        }
      }
    }
  }
}

template <class F>
Status launch_kq_for(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                     int64_t out_stride, bool accumulate, cudaStream_t stream) {
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int64_t rb = matrix_row_bytes(w);
  const int n_blocks = static_cast<int>(w.n_in / kq::kBlock);
  auto launch = [&](auto m_tiles, auto n_tiles) -> Status {
    constexpr int MT = decltype(m_tiles)::value, NT = decltype(n_tiles)::value;
    constexpr int U = 1;  // blocks loaded ahead per warp: 2 takes 128-255 registers a thread
    const int64_t grid = (w.n_out + 16 * MT - 1) / (16 * MT);
    if (grid > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
    kq_mma_kernel<F, MT, NT, U><<<static_cast<unsigned>(grid), kKqWarps * 32, 0, stream>>>(
        wp, rb, w.n_out, n_blocks, xq, kx, w.n_in, static_cast<int>(rows), out, out_stride, accumulate ? 1 : 0);
    SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status{};
  };
  using I1 = std::integral_constant<int, 1>;
  using I2 = std::integral_constant<int, 2>;
  using I4 = std::integral_constant<int, 4>;
  using I8 = std::integral_constant<int, 8>;
  // The kernel takes MT m-tiles per block (fewer re-reads of x's codes), but MT = 2 spilled registers at
  // 17-64 rows as written, so every width runs MT = 1; MT never changes the order of a row's sums.
  if (rows <= 8) return launch(I1{}, I1{});
  if (rows <= 16) return launch(I1{}, I2{});
  if (rows <= 32) return launch(I1{}, I4{});
  return launch(I1{}, I8{});
}

}  // namespace

Status launch_kq_mma(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, int64_t rows, float* out,
                     int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ4_K: return launch_kq_for<KqMinFmt<false>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K: return launch_kq_for<KqMinFmt<true>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K: return launch_kq_for<KqQ6Fmt>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no int8 tensor-core kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
