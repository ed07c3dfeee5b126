#pragma once
// The K-quant tensor-core kernel's operand side (matmul_kq_mma.cu; internal, include only from there): the
// int8 MMA instructions, where a warp reads its B fragments (XGlobal, XStaged, XTma), and the weight formats' block
// policies (KqMinFmt for Q4_K / Q5_K, KqQ6Fmt, Q32Fmt, KqIq4XsFmt): each turns a staged row pair's block and the
// activation fragments into the block's canonical values (kq_canon.h).
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
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/q32_layout.h"

namespace saker::cuda::detail {

using kq::KxBlock;
using kq_f16::staged_word;  // a staged row's word at an even byte offset

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

// c += a * b with unsigned A codes (scaled weight codes up to 255) and signed B (activation codes). Not
// volatile: a pure function of its operands, so the compiler may schedule it among the fragment arithmetic.
__device__ __forceinline__ void mma_k32_u8_acc(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// T[e] += S[e] * weight row's scale for the four C elements (rows g, g, g+8, g+8; columns c0, c1, c0, c1) of
// one sub-block. The activation shifts are uniform (kq_canon.h), so T takes its << sh once, at the end.
__device__ __forceinline__ void fold_scaled(int (&T)[4], const int (&s)[4], int sc0, int sc1) {
  T[0] += s[0] * sc0;
  T[1] += s[1] * sc0;
  T[2] += s[2] * sc1;
  T[3] += s[3] * sc1;
}

__device__ __forceinline__ int byte_at(const uint32_t (&w)[2], int j) {
  return static_cast<int>(__byte_perm(w[j >> 2], 0, 0x4440 | (j & 3)));  // byte j, zero-extended: one PRMT
}

// ---- where a warp reads its B fragments (column g's activation codes of the current block, per n-tile;
// off: the byte within the block's 256): ld8 / ld4 read 8 or 4 bytes.
// XGlobal: from global memory through L1 (each block of output rows re-reads x from L1 / L2).
template <int NT>
struct XGlobal {
  const int8_t* p[NT];
  __device__ __forceinline__ uint2 ld8(int nt, int off) const {
    return __ldg(reinterpret_cast<const uint2*>(p[nt] + off));
  }
  __device__ __forceinline__ uint32_t ld4(int nt, int off) const {
    return __ldg(reinterpret_cast<const uint32_t*>(p[nt] + off));
  }
};
// XStaged: from the warp's stage, where the block's 8 NT activation rows were copied with its weights (so the
// copy runs ahead like theirs). Row r's 16-byte chunk c sits at c ^ 2 (r & 7): the eight rows of a fragment
// load then cover all 32 banks (rows are 256 bytes, one bank period apart).
struct XStaged {
  const uint8_t* rows;
  int g;
  __device__ __forceinline__ static int chunk_at(int r, int c) { return c ^ ((r & 7) << 1); }
  __device__ __forceinline__ const uint8_t* at(int nt, int off) const {
    return rows + (nt * 8 + g) * kq::kBlock + (chunk_at(g, off >> 4) << 4) + (off & 15);
  }
  __device__ __forceinline__ uint2 ld8(int nt, int off) const { return *reinterpret_cast<const uint2*>(at(nt, off)); }
  __device__ __forceinline__ uint32_t ld4(int nt, int off) const {
    return *reinterpret_cast<const uint32_t*>(at(nt, off));
  }
};
// XTma: from the warp's stage as a TMA copy left it (Hopper's default): the rows' two 128-byte halves
// are lines 2r and 2r + 1 of the box, and the 128-byte swizzle put a line's 16-byte chunk c at c ^ (line & 7)
// (the stage starts on a 1024-byte boundary). A half-warp's fragment loads (rows g 0-3 or 4-7, chunk pairs
// 2(j & 3) + {0, 1}) then meet eight distinct chunk positions: conflict-free, as XStaged.
struct XTma {
  const uint8_t* rows;
  int g;
  __device__ __forceinline__ const uint8_t* at(int nt, int off) const {
    const int line = 2 * (nt * 8 + g) + (off >> 7);
    return rows + line * 128 + ((((off >> 4) & 7) ^ (line & 7)) << 4) + (off & 15);
  }
  __device__ __forceinline__ uint2 ld8(int nt, int off) const { return *reinterpret_cast<const uint2*>(at(nt, off)); }
  __device__ __forceinline__ uint32_t ld4(int nt, int off) const {
    return *reinterpret_cast<const uint32_t*>(at(nt, off));
  }
};

// ---- weight formats, as staged in shared memory. A block of one weight row is copied as the kChunks
// 16-byte chunks that cover it (from the 16-byte boundary at or below its start), one row every kRowStride
// bytes of the stage; the strides keep a half-warp's fragment loads on distinct banks. Each format gives
// the row header a lane needs for a block (Hdr) and block_values: the canonical values (kq_canon.h) of a row
// pair's block against NT n-tiles of activation codes, for the lane's four C elements of each (rows g, g, g+8,
// g+8; columns c0, c1, c0, c1). Q6_K, IQ4_XS and the 32-element formats build a sub-block's A fragment and
// scales once for all NT n-tiles (per n-tile, Q6_K and IQ4_XS spilled registers at 9-64 rows; Q6_K now runs
// 6% faster at 16 rows and 11% at 64, H100). n_sub: the block's 32-element sub-blocks (8 but in the partial
// last group of a 32-element format's row).

// Q4_K (144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles) and Q5_K (176:
// the same header, 32 bytes of 5th bits, 128 of nibbles). Sub-block j = 2c + h: elements 64c + 32h + l are
// nibble h of qs[32c + l] (| bit j of qh[l] << 4 for Q5_K). Lane t reads bytes 8t .. 8t+7 of each.
template <bool k5Bit>
struct KqMinFmt {
  static constexpr int kBlockBytes = k5Bit ? 176 : 144;
  static constexpr int kQs = k5Bit ? 48 : 16;
  static constexpr int kChunks = kBlockBytes / 16;       // blocks start 16-byte aligned
  static constexpr int kRowStride = k5Bit ? 224 : 160;   // 14 / 10 chunks: rows 2 chunks apart mod 8
  struct Hdr {
    float d, dmin;
    uint32_t sc[2], mn[2];  // the eight 6-bit scales and mins, one per byte
    uint32_t h[2];          // Q5_K: qh bytes 8t .. 8t+7
  };
  __device__ __forceinline__ static Hdr load_hdr(const uint8_t* s, int /*at: 0*/, int t) {
    Hdr r;
    const uint4 hdr = *reinterpret_cast<const uint4*>(s);
    r.d = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x & 0xFFFF)));
    r.dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x >> 16)));
    // The 6-bit scales and mins of q8::k_scale_min_sel, four bytes a word at once (a per-sub-block unpack
    // was about a fifth of the kernel's instructions): sub-blocks 0-3 keep the low 6 bits of bytes 0-3 / 4-7;
    // 4-7 take a nibble of bytes 8-11 and the top 2 bits of bytes 0-3 / 4-7.
    const kq_f16::ScaleWords words = kq_f16::unpack_scales(hdr.y, hdr.z, hdr.w);
    r.sc[0] = words.sc[0], r.sc[1] = words.sc[1], r.mn[0] = words.mn[0], r.mn[1] = words.mn[1];
    if constexpr (k5Bit) {
      const uint2 v = *reinterpret_cast<const uint2*>(s + 16 + 8 * t);
      r.h[0] = v.x;
      r.h[1] = v.y;
    } else {
      r.h[0] = r.h[1] = 0;
    }
    return r;
  }
  __device__ __forceinline__ static uint32_t codes(uint32_t raw, uint32_t hbits, int j) {
    uint32_t c = (j & 1) ? (raw >> 4) & 0x0F0F0F0Fu : raw & 0x0F0F0F0Fu;
    if constexpr (k5Bit) c |= ((hbits >> j) & 0x01010101u) << 4;
    return c;
  }
  // Each sub-block's scale goes into the A fragment, so the tensor core sums the whole block and no integer
  // fold sits between two MMAs: sc = hi * 2^kDigitBits + lo with both digits small enough that a code times a
  // digit fits an unsigned byte (Q4_K 15 * 15 = 225, 15 * 3; Q5_K 31 * 7 = 217 both), and one 32-bit multiply
  // scales four packed codes (no product carries into the next byte). Per sub-block and n-tile, three MMAs
  // accumulate sum_j lo_j S_j, sum_j hi_j S_j and, with the sub-block's min broadcast over its 32 k as A,
  // sum_j m_j Q_j; then T = ((hi << kDigitBits) + lo) << 3 and M = min_sum << 3, the exact sums of kq_canon.h
  // (whose activation shift is 3 in every sub-block). So a column needs only its scale d8 from KxBlock.
  template <int NT, class X>
  __device__ __forceinline__ static void digit_values(const Hdr& r0, const Hdr& r1, const uint8_t* s0,
                                                      const uint8_t* s1, const X& xb, const ColMeta (&col)[NT][2],
                                                      int t, float (&v)[NT][4]) {
    constexpr int kDigitBits = k5Bit ? 3 : 4;
    constexpr uint32_t kDigitMask = k5Bit ? 0x07070707u : 0x0F0F0F0Fu;
    int lo_sum[NT][4], hi_sum[NT][4], min_sum[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) lo_sum[nt][e] = hi_sum[nt][e] = min_sum[nt][e] = 0;
    }
    // The digits of both rows' eight scales, one per byte (the scales are 6-bit, so the shifted words keep
    // no bit of the next byte under the mask).
    const uint32_t lo0[2] = {r0.sc[0] & kDigitMask, r0.sc[1] & kDigitMask};
    const uint32_t lo1[2] = {r1.sc[0] & kDigitMask, r1.sc[1] & kDigitMask};
    const uint32_t hi0[2] = {(r0.sc[0] >> kDigitBits) & kDigitMask, (r0.sc[1] >> kDigitBits) & kDigitMask};
    const uint32_t hi1[2] = {(r1.sc[0] >> kDigitBits) & kDigitMask, (r1.sc[1] >> kDigitBits) & kDigitMask};
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint2 q0 = *reinterpret_cast<const uint2*>(s0 + kQs + 32 * c + 8 * t);
      const uint2 q1 = *reinterpret_cast<const uint2*>(s1 + kQs + 32 * c + 8 * t);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        const uint32_t a0 = codes(q0.x, r0.h[0], j), a1 = codes(q1.x, r1.h[0], j);
        const uint32_t a2 = codes(q0.y, r0.h[1], j), a3 = codes(q1.y, r1.h[1], j);
        const uint32_t l0 = byte_at(lo0, j), l1 = byte_at(lo1, j), u0 = byte_at(hi0, j), u1 = byte_at(hi1, j);
        const uint32_t al[4] = {a0 * l0, a1 * l1, a2 * l0, a3 * l1};
        const uint32_t ah[4] = {a0 * u0, a1 * u1, a2 * u0, a3 * u1};
        const uint32_t bsel = 0x1111u * (j & 3);  // byte j & 3 into all four bytes
        const uint32_t m0 = __byte_perm(r0.mn[j >> 2], 0, bsel), m1 = __byte_perm(r1.mn[j >> 2], 0, bsel);
        const uint32_t am[4] = {m0, m1, m0, m1};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint2 xv = xb.ld8(nt, 32 * j + 8 * t);
          mma_k32_u8_acc(lo_sum[nt], al, xv.x, xv.y);
          mma_k32_u8_acc(hi_sum[nt], ah, xv.x, xv.y);
          mma_k32_u8_acc(min_sum[nt], am, xv.x, xv.y);
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const Hdr& r = e >> 1 ? r1 : r0;
        const int T = ((hi_sum[nt][e] << kDigitBits) + lo_sum[nt][e]) << kq::kMaxShift;
        v[nt][e] = kq::kq_value_min(col[nt][e & 1].d8, r.d, r.dmin, T, min_sum[nt][e] << kq::kMaxShift);
      }
    }
  }
  template <int NT, class X>
  __device__ __forceinline__ static void block_values(const Hdr& r0, const Hdr& r1, const uint8_t* s0, int,
                                                      const uint8_t* s1, int, const X& xb, const ColMeta (&col)[NT][2],
                                                      int t, int /*n_sub: 8*/, float (&v)[NT][4]) {
    digit_values<NT>(r0, r1, s0, s1, xb, col, t, v);
  }
};

// Q6_K (210 bytes, 2-byte aligned: ql[128], qh[64], int8 scales[16], f16 d). Element 128h + 32r + l (h 0..1,
// r 0..3, l 0..31) is nibble (r >> 1) of ql[64h + 32(r & 1) + l] | bits 2r, 2r+1 of qh[32h + l] << 4, minus
// 32; 16-element sub-block i = 8h + 2r + (l >> 4) has scale i. Lane t holds elements 4t .. 4t+3 of each.
struct KqQ6Fmt {
  static constexpr int kBlockBytes = 210;
  static constexpr int kChunks = 14;       // 210 bytes from up to 14 bytes past a 16-byte boundary
  static constexpr int kRowStride = 240;   // 60 words: the eight rows of a warp's loads on distinct banks
  struct Hdr {
    float d;
    uint32_t sc[4];  // the 16 int8 scales
  };
  __device__ __forceinline__ static Hdr load_hdr(const uint8_t* s, int at, int) {
    Hdr r;
#pragma unroll
    for (int k = 0; k < 4; ++k) r.sc[k] = staged_word(s, at + 192 + 4 * k);
    r.d = __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(s + at + 208)));
    return r;
  }
  __device__ __forceinline__ static int scale(const Hdr& r, int i) {
    return static_cast<int>(static_cast<int8_t>((r.sc[i >> 2] >> (8 * (i & 3))) & 0xFF));
  }
  __device__ __forceinline__ static uint32_t codes(uint32_t lo, uint32_t hb, int rr) {
    const uint32_t nib = (rr >> 1) ? (lo >> 4) & 0x0F0F0F0Fu : lo & 0x0F0F0F0Fu;
    const uint32_t code = nib | (((hb >> (2 * rr)) & 0x03030303u) << 4);
    return __vsub4(code, 0x20202020u);  // 0..63 -> -32..31 per byte
  }
  template <int NT, class X>
  __device__ __forceinline__ static void block_values(const Hdr& r0, const Hdr& r1, const uint8_t* s0, int at0,
                                                      const uint8_t* s1, int at1, const X& xb,
                                                      const ColMeta (&col)[NT][2], int t, int /*n_sub: 8*/,
                                                      float (&v)[NT][4]) {
    int T[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) T[nt][0] = T[nt][1] = T[nt][2] = T[nt][3] = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        // ql words at 64h + 32(r & 1) + 16s + 4t, qh word at 128 + 32h + 16s + 4t, for both rows.
        const int lo_off = 64 * h + 16 * s + 4 * t, hb_off = 128 + 32 * h + 16 * s + 4 * t;
        const uint32_t lo0[2] = {staged_word(s0, at0 + lo_off), staged_word(s0, at0 + lo_off + 32)};
        const uint32_t lo1[2] = {staged_word(s1, at1 + lo_off), staged_word(s1, at1 + lo_off + 32)};
        const uint32_t hb0 = staged_word(s0, at0 + hb_off), hb1 = staged_word(s1, at1 + hb_off);
#pragma unroll
        for (int rr = 0; rr < 4; ++rr) {
          const int i = 8 * h + 2 * rr + s;
          const uint32_t a0 = codes(lo0[rr & 1], hb0, rr), a1 = codes(lo1[rr & 1], hb1, rr);
          const int sc0 = scale(r0, i), sc1 = scale(r1, i);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint32_t xv = xb.ld4(nt, 16 * i + 4 * t);
            int sm[4];
            mma_k16(sm, a0, a1, xv);
            fold_scaled(T[nt], sm, sc0, sc1);
          }
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[nt][e] = kq::kq_value_sym(col[nt][e & 1].d8, (e >> 1 ? r1 : r0).d, T[nt][e] << kq::kMaxShift);
    }
  }
};

// The 32-element formats (q32_layout.h), in contexts that ask for width invariance: the kernel's block is a
// group of eight of them (256 elements, one activation block), staged as covering chunks from any even
// offset (their rows are 2- or 4-byte aligned when n_in is not a multiple of 256). One m16n8k32 MMA a
// 32-element block; each block's f16 scale (and min) folds its exact sum into a float chain, in order.
template <DType kType>
struct Q32Fmt {
  using B = q32::Block32<kType>;
  static constexpr int kBlockBytes = 8 * B::kBytes;
  static constexpr int kChunks = (14 + kBlockBytes + 15) / 16;  // from up to 14 bytes past a boundary
  // An odd number of chunks: a stride of 4 mod 8 words puts the eight rows of a fragment load on distinct banks.
  static constexpr int kRowStride = 16 * (kChunks | 1);
  struct Hdr {};  // the scales are read with each block
  __device__ __forceinline__ static Hdr load_hdr(const uint8_t*, int, int) { return {}; }
  template <int NT, class X>
  __device__ __forceinline__ static void block_values(const Hdr&, const Hdr&, const uint8_t* s0, int at0,
                                                      const uint8_t* s1, int at1, const X& xb,
                                                      const ColMeta (&col)[NT][2], int t, int n_sub,
                                                      float (&v)[NT][4]) {
    const auto* w0 = reinterpret_cast<const uint32_t*>(s0);
    const auto* w1 = reinterpret_cast<const uint32_t*>(s1);
    float u[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) u[nt][0] = u[nt][1] = u[nt][2] = u[nt][3] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (j < n_sub) {  // uniform across the warp
        const int b0 = at0 + B::kBytes * j, b1 = at1 + B::kBytes * j;
        uint32_t a0, a1, a2, a3;
        B::lane_codes(w0, b0, t, a0, a2);
        B::lane_codes(w1, b1, t, a1, a3);
        const uint32_t h0 = staged_word(w0, b0), h1 = staged_word(w1, b1);
        const float d[2] = {q32::block_d(h0), q32::block_d(h1)};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint2 xv = xb.ld8(nt, 32 * j + 8 * t);
          int s[4];
          mma_k32(s, a0, a1, a2, a3, xv.x, xv.y);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            u[nt][e] = kq::ffma(d[e >> 1], kq::i2f(s[e] << col[nt][e & 1].shift(j)), u[nt][e]);
          }
          if constexpr (B::kMin) {
            const float m[2] = {q32::block_m(h0), q32::block_m(h1)};
#pragma unroll
            for (int e = 0; e < 4; ++e) u[nt][e] = kq::ffma(m[e >> 1], kq::i2f(col[nt][e & 1].qsum(j)), u[nt][e]);
          }
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[nt][e] = kq::fmul(col[nt][e & 1].d8, u[nt][e]);
    }
  }
};

// IQ4_XS (136-byte blocks of 256, 8-byte aligned): integer scales, so its sums fold exactly as Q6_K's.
struct KqIq4XsFmt {
  static constexpr int kBlockBytes = q32::iq4xs::kBytes;
  static constexpr int kChunks = 9;        // 136 bytes from 0 or 8 bytes past a boundary
  static constexpr int kRowStride = 160;   // 10 chunks, as Q4_K's
  struct Hdr {
    float d;
    uint32_t scales_h, scales_l;
  };
  __device__ __forceinline__ static Hdr load_hdr(const uint8_t* s, int at, int) {
    const uint32_t head = staged_word(s, at);
    return Hdr{q32::block_d(head), head >> 16, staged_word(s, at + 4)};
  }
  template <int NT, class X>
  __device__ __forceinline__ static void block_values(const Hdr& r0, const Hdr& r1, const uint8_t* s0, int at0,
                                                      const uint8_t* s1, int at1, const X& xb,
                                                      const ColMeta (&col)[NT][2], int t, int, float (&v)[NT][4]) {
    const auto* w0 = reinterpret_cast<const uint32_t*>(s0);
    const auto* w1 = reinterpret_cast<const uint32_t*>(s1);
    int T[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) T[nt][0] = T[nt][1] = T[nt][2] = T[nt][3] = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      uint32_t a0, a1, a2, a3;
      q32::iq4xs::lane_codes(w0, at0, j, t, a0, a2);
      q32::iq4xs::lane_codes(w1, at1, j, t, a1, a3);
      const int sc0 = q32::iq4xs::scale(r0.scales_h, r0.scales_l, j);
      const int sc1 = q32::iq4xs::scale(r1.scales_h, r1.scales_l, j);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const uint2 xv = xb.ld8(nt, 32 * j + 8 * t);
        int s[4];
        mma_k32(s, a0, a1, a2, a3, xv.x, xv.y);
        fold_scaled(T[nt], s, sc0, sc1);
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[nt][e] = kq::kq_value_sym(col[nt][e & 1].d8, (e >> 1 ? r1 : r0).d, T[nt][e] << kq::kMaxShift);
    }
  }
};

}  // namespace saker::cuda::detail
