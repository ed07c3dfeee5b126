#pragma once
// Integer block dot products of the int8-activation decode path (matvec_q8.cu): x is quantised once per
// matmul call to int8 codes with one f32 scale and one f32 sum (of the original values) per 32 elements,
// and each weight unit is dotted with the codes by __dp4a (four int8 products summed into an int32).
//
//   x[i] ~= xd[i / 32] * xq[i]            xd = max|x| / 127 over the 32-element block (0 when all zero)
//   xs[b] = xd[b] * sum of block b's codes
//   Q4_K unit: d * (sc1 * xd1 * sum(q_lo * xq) + sc2 * xd2 * sum(q_hi * xq)) - dmin * (m1 * xs1 + m2 * xs2)
//   Q6_K unit: d * sum_r sc_r * xd_r * sum((q - 32) * xq)
//
// A weight unit is loaded and unpacked once (q4k_load / q6k_load) and dotted with R activation rows; the x side
// of a unit (q4k_xload / q6k_xload) is loaded once and dotted with the units of several output rows. The
// functions are __host__ __device__ with a host __dp4a, so the unit tests run the kernel's exact arithmetic.
#include <cmath>
#include <cstdint>

#include "ops/cuda/dequant_blocks.h"

namespace saker::cuda::q8 {

using blocks::Bytes16;

// Per 32-element block of quantised x: scale d and sum = d * (sum of the block's codes), i.e. the sum of the
// *quantised* values. The K-quant min term dmin * m * sum then pairs with the same rounded x as the scale term,
// so the large common offset of the codes (0..15 for Q4_K) cancels exactly instead of amplifying x's rounding
// error (with the exact f32 sum, Q4_K's NMSE against f32 is several times larger). 8 bytes, one load.
struct alignas(8) XBlock {
  float d;
  float sum;
};

inline constexpr int kXBlock = 32;

// sum of the four signed-byte products of a and b, plus c.
SAKER_HD int dp4a(uint32_t a, uint32_t b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int>(static_cast<int8_t>(static_cast<uint8_t>(a >> (8 * i)))) *
         static_cast<int>(static_cast<int8_t>(static_cast<uint8_t>(b >> (8 * i))));
  }
  return c;
#endif
}

SAKER_HD XBlock ld_xblock(const XBlock* p) {
#if defined(__CUDA_ARCH__)
  const float2 v = __ldg(reinterpret_cast<const float2*>(p));
  return XBlock{v.x, v.y};
#else
  return *p;
#endif
}

// ---- Q4_K: unit u (0..7) of a 256-element block is 16 bytes of qs: chunk c = u / 2, l0 = 16 (u % 2);
// low nibbles are elements 64c + l0 + j (sub-block 2c), high nibbles 64c + 32 + l0 + j (sub-block 2c + 1).
struct Q4KUnit {
  float d, dmin;
  int sc1, m1, sc2, m2;
  uint32_t lo[4], hi[4];  // 4-bit codes, one per byte
  int c, half;
};

// The 6-bit scale and min of sub-block j as blocks::k_scale_min, but with selects instead of a branch on
// j < 4, so the compiler can issue the next units' loads ahead of this unit's arithmetic.
SAKER_HD void k_scale_min_sel(uint32_t w1, uint32_t w2, uint32_t w3, int j, int* sc, int* m) {
  const int k = j & 3;
  const uint32_t b1 = blocks::byte_of(w1, k), b2 = blocks::byte_of(w2, k), b3 = blocks::byte_of(w3, k);
  const uint32_t sc_lo = b1 & 63, m_lo = b2 & 63;
  const uint32_t sc_hi = (b3 & 0x0F) | ((b1 >> 6) << 4), m_hi = (b3 >> 4) | ((b2 >> 6) << 4);
  *sc = static_cast<int>(j < 4 ? sc_lo : sc_hi);
  *m = static_cast<int>(j < 4 ? m_lo : m_hi);
}

SAKER_HD Q4KUnit q4k_load(const uint8_t* blk, int u) {
  Q4KUnit w;
  w.c = u >> 1;
  w.half = u & 1;
  const Bytes16 hdr = blocks::ld16(blk);
  const Bytes16 q = blocks::ld16(blk + 16 + 32 * w.c + 16 * w.half);
  w.d = blocks::f16_to_f32(static_cast<uint16_t>(hdr.w[0] & 0xFFFF));
  w.dmin = blocks::f16_to_f32(static_cast<uint16_t>(hdr.w[0] >> 16));
  k_scale_min_sel(hdr.w[1], hdr.w[2], hdr.w[3], 2 * w.c, &w.sc1, &w.m1);
  k_scale_min_sel(hdr.w[1], hdr.w[2], hdr.w[3], 2 * w.c + 1, &w.sc2, &w.m2);
SAKER_UNROLL
  for (int k = 0; k < 4; ++k) {
    w.lo[k] = q.w[k] & 0x0F0F0F0Fu;
    w.hi[k] = (q.w[k] >> 4) & 0x0F0F0F0Fu;
  }
  return w;
}

// Q5_K: as Q4_K (176-byte blocks: header, qh[32], qs[128]); the 5th bit of element 64c + l (+ 32) is bit 2c
// (2c + 1) of qh[l]. Codes 0..31, same dot and min term as Q4_K.
SAKER_HD Q4KUnit q5k_load(const uint8_t* blk, int u) {
  Q4KUnit w;
  w.c = u >> 1;
  w.half = u & 1;
  const Bytes16 hdr = blocks::ld16(blk);
  const Bytes16 qh = blocks::ld16(blk + 16 + 16 * w.half);
  const Bytes16 q = blocks::ld16(blk + 48 + 32 * w.c + 16 * w.half);
  w.d = blocks::f16_to_f32(static_cast<uint16_t>(hdr.w[0] & 0xFFFF));
  w.dmin = blocks::f16_to_f32(static_cast<uint16_t>(hdr.w[0] >> 16));
  k_scale_min_sel(hdr.w[1], hdr.w[2], hdr.w[3], 2 * w.c, &w.sc1, &w.m1);
  k_scale_min_sel(hdr.w[1], hdr.w[2], hdr.w[3], 2 * w.c + 1, &w.sc2, &w.m2);
SAKER_UNROLL
  for (int k = 0; k < 4; ++k) {
    w.lo[k] = (q.w[k] & 0x0F0F0F0Fu) | (((qh.w[k] >> (2 * w.c)) & 0x01010101u) << 4);
    w.hi[k] = ((q.w[k] >> 4) & 0x0F0F0F0Fu) | (((qh.w[k] >> (2 * w.c + 1)) & 0x01010101u) << 4);
  }
  return w;
}

// The x side of a Q4_K / Q5_K unit's dot: the 32 codes under its low and high nibbles and their two
// XBlocks. Loaded once per unit position and dotted with the units of several output rows (matvec_q8.cu).
struct Q4KX {
  Bytes16 xl, xh;
  XBlock a, b;
};

// xb: the 256 int8 codes of x under this weight block (16-byte aligned); xs: its 8 XBlocks; u: the unit (0..7).
SAKER_HD Q4KX q4k_xload(const int8_t* xb, const XBlock* xs, int u) {
  const int c = u >> 1, half = u & 1;
  const auto* xp = reinterpret_cast<const uint8_t*>(xb) + 64 * c + 16 * half;
  Q4KX x;
  x.xl = blocks::ld16(xp);
  x.xh = blocks::ld16(xp + 32);
  x.a = ld_xblock(xs + 2 * c);
  x.b = ld_xblock(xs + 2 * c + 1);
  return x;
}

// The min term covers a whole 32-element sub-block, so only the even unit of each pair applies it.
SAKER_HD float q4k_dot(const Q4KUnit& w, const Q4KX& x) {
  int s1 = 0, s2 = 0;
SAKER_UNROLL
  for (int k = 0; k < 4; ++k) {
    s1 = dp4a(w.lo[k], x.xl.w[k], s1);
    s2 = dp4a(w.hi[k], x.xh.w[k], s2);
  }
  float r = w.d * (static_cast<float>(w.sc1) * x.a.d * static_cast<float>(s1) +
                   static_cast<float>(w.sc2) * x.b.d * static_cast<float>(s2));
  if (w.half == 0) r -= w.dmin * (static_cast<float>(w.m1) * x.a.sum + static_cast<float>(w.m2) * x.b.sum);
  return r;
}

SAKER_HD float q4k_dot(const Q4KUnit& w, const int8_t* xb, const XBlock* xs) {
  return q4k_dot(w, q4k_xload(xb, xs, 2 * w.c + w.half));
}

// ---- Q6_K: unit u (0..7): half h = u / 4, l0 = 8 (u % 4); run r (0..3) is elements 128h + 32r + l0 + j,
// j = 0..7, with 6-bit codes (ql nibble | 2 qh bits << 4) and int8 scale scales[8h + l0 / 16 + 2r].
struct Q6KUnit {
  float d;
  int sc[4];
  uint32_t q[4][2];  // unsigned 6-bit codes (0..63), one per byte; the -32 offset is applied in the dot
  int xoff;          // 128h + l0: element of run 0
};

SAKER_HD Q6KUnit q6k_load(const uint8_t* blk, int u) {
  Q6KUnit w;
  const int h = u >> 2, l0 = 8 * (u & 3);
  w.xoff = 128 * h + l0;
  const uint8_t* ql = blk + 64 * h + l0;
  const uint8_t* qh = blk + 128 + 32 * h + l0;
  w.d = blocks::f16_to_f32(static_cast<uint16_t>(blocks::ld_u16_a2(blk + 208)));
  uint32_t a[2], b[2], hh[2], sc[2];
  blocks::ld8_a2(ql, &a[0], &a[1]);
  blocks::ld8_a2(ql + 32, &b[0], &b[1]);
  blocks::ld8_a2(qh, &hh[0], &hh[1]);
  blocks::ld8_a2(blk + 192 + 8 * h, &sc[0], &sc[1]);
SAKER_UNROLL
  for (int r = 0; r < 4; ++r) {
    const int idx = l0 / 16 + 2 * r;
    w.sc[r] = static_cast<int8_t>(blocks::byte_of(sc[idx >> 2], idx & 3));
  }
SAKER_UNROLL
  for (int k = 0; k < 2; ++k) {
    w.q[0][k] = (a[k] & 0x0F0F0F0Fu) | ((hh[k] & 0x03030303u) << 4);
    w.q[1][k] = (b[k] & 0x0F0F0F0Fu) | (((hh[k] >> 2) & 0x03030303u) << 4);
    w.q[2][k] = ((a[k] >> 4) & 0x0F0F0F0Fu) | (((hh[k] >> 4) & 0x03030303u) << 4);
    w.q[3][k] = ((b[k] >> 4) & 0x0F0F0F0Fu) | (((hh[k] >> 6) & 0x03030303u) << 4);
  }
  return w;
}

// The x side of a Q6_K unit's dot: its four 8-code runs, 32 * (sum of each run's codes) for the -32 offset,
// and the runs' scales; shared by the units of several output rows as Q4KX is.
struct Q6KX {
  uint32_t x[4][2];
  int s32[4];
  float d[4];
};

SAKER_HD Q6KX q6k_xload(const int8_t* xb, const XBlock* xs, int u) {
  const int xoff = 128 * (u >> 2) + 8 * (u & 3);
  const auto* xp = reinterpret_cast<const uint8_t*>(xb) + xoff;
  Q6KX x;
SAKER_UNROLL
  for (int k = 0; k < 4; ++k) {
    blocks::ld8(xp + 32 * k, &x.x[k][0], &x.x[k][1]);
    // sum((q - 32) * x) = sum(q * x) - sum(32 * x); q <= 63 is a valid signed byte.
    x.s32[k] = dp4a(0x20202020u, x.x[k][1], dp4a(0x20202020u, x.x[k][0], 0));
    x.d[k] = ld_xblock(xs + (xoff >> 5) + k).d;
  }
  return x;
}

SAKER_HD float q6k_dot(const Q6KUnit& w, const Q6KX& x) {
  float r = 0.0f;
SAKER_UNROLL
  for (int k = 0; k < 4; ++k) {
    const int s = dp4a(w.q[k][1], x.x[k][1], dp4a(w.q[k][0], x.x[k][0], 0));
    r += static_cast<float>(w.sc[k]) * x.d[k] * static_cast<float>(s - x.s32[k]);
  }
  return w.d * r;
}

SAKER_HD float q6k_dot(const Q6KUnit& w, const int8_t* xb, const XBlock* xs) {
  // xoff = 128h + l0 names the unit: u = 4h + l0 / 8.
  return q6k_dot(w, q6k_xload(xb, xs, 4 * (w.xoff >> 7) + ((w.xoff & 127) >> 3)));
}

}  // namespace saker::cuda::q8

namespace saker::cuda::q8 {

// q rounded to the nearest integer (ties away from zero) and clamped to +-127, as an int8 code.
SAKER_HD int8_t round_to_code(float q) {
#if defined(__CUDA_ARCH__)
  const float r = roundf(q);
#else
  const float r = std::round(q);
#endif
  const float c = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
  return static_cast<int8_t>(static_cast<int>(c));
}

// Code of one x value given its block's scale d = max|x| / 127 (|code| <= 127 by construction). d == 0
// gives 0.
SAKER_HD int8_t quantize_value(float x, float d) { return d == 0.0f ? 0 : round_to_code(x / d); }

}  // namespace saker::cuda::q8
