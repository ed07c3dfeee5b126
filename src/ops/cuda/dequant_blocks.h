#pragma once
// Per-block weight decoding shared by every CUDA matmul path (simple kernel, fast decode kernels, the
// dequantise-to-f16 pass of prefill, embedding). The functions are __host__ __device__ so the unit tests,
// compiled by the host compiler, check them bit for bit against formats/quant's dequantize_row: a decode bug
// shows up on a machine without a GPU.
//
// Every dtype is decoded in *units* of 32 elements, given as four *runs* of 8 consecutive elements:
//   Fmt<T>::decode_unit(block, u, v)  fills v[8 * r + j] = element run_start(u, r) + j of the block.
// The unit -> element mapping follows each format's byte layout so that one unit reads few, contiguous,
// aligned bytes (a Q4_K unit is 16 bytes of nibbles, a K-quant low nibble and high nibble are elements 32
// apart). Plain float types use "blocks" of 256 elements whose unit u owns elements 8u + 64r: the eight
// lanes decoding one block then read 128 contiguous bytes per load.
//
// Order of float operations matches the CPU codecs (e.g. Q4_K: (d * sc) * q - dmin * m), so the host build
// is bit-exact; device builds may contract to FMA, which the GPU tests bound by NMSE.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define SAKER_HD __host__ __device__ __forceinline__
#define SAKER_UNROLL _Pragma("unroll")
#else
#define SAKER_HD inline
#define SAKER_UNROLL
#endif

#include "core/dtype.h"
#if !defined(__CUDA_ARCH__)
#include "core/half.h"
#endif

namespace saker::cuda::blocks {

SAKER_HD float f16_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return ::saker::fp16_to_fp32(h);
#endif
}

SAKER_HD float bf16_to_f32(uint16_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
#else
  return ::saker::bf16_to_fp32(b);
#endif
}

SAKER_HD float bits_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// Unaligned little-endian reads (byte loads; used where a format's fields are only 1- or 2-byte aligned).
SAKER_HD uint32_t rd_u16(const uint8_t* p) { return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8); }
SAKER_HD uint32_t rd_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// 16 bytes from a 16-byte-aligned address: one vector load on the device.
struct Bytes16 {
  uint32_t w[4];
  SAKER_HD uint32_t byte(int i) const { return (w[i >> 2] >> (8 * (i & 3))) & 0xFF; }
};
SAKER_HD Bytes16 ld16(const uint8_t* p) {
  Bytes16 b;
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  b.w[0] = v.x;
  b.w[1] = v.y;
  b.w[2] = v.z;
  b.w[3] = v.w;
#else
  std::memcpy(b.w, p, 16);
#endif
  return b;
}
// 8 bytes from an 8-byte-aligned address.
SAKER_HD void ld8(const uint8_t* p, uint32_t* lo, uint32_t* hi) {
#if defined(__CUDA_ARCH__)
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
  *lo = v.x;
  *hi = v.y;
#else
  std::memcpy(lo, p, 4);
  std::memcpy(hi, p + 4, 4);
#endif
}

// __byte_perm (default mode): result byte i = byte (s >> 4i) & 7 of the eight bytes y:x (x is bytes 0-3).
SAKER_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t v = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}

// Byte k of w as an exact float, without an int-to-float conversion (a quarter-rate instruction on the GPU):
// the byte becomes the low mantissa bits of 2^23 (0x4B000000), and subtracting 2^23 (+ bias) is exact.
// Returns byte - bias for bias 0 .. 255.
SAKER_HD float byte_to_f32(uint32_t w, int k, float bias = 0.0f) {
  return bits_f32(byte_perm(w, 0x4B000000u, 0x7440u | static_cast<uint32_t>(k))) - (8388608.0f + bias);
}

// 8 bytes from a 2-byte-aligned address as two little-endian words: on the device, the aligned words that
// cover them (two, or three when the address is not 4-byte aligned; never a byte past p + 7's word) joined by
// funnel shifts, instead of eight byte loads.
SAKER_HD void ld8_a2(const uint8_t* p, uint32_t* w0, uint32_t* w1) {
#if defined(__CUDA_ARCH__)
  const auto* base = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{3});
  const uint32_t sh = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 3) * 8;
  const uint32_t x0 = __ldg(base), x1 = __ldg(base + 1);
  const uint32_t x2 = sh != 0 ? __ldg(base + 2) : 0u;
  *w0 = __funnelshift_r(x0, x1, sh);
  *w1 = __funnelshift_r(x1, x2, sh);
#else
  // The device's word loads and funnel shifts, emulated, so the host tests cover them.
  const auto* base = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{3});
  const uint32_t sh = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 3) * 8;
  uint32_t x0, x1, x2 = 0;
  std::memcpy(&x0, base, 4);
  std::memcpy(&x1, base + 4, 4);
  if (sh != 0) std::memcpy(&x2, base + 8, 4);
  *w0 = static_cast<uint32_t>(((static_cast<uint64_t>(x1) << 32) | x0) >> sh);
  *w1 = static_cast<uint32_t>(((static_cast<uint64_t>(x2) << 32) | x1) >> sh);
#endif
}
SAKER_HD uint32_t ld_u16_a2(const uint8_t* p) {  // 2-byte aligned
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned short*>(p));
#else
  return rd_u16(p);
#endif
}

// The 16 levels of IQ4_NL / IQ4_XS (same table as formats/quant) as int8 bytes, packed four to a word so a
// lookup is two selects and a shift (or one byte permute): an indexed local array would put a stack in local
// memory on the device.
inline constexpr uint32_t kIq4W0 = 0xBFAD9881u;  // -127, -104, -83, -65
inline constexpr uint32_t kIq4W1 = 0xF6EADDCFu;  //  -49,  -35, -22, -10
inline constexpr uint32_t kIq4W2 = 0x26190D01u;  //    1,   13,  25,  38
inline constexpr uint32_t kIq4W3 = 0x71594535u;  //   53,   69,  89, 113
SAKER_HD float iq4_level(uint32_t code) {
  code &= 15;
  const uint32_t w = code < 8 ? (code < 4 ? kIq4W0 : kIq4W1) : (code < 12 ? kIq4W2 : kIq4W3);
  return byte_to_f32(w ^ 0x80808080u, static_cast<int>(code & 3), 128.0f);  // int8 b = (b ^ 0x80) - 128
}

// Q4_K / Q5_K packed 6-bit scale and min of sub-block j (see formats/quant/k_quants.h), from the header's
// words w1 = scales[0..3], w2 = scales[4..7], w3 = scales[8..11]. Byte selects by shifts, not an indexed
// array: j depends on the lane, and an indexed local array would live in local memory on the device.
SAKER_HD uint32_t byte_of(uint32_t w, int k) { return (w >> (8 * k)) & 0xFF; }
SAKER_HD void k_scale_min(uint32_t w1, uint32_t w2, uint32_t w3, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = static_cast<int>(byte_of(w1, j) & 63);
    *m = static_cast<int>(byte_of(w2, j) & 63);
  } else {
    const int k = j - 4;
    *sc = static_cast<int>((byte_of(w3, k) & 0x0F) | ((byte_of(w1, k) >> 6) << 4));
    *m = static_cast<int>((byte_of(w3, k) >> 4) | ((byte_of(w2, k) >> 6) << 4));
  }
}

template <DType T>
struct Fmt;

// ---- plain floats: 256-element blocks, unit u owns elements 8u + 64r ----
template <>
struct Fmt<DType::kF32> {
  static constexpr int kBlockElems = 256, kBlockBytes = 1024, kUnits = 8;
  static constexpr bool kAligned16 = true;  // needs 16-byte aligned blocks
  SAKER_HD static int run_start(int u, int r) { return 8 * u + 64 * r; }
  SAKER_HD static void decode_unit(const uint8_t* blk, int u, float* v) {
SAKER_UNROLL
    for (int r = 0; r < 4; ++r) {
SAKER_UNROLL
      for (int h = 0; h < 2; ++h) {
        const Bytes16 b = ld16(blk + 4 * (8 * u + 64 * r + 4 * h));
SAKER_UNROLL
        for (int j = 0; j < 4; ++j) v[8 * r + 4 * h + j] = bits_f32(b.w[j]);
      }
    }
  }
};
// F16 and BF16: the same 2-byte layout, each half-word widened by To (a functor of the low/high half).
template <typename To>
struct HalfFloatFmt {
  static constexpr int kBlockElems = 256, kBlockBytes = 512, kUnits = 8;
  static constexpr bool kAligned16 = true;
  SAKER_HD static int run_start(int u, int r) { return 8 * u + 64 * r; }
  SAKER_HD static void decode_unit(const uint8_t* blk, int u, float* v) {
SAKER_UNROLL
    for (int r = 0; r < 4; ++r) {
      const Bytes16 b = ld16(blk + 2 * (8 * u + 64 * r));
SAKER_UNROLL
      for (int j = 0; j < 4; ++j) {
        v[8 * r + 2 * j] = To::low(b.w[j]);
        v[8 * r + 2 * j + 1] = To::high(b.w[j]);
      }
    }
  }
};
struct F16Halves {
  SAKER_HD static float low(uint32_t w) { return f16_to_f32(static_cast<uint16_t>(w & 0xFFFF)); }
  SAKER_HD static float high(uint32_t w) { return f16_to_f32(static_cast<uint16_t>(w >> 16)); }
};
struct BF16Halves {
  SAKER_HD static float low(uint32_t w) { return bits_f32(w << 16); }
  SAKER_HD static float high(uint32_t w) { return bits_f32(w & 0xFFFF0000u); }
};
template <>
struct Fmt<DType::kF16> : HalfFloatFmt<F16Halves> {};
template <>
struct Fmt<DType::kBF16> : HalfFloatFmt<BF16Halves> {};

// ---- 32-element blocks: one unit, elements in order ----
template <>
struct Fmt<DType::kQ8_0> {
  static constexpr int kBlockElems = 32, kBlockBytes = 34, kUnits = 1;
  static constexpr bool kAligned16 = false;
  SAKER_HD static int run_start(int, int r) { return 8 * r; }
  SAKER_HD static void decode_unit(const uint8_t* blk, int, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(ld_u16_a2(blk)));  // 2-byte aligned: blocks are 34 bytes
SAKER_UNROLL
    for (int i = 0; i < 32; i += 8) {
      uint32_t w[2];
      ld8_a2(blk + 2 + i, &w[0], &w[1]);
SAKER_UNROLL
      for (int j = 0; j < 8; ++j) v[i + j] = byte_to_f32(w[j >> 2] ^ 0x80808080u, j & 3, 128.0f) * d;
    }
  }
};
// Q4_0 / Q4_1 / Q5_0 / Q5_1: f16 d, then (kMin) f16 m, then (k5Bit) 32 bits of 5th bits, then 16 bytes of
// nibbles; byte j holds elements j (low nibble) and j + 16 (high). Without a min the code is centred by
// kOffset (8 or 16), with one it is code * d + m: the CPU codecs' order of operations.
template <int kBlockBytesT, bool kMin, bool k5Bit>
struct LegacyFmt {
  static constexpr int kBlockElems = 32, kBlockBytes = kBlockBytesT, kUnits = 1;
  static constexpr bool kAligned16 = false;
  static constexpr int kQs = 2 + (kMin ? 2 : 0) + (k5Bit ? 4 : 0);
  static constexpr int kOffset = kMin ? 0 : (k5Bit ? 16 : 8);
  SAKER_HD static int run_start(int, int r) { return 8 * r; }
  SAKER_HD static float value(int code, float d, float m) {
    if constexpr (kMin) {
      return static_cast<float>(code) * d + m;
    } else {
      return static_cast<float>(code - kOffset) * d;
    }
  }
  SAKER_HD static void decode_unit(const uint8_t* blk, int, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(rd_u16(blk)));
    const float m = kMin ? f16_to_f32(static_cast<uint16_t>(rd_u16(blk + 2))) : 0.0f;
    const uint32_t qh = k5Bit ? rd_u16(blk + kQs - 4) | (rd_u16(blk + kQs - 2) << 16) : 0u;
SAKER_UNROLL
    for (int j = 0; j < 16; ++j) {
      const int q = blk[kQs + j];
      const int lo = (q & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (q >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      v[j] = value(lo, d, m);
      v[j + 16] = value(hi, d, m);
    }
  }
};
template <>
struct Fmt<DType::kQ4_0> : LegacyFmt<18, false, false> {};
template <>
struct Fmt<DType::kQ4_1> : LegacyFmt<20, true, false> {};
template <>
struct Fmt<DType::kQ5_0> : LegacyFmt<22, false, true> {};
template <>
struct Fmt<DType::kQ5_1> : LegacyFmt<24, true, true> {};
template <>
struct Fmt<DType::kIQ4_NL> {
  static constexpr int kBlockElems = 32, kBlockBytes = 18, kUnits = 1;
  static constexpr bool kAligned16 = false;
  SAKER_HD static int run_start(int, int r) { return 8 * r; }
  SAKER_HD static void decode_unit(const uint8_t* blk, int, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(rd_u16(blk)));
SAKER_UNROLL
    for (int j = 0; j < 16; ++j) {
      const uint32_t q = blk[2 + j];
      v[j] = d * iq4_level(q & 0x0F);
      v[j + 16] = d * iq4_level(q >> 4);
    }
  }
};

// ---- 256-element K-quant blocks ----
// Q4_K / Q5_K chunk c (64 elements, sub-blocks 2c and 2c + 1): scale and min of each half, from the block
// header (d, dmin, scales[12] in its first 16 bytes).
struct KScales {
  float d1, m1, d2, m2;
  // Four codes of each sub-block (bytes of lo and hi) -> v[4k..4k+3] and v[16+4k..16+4k+3].
  SAKER_HD void emit(uint32_t lo, uint32_t hi, int k, float* v) const {
SAKER_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[4 * k + i] = d1 * byte_to_f32(lo, i) - m1;
      v[16 + 4 * k + i] = d2 * byte_to_f32(hi, i) - m2;
    }
  }
};
SAKER_HD KScales k_sub_scales(const uint8_t* blk, int c) {
  const Bytes16 hdr = ld16(blk);
  const float d = f16_to_f32(static_cast<uint16_t>(hdr.w[0] & 0xFFFF));
  const float dmin = f16_to_f32(static_cast<uint16_t>(hdr.w[0] >> 16));
  KScales s;
  int sc, m;
  k_scale_min(hdr.w[1], hdr.w[2], hdr.w[3], 2 * c, &sc, &m);
  s.d1 = d * static_cast<float>(sc);
  s.m1 = dmin * static_cast<float>(m);
  k_scale_min(hdr.w[1], hdr.w[2], hdr.w[3], 2 * c + 1, &sc, &m);
  s.d2 = d * static_cast<float>(sc);
  s.m2 = dmin * static_cast<float>(m);
  return s;
}
// Q4_K unit u: chunk c = u / 2, lanes l0 = 16 (u % 2) .. l0 + 15 of qs[32c ..]; low nibbles are elements
// 64c + l0 + j (sub-block 2c), high nibbles 64c + 32 + l0 + j (sub-block 2c + 1).
template <>
struct Fmt<DType::kQ4_K> {
  static constexpr int kBlockElems = 256, kBlockBytes = 144, kUnits = 8;
  static constexpr bool kAligned16 = true;  // 144-byte blocks: qs runs and the header are 16-byte aligned
  SAKER_HD static int run_start(int u, int r) { return 64 * (u >> 1) + 16 * (u & 1) + 8 * (r & 1) + 32 * (r >> 1); }
  SAKER_HD static void decode_unit(const uint8_t* blk, int u, float* v) {
    const KScales s = k_sub_scales(blk, u >> 1);
    const Bytes16 q = ld16(blk + 16 + 32 * (u >> 1) + 16 * (u & 1));
SAKER_UNROLL
    for (int k = 0; k < 4; ++k) s.emit(q.w[k] & 0x0F0F0F0Fu, (q.w[k] >> 4) & 0x0F0F0F0Fu, k, v);
  }
};
// Q5_K: as Q4_K, the 5th bit of element 64c + l (+32) is bit 2c (2c + 1) of qh[l].
template <>
struct Fmt<DType::kQ5_K> {
  static constexpr int kBlockElems = 256, kBlockBytes = 176, kUnits = 8;
  static constexpr bool kAligned16 = true;  // 176-byte blocks: header, qh and qs runs 16-byte aligned
  SAKER_HD static int run_start(int u, int r) { return 64 * (u >> 1) + 16 * (u & 1) + 8 * (r & 1) + 32 * (r >> 1); }
  SAKER_HD static void decode_unit(const uint8_t* blk, int u, float* v) {
    const int c = u >> 1, l0 = 16 * (u & 1);
    const KScales s = k_sub_scales(blk, c);
    const Bytes16 qh = ld16(blk + 16 + l0);
    const Bytes16 q = ld16(blk + 48 + 32 * c + l0);
SAKER_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t lo = (q.w[k] & 0x0F0F0F0Fu) | (((qh.w[k] >> (2 * c)) & 0x01010101u) << 4);
      const uint32_t hi = ((q.w[k] >> 4) & 0x0F0F0F0Fu) | (((qh.w[k] >> (2 * c + 1)) & 0x01010101u) << 4);
      s.emit(lo, hi, k, v);
    }
  }
};
// Q6_K unit u: half h = u / 4, l = l0 + j with l0 = 8 (u % 4); run r is element 128h + l0 + 32r + j.
template <>
struct Fmt<DType::kQ6_K> {
  static constexpr int kBlockElems = 256, kBlockBytes = 210, kUnits = 8;
  static constexpr bool kAligned16 = false;  // 210-byte blocks: only 2-byte aligned
  SAKER_HD static int run_start(int u, int r) { return 128 * (u >> 2) + 8 * (u & 3) + 32 * r; }
  SAKER_HD static void decode_unit(const uint8_t* blk, int u, float* v) {
    const int h = u >> 2, l0 = 8 * (u & 3);
    const uint8_t* ql = blk + 64 * h + l0;
    const uint8_t* qh = blk + 128 + 32 * h + l0;
    const float d = f16_to_f32(static_cast<uint16_t>(ld_u16_a2(blk + 208)));
    uint32_t a[2], b[2], hh[2], sc[2];
    ld8_a2(ql, &a[0], &a[1]);
    ld8_a2(ql + 32, &b[0], &b[1]);
    ld8_a2(qh, &hh[0], &hh[1]);
    ld8_a2(blk + 192 + 8 * h, &sc[0], &sc[1]);  // int8 scales of the half's 16-element groups
    float s[4];
SAKER_UNROLL
    for (int r = 0; r < 4; ++r) {
      const int idx = l0 / 16 + 2 * r;
      s[r] = d * static_cast<float>(static_cast<int8_t>(byte_of(sc[idx >> 2], idx & 3)));
    }
SAKER_UNROLL
    for (int k = 0; k < 2; ++k) {
      // Four consecutive l at once: 6-bit codes q1..q4 (elements l, l + 32, l + 64, l + 96 of the half).
      const uint32_t q1 = (a[k] & 0x0F0F0F0Fu) | ((hh[k] & 0x03030303u) << 4);
      const uint32_t q2 = (b[k] & 0x0F0F0F0Fu) | (((hh[k] >> 2) & 0x03030303u) << 4);
      const uint32_t q3 = ((a[k] >> 4) & 0x0F0F0F0Fu) | (((hh[k] >> 4) & 0x03030303u) << 4);
      const uint32_t q4 = ((b[k] >> 4) & 0x0F0F0F0Fu) | (((hh[k] >> 6) & 0x03030303u) << 4);
SAKER_UNROLL
      for (int i = 0; i < 4; ++i) {
        v[4 * k + i] = s[0] * byte_to_f32(q1, i, 32.0f);
        v[8 + 4 * k + i] = s[1] * byte_to_f32(q2, i, 32.0f);
        v[16 + 4 * k + i] = s[2] * byte_to_f32(q3, i, 32.0f);
        v[24 + 4 * k + i] = s[3] * byte_to_f32(q4, i, 32.0f);
      }
    }
  }
};
// IQ4_XS unit u = sub-block u (elements 32u .. 32u + 31, nibbles as IQ4_NL).
template <>
struct Fmt<DType::kIQ4_XS> {
  static constexpr int kBlockElems = 256, kBlockBytes = 136, kUnits = 8;
  static constexpr bool kAligned16 = false;  // 136-byte blocks: 8-byte aligned
  SAKER_HD static int run_start(int u, int r) { return 32 * u + 8 * r; }
  SAKER_HD static void decode_unit(const uint8_t* blk, int u, float* v) {
    const float d = f16_to_f32(static_cast<uint16_t>(rd_u16(blk)));
    const uint32_t scales_h = rd_u16(blk + 2);
    const int ls = static_cast<int>(((blk[4 + u / 2] >> (4 * (u % 2))) & 0x0F) | (((scales_h >> (2 * u)) & 3) << 4));
    const float dl = d * static_cast<float>(ls - 32);
    uint32_t w[4];
    ld8(blk + 8 + 16 * u, &w[0], &w[1]);
    ld8(blk + 16 + 16 * u, &w[2], &w[3]);
SAKER_UNROLL
    for (int j = 0; j < 16; ++j) {
      const uint32_t q = (w[j >> 2] >> (8 * (j & 3))) & 0xFF;
      v[j] = dl * iq4_level(q & 0x0F);
      v[j + 16] = dl * iq4_level(q >> 4);
    }
  }
};

// One element of a row of a plain float type (the simple kernel's path for any n_in).
SAKER_HD float float_element(DType type, const uint8_t* row, int64_t i) {
  if (type == DType::kF32) return bits_f32(rd_u32(row + 4 * i));  // row is 4-byte aligned in practice
  const uint16_t h = static_cast<uint16_t>(rd_u16(row + 2 * i));
  return type == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
}

// Calls f(Fmt<T>{}) for the runtime dtype; returns false for a dtype without a decoder.
template <typename F>
SAKER_HD bool visit_dtype(DType type, F&& f) {
  switch (type) {
    case DType::kF32: f(Fmt<DType::kF32>{}); return true;
    case DType::kF16: f(Fmt<DType::kF16>{}); return true;
    case DType::kBF16: f(Fmt<DType::kBF16>{}); return true;
    case DType::kQ8_0: f(Fmt<DType::kQ8_0>{}); return true;
    case DType::kQ4_0: f(Fmt<DType::kQ4_0>{}); return true;
    case DType::kQ4_1: f(Fmt<DType::kQ4_1>{}); return true;
    case DType::kQ5_0: f(Fmt<DType::kQ5_0>{}); return true;
    case DType::kQ5_1: f(Fmt<DType::kQ5_1>{}); return true;
    case DType::kIQ4_NL: f(Fmt<DType::kIQ4_NL>{}); return true;
    case DType::kQ4_K: f(Fmt<DType::kQ4_K>{}); return true;
    case DType::kQ5_K: f(Fmt<DType::kQ5_K>{}); return true;
    case DType::kQ6_K: f(Fmt<DType::kQ6_K>{}); return true;
    case DType::kIQ4_XS: f(Fmt<DType::kIQ4_XS>{}); return true;
    default: return false;
  }
}

}  // namespace saker::cuda::blocks
