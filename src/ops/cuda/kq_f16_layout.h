#pragma once
// Index math and bit tricks of the f16 tensor-core Q4_K matmul (matmul_kq_f16.cu), in __host__ __device__
// helpers so a host test can emulate the kernel lane by lane (tests/unit/cuda_kq_f16_layout_test.cpp).
//
// A Q4_K block (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes qs. Sub-block
// j = 2c + h (c 0..3, h 0..1) holds elements 64c + 32h + l (l 0..31): nibble h of qs[32c + l].
//
// Fragments (mma.m16n8k16, mma_layout.h; g = lane >> 2, t = lane & 3). A dot product only needs A and B to
// agree on which element a K position stands for, so each MMA covers half a sub-block as lane t's word of code
// bytes 8t + 4p .. 8t + 4p + 3 (p = 0, 1: the MMA of the sub-block) lays it out:
//   register pair 0 = elements (i 0, 2), pair 1 = elements (i 1, 3) of e = 8t + 4p + i, low half first;
//   A: a0 = row g pair 0, a1 = row g + 8 pair 0, a2 = row g pair 1, a3 = row g + 8 pair 1;
//   B: b0 = pair 0, b1 = pair 1 of the activation row (column g).
// One 32-bit code word gives both pairs of both sub-blocks of c by masks alone: the low nibbles of bytes 0 and
// 2 (mask 0x000F000F) are pair 0 of sub-block 2c, the word shifted by 8 gives pair 1; the high nibbles (mask
// 0x00F000F0) the same of sub-block 2c + 1.
//
// Dequantisation: OR-ing a nibble n into the mantissa of f16 1024 (0x6400) gives 1024 + n (low nibble) or
// 1024 + 16 n (high nibble) exactly; one exact step gives n, one FMA gives n * s - m, rounded once. The
// sub-block's (s, m) = (f16(d * sc), f16(dmin * m)) come the same way: (1024 + sc) - 1024 exactly, times d.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "ops/cuda/dequant_blocks.h"

namespace saker::cuda::kq_f16 {

inline constexpr int kWarps = 4;              // K streams of a block: warp w takes blocks w, w + 4, ...
inline constexpr int kBlockBytes = 144;       // one Q4_K block
inline constexpr int kQs = 16;                // offset of qs in a block
inline constexpr uint32_t kMagic = 0x64006400u;  // f16 1024 in both halves
inline constexpr uint32_t kLoMask = 0x000F000Fu, kHiMask = 0x00F000F0u;

// Element (0..31 of the sub-block) held in half `half` of register pair `pair` of lane t's word for MMA p.
SAKER_HD int sub_elem(int t, int p, int pair, int half) { return 8 * t + 4 * p + pair + 2 * half; }
// Byte of qs where lane t's code word for sub-block pair c and MMA p starts.
SAKER_HD int word_byte(int c, int t, int p) { return 32 * c + 8 * t + 4 * p; }
// Which pair and row A register r (0..3) of an MMA carries: pair r >> 1, row g + 8 when r is odd.
SAKER_HD int a_pair(int r) { return r >> 1; }
SAKER_HD bool a_upper(int r) { return (r & 1) != 0; }
// B register r (0, 1) carries pair r.
SAKER_HD int b_pair(int r) { return r; }

SAKER_HD uint32_t lop3_and_or(uint32_t a, uint32_t b, uint32_t c) {  // (a & b) | c
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
#else
  return (a & b) | c;
#endif
}
// PTX prmt.b32 (default mode): byte i of the result is byte (sel >> 4i) & 7 of the eight bytes {b, a}
// (a bytes 0-3, b bytes 4-7); selectors here never set the sign-replicate bit.
SAKER_HD uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
#else
  const uint64_t bytes = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((bytes >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}

// The 6-bit scales and mins of a block header (words y, z, w = header bytes 4-15), four a word, one per byte:
// sub-blocks 0-3 keep the low 6 bits of bytes 0-3 / 4-7; 4-7 take a nibble of bytes 8-11 and the top 2 bits of
// bytes 0-3 / 4-7 (GGUF's get_scale_min_k4).
struct ScaleWords {
  uint32_t sc[2], mn[2];
};
SAKER_HD ScaleWords unpack_scales(uint32_t y, uint32_t z, uint32_t w) {
  ScaleWords s;
  s.sc[0] = y & 0x3F3F3F3Fu;
  s.mn[0] = z & 0x3F3F3F3Fu;
  s.sc[1] = (w & 0x0F0F0F0Fu) | ((y >> 2) & 0x30303030u);
  s.mn[1] = ((w >> 4) & 0x0F0F0F0Fu) | ((z >> 2) & 0x30303030u);
  return s;
}
// The f16 pair (1024 + sc_j, 1024 + m_j) as bits.
SAKER_HD uint32_t scale_magic(const ScaleWords& s, int j) {
  // Result byte 0 = sc word byte j & 3, byte 2 = mn word byte j & 3 (selector nibble i picks result byte i).
  const uint32_t sel = static_cast<uint32_t>(j & 3) | (static_cast<uint32_t>(4 + (j & 3)) << 8);
  return lop3_and_or(prmt(s.sc[j >> 2], s.mn[j >> 2], sel), 0x00FF00FFu, kMagic);
}
// The f16 pair of codes that register pair `pair` of nibble h of a code word holds, as 1024 + n (h 0) or
// 1024 + 16 n (h 1).
SAKER_HD uint32_t code_magic(uint32_t word, int h, int pair) {
  return lop3_and_or(pair ? word >> 8 : word, h ? kHiMask : kLoMask, kMagic);
}

// ---- staging. A block starting at byte `start` of the matrix (any even offset) is copied as the 16-byte chunks
// from the boundary at or below it; its bytes then begin at byte stage_at(start) of the staged row, and its
// words are read back with staged_word (the row's 16-byte aligned words, `at` even).
SAKER_HD int64_t stage_chunk_src(int64_t start, int chunk) { return (start & ~int64_t{15}) + 16 * chunk; }
SAKER_HD int stage_at(int64_t start) { return static_cast<int>(start & 15); }
SAKER_HD uint32_t staged_word(const uint32_t* row, int at) {
  const uint32_t x0 = row[at >> 2];
  if ((at & 2) == 0) return x0;
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(x0, row[(at >> 2) + 1], 16);
#else
  return (x0 >> 16) | (row[(at >> 2) + 1] << 16);
#endif
}
// The same from a byte pointer to the staged row. A pointer cast, not one through an integer, so on the device
// the loads stay in the shared space.
SAKER_HD uint32_t staged_word(const uint8_t* row, int at) {
  return staged_word(reinterpret_cast<const uint32_t*>(row), at);
}

// ---- Q6_K (210 bytes, 2-byte aligned: ql[128], qh[64], int8 scales[16], f16 d). Element 128h + 32r + l (h 0..1,
// r 0..3, l 0..31) is nibble r >> 1 of ql[64h + 32(r & 1) + l] | bits 2r, 2r + 1 of qh[32h + l] << 4, minus 32;
// 16-element sub-block i = 8h + 2r + (l >> 4) has scale i. One MMA is one sub-block (h, r, s = l >> 4): lane t
// holds its elements 4t + i, paired (i 0, 2) and (i 1, 3) as for Q4_K. The words of ql at 64h + 32(r & 1) +
// 16s + 4t and of qh at 128 + 32h + 16s + 4t give a lane's four codes of sub-blocks (h, r, s) for every r.
// Weights: s_i = f16(d * sc_i) (sc_i exact in f16), w = f16((q - 32) * s_i), each rounded once.
namespace q6 {
inline constexpr int kBlockBytes = 210;
inline constexpr int kStageChunks = 14;  // 210 bytes from up to 14 bytes past a 16-byte boundary
inline constexpr int kQh = 128, kScales = 192, kD = 208;
SAKER_HD int elem(int h, int r, int s, int t, int pair, int half) { return 128 * h + 32 * r + 16 * s + 4 * t + pair + 2 * half; }
SAKER_HD int ql_byte(int h, int r, int s, int t) { return 64 * h + 32 * (r & 1) + 16 * s + 4 * t; }
SAKER_HD int qh_byte(int h, int s, int t) { return kQh + 32 * h + 16 * s + 4 * t; }
// The four 6-bit codes (one a byte, 0..63) of sub-block (h, r, s) from the lane's ql word of r & 1 and qh word.
SAKER_HD uint32_t codes(uint32_t ql, uint32_t qh, int r) {
  return ((ql >> (4 * (r >> 1))) & 0x0F0F0F0Fu) | (((qh >> (2 * r)) & 0x03030303u) << 4);
}
// The f16 pair (1024 + code i0, 1024 + code i2) (pair 0) or (i1, i3) (pair 1) as bits.
SAKER_HD uint32_t code_magic(uint32_t codes, int pair) {
  return lop3_and_or(pair ? codes >> 8 : codes, 0x00FF00FFu, kMagic);
}
// The f16 pair (1024 + 128 + sc_i, 1024 + 128 + sc_{i+1}) of two signed scales (i even), from the word holding
// scales 4k .. 4k + 3 (k = i >> 2): bytes i & 3 and (i & 3) + 1 to the low bytes of the halves, sign bit
// flipped (sc + 128), then the exponent of 1024.
SAKER_HD uint32_t scale_magic(uint32_t word, int i) {
  const uint32_t b = static_cast<uint32_t>(i & 2);
  const uint32_t pair = prmt(word, 0, b | ((b + 1) << 8));
#if defined(__CUDA_ARCH__)
  uint32_t r;  // (mask ? pair ^ c : c) with c = 0x64806480 under mask 0x00FF00FF
  asm("lop3.b32 %0, %1, %2, %3, 0x6A;\n" : "=r"(r) : "r"(pair), "r"(0x00FF00FFu), "r"(0x64806480u));
  return r;
#else
  return (0x00FF00FFu & (pair ^ 0x64806480u)) | (~0x00FF00FFu & 0x64806480u);
#endif
}
}  // namespace q6

// Register pair `pair` of four f16 activations held as words lo = (x0, x1), hi = (x2, x3): pair 0 = (x0, x2),
// pair 1 = (x1, x3), low half first.
SAKER_HD uint32_t x16_pair(uint32_t lo, uint32_t hi, int pair) { return prmt(lo, hi, pair ? 0x7632u : 0x5410u); }

// ---- host oracle of the kernel's weights (tests)

// v rounded to the nearest f16, ties to even, straight from a double (no intermediate float rounding).
inline float round_f16_host(double v) {
  if (v == 0.0) return 0.0f;
  int e = 0;
  std::frexp(v, &e);                          // |v| in [2^(e-1), 2^e)
  const int ulp_exp = e - 11 < -24 ? -24 : e - 11;  // 11 significant bits; subnormals step 2^-24
  const double ulp = std::ldexp(1.0, ulp_exp);
  const double r = std::nearbyint(v / ulp) * ulp;  // exact in double and in f16
  return fp16_to_fp32(fp32_to_fp16(static_cast<float>(r)));
}

// One Q4_K block (kBlockBytes) as the kernel dequantises it: s_j = f16(d * sc_j), m_j = f16(dmin * m_j),
// w = f16(q * s_j - m_j), each rounded once from the exact value.
inline void dequant_block_host(const uint8_t* blk, float* out) {
  uint16_t dh, mh;
  std::memcpy(&dh, blk, 2);
  std::memcpy(&mh, blk + 2, 2);
  const double d = fp16_to_fp32(dh), dmin = fp16_to_fp32(mh);
  const uint8_t* sc = blk + 4;
  const uint8_t* qs = blk + kQs;
  for (int j = 0; j < 8; ++j) {
    int s, m;
    if (j < 4) {
      s = sc[j] & 63;
      m = sc[j + 4] & 63;
    } else {
      s = (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4);
      m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    }
    const double s16 = round_f16_host(d * s), m16 = round_f16_host(dmin * m);
    const int c = j / 2, h = j % 2;
    for (int l = 0; l < 32; ++l) {
      const int q = h ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 0xF;
      out[32 * j + l] = round_f16_host(q * s16 - m16);
    }
  }
}

// One Q6_K block (q6::kBlockBytes) as the kernel dequantises it.
inline void dequant_q6_block_host(const uint8_t* blk, float* out) {
  uint16_t dh;
  std::memcpy(&dh, blk + q6::kD, 2);
  const double d = fp16_to_fp32(dh);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = (e / 32) % 4, l = e % 32;
    const int lo = (blk[64 * h + 32 * (r & 1) + l] >> (4 * (r >> 1))) & 0xF;
    const int hi = (blk[q6::kQh + 32 * h + l] >> (2 * r)) & 3;
    const int sc = static_cast<int8_t>(blk[q6::kScales + 8 * h + 2 * r + l / 16]);
    const double s16 = round_f16_host(d * sc);
    out[e] = round_f16_host(((lo | hi << 4) - 32) * s16);
  }
}

}  // namespace saker::cuda::kq_f16
