#pragma once
// The 32-element-block formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) and IQ4_XS on the width-invariant int8
// tensor-core kernel (matmul_kq_mma.cu): which staged bytes a lane reads for its MMA fragments, how they become
// int8 codes, and the canonical value of a group (kq_canon.h) recomputed on the host. Everything here is
// __host__ __device__, so the unit tests check the lane words against formats/quant's layouts without a GPU.
//
// Fragments (mma.m16n8k32.s8, as for Q4_K): lane t's k indices of a 32-element sub-block are its elements
// 8t .. 8t+7, A words lo = elements 8t .. 8t+3 and hi = 8t+4 .. 8t+7 of one weight row, one int8 code a byte.
// In the nibble formats element l < 16 is the low nibble of qs[l] and element l + 16 the high one, so lane t
// reads qs[8(t & 1) .. 8(t & 1) + 7] and takes nibble t >> 1; the 5th bit of element e is bit e of qh.
//
// A staged row is read through staged_word (16-byte aligned words, the block at an even byte `at`): blocks of
// 18, 22 and 34 bytes are only 2-byte aligned.
#include <cmath>
#include <cstdint>

#include "ops/cuda/dequant_blocks.h"
#include "ops/cuda/kq_canon.h"
#include "ops/cuda/kq_f16_layout.h"

namespace saker::cuda::q32 {

using kq_f16::staged_word;

// Per-byte x - c for bytes 0..127 and c <= 128: no borrow crosses a byte (each byte is lifted by 128 first).
SAKER_HD uint32_t sub_bytes(uint32_t x, uint32_t c) {
  return ((x | 0x80808080u) - c * 0x01010101u) ^ 0x80808080u;
}

// Bits 0..3 of b to bit 0 of bytes 0..3 (the four shifted copies never overlap, so the product carries nothing).
SAKER_HD uint32_t spread4(uint32_t b) { return ((b & 0xFu) * 0x00204081u) & 0x01010101u; }

// Four nibble codes (one a byte, 0..15) to the IQ4 levels as int8 bytes: one permute of each half of the table,
// then the byte's bit 3 picks the half.
SAKER_HD uint32_t iq4_codes(uint32_t n) {
  const uint32_t s = n & 0x07070707u;
  const uint32_t u = s | (s >> 4);
  const uint32_t sel = (u & 0xFFu) | ((u >> 8) & 0xFF00u);  // byte i's index in nibble i
  const uint32_t lo = blocks::byte_perm(blocks::kIq4W0, blocks::kIq4W1, sel);
  const uint32_t hi = blocks::byte_perm(blocks::kIq4W2, blocks::kIq4W3, sel);
  const uint32_t m = ((n >> 3) & 0x01010101u) * 0xFFu;
  return (hi & m) | (lo & ~m);
}

// ---- 32-element blocks: f16 d, [f16 m], [32 bits of 5th bits], 16 bytes of nibbles or 32 int8 codes.
template <DType T>
struct Block32;
template <int kBytesT, bool kMinT, bool k5BitT, int kCentre, bool kTable = false>
struct NibbleBlock {
  static constexpr int kBytes = kBytesT;
  static constexpr bool kMin = kMinT;
  static constexpr int kQh = 2 + (kMinT ? 2 : 0);     // 5th bits (k5Bit)
  static constexpr int kQs = kQh + (k5BitT ? 4 : 0);  // nibbles
  // Lane t's codes of the block at byte `at` of a staged row.
  SAKER_HD static void lane_codes(const uint32_t* row, int at, int t, uint32_t& lo, uint32_t& hi) {
    const int q = at + kQs + 8 * (t & 1);
    const uint32_t w0 = staged_word(row, q), w1 = staged_word(row, q + 4);
    const int sh = 4 * (t >> 1);
    lo = (w0 >> sh) & 0x0F0F0F0Fu;
    hi = (w1 >> sh) & 0x0F0F0F0Fu;
    if constexpr (k5BitT) {
      const uint32_t hb = (staged_word(row, at + kQh) >> (8 * t)) & 0xFFu;
      lo |= spread4(hb) << 4;
      hi |= spread4(hb >> 4) << 4;
    }
    if constexpr (kTable) {
      lo = iq4_codes(lo);
      hi = iq4_codes(hi);
    } else if constexpr (kCentre != 0) {
      lo = sub_bytes(lo, kCentre);
      hi = sub_bytes(hi, kCentre);
    }
  }
};
template <>
struct Block32<DType::kQ4_0> : NibbleBlock<18, false, false, 8> {};
template <>
struct Block32<DType::kQ4_1> : NibbleBlock<20, true, false, 0> {};
template <>
struct Block32<DType::kQ5_0> : NibbleBlock<22, false, true, 16> {};
template <>
struct Block32<DType::kQ5_1> : NibbleBlock<24, true, true, 0> {};
template <>
struct Block32<DType::kIQ4_NL> : NibbleBlock<18, false, false, 0, true> {};
template <>
struct Block32<DType::kQ8_0> {
  static constexpr int kBytes = 34;
  static constexpr bool kMin = false;
  SAKER_HD static void lane_codes(const uint32_t* row, int at, int t, uint32_t& lo, uint32_t& hi) {
    lo = staged_word(row, at + 2 + 8 * t);
    hi = staged_word(row, at + 6 + 8 * t);
  }
};

// The f16 scale (low half) and min (high half, formats with one) of the block at `at`.
SAKER_HD float block_d(uint32_t head) { return blocks::f16_to_f32(static_cast<uint16_t>(head & 0xFFFFu)); }
SAKER_HD float block_m(uint32_t head) { return blocks::f16_to_f32(static_cast<uint16_t>(head >> 16)); }

// ---- IQ4_XS (136 bytes, 8-byte aligned: f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]). Sub-block j: 6-bit
// scale ls_j = nibble j of scales_l | bits 2j, 2j+1 of scales_h << 4, weight d * (ls_j - 32) * level; its
// nibbles are qs[16j .. 16j + 15] laid out as an IQ4_NL block's.
namespace iq4xs {
inline constexpr int kBytes = 136;
SAKER_HD int scale(uint32_t scales_h, uint32_t scales_l, int j) {  // ls_j - 32
  return static_cast<int>(((scales_l >> (4 * j)) & 0xFu) | (((scales_h >> (2 * j)) & 3u) << 4)) - 32;
}
SAKER_HD void lane_codes(const uint32_t* row, int at, int j, int t, uint32_t& lo, uint32_t& hi) {
  const int q = at + 8 + 16 * j + 8 * (t & 1);
  const int sh = 4 * (t >> 1);
  lo = iq4_codes((staged_word(row, q) >> sh) & 0x0F0F0F0Fu);
  hi = iq4_codes((staged_word(row, q + 4) >> sh) & 0x0F0F0F0Fu);
}
}  // namespace iq4xs

// Bytes of one 256-element group of a row (the kernel's block).
SAKER_HD int group_bytes(DType type) {
  switch (type) {
    case DType::kQ8_0: return 8 * 34;
    case DType::kQ4_0: case DType::kIQ4_NL: return 8 * 18;
    case DType::kQ4_1: return 8 * 20;
    case DType::kQ5_0: return 8 * 22;
    case DType::kQ5_1: return 8 * 24;
    case DType::kIQ4_XS: return iq4xs::kBytes;
    default: return 0;
  }
}

// ---- the host oracle: one group's canonical value from its GGUF bytes, written from the format's definition
// (not from the lane functions above). `group` is the group's first byte, q its activation codes, kb its
// activation block, n_sub its sub-blocks (8 but in a row's last, partial group).
inline float host_f16(const uint8_t* p) { return blocks::f16_to_f32(static_cast<uint16_t>(blocks::rd_u16(p))); }

inline int host_code(DType type, const uint8_t* blk, int l) {  // element l of one 32-element block, centred
  auto nib = [&](int qs) { return l < 16 ? blk[qs + l] & 15 : blk[qs + l - 16] >> 4; };
  auto bit5 = [&](int qh) {
    return static_cast<int>((blocks::rd_u32(blk + qh) >> l) & 1) << 4;
  };
  switch (type) {
    case DType::kQ8_0: return static_cast<int8_t>(blk[2 + l]);
    case DType::kQ4_0: return nib(2) - 8;
    case DType::kQ4_1: return nib(4);
    case DType::kQ5_0: return (nib(6) | bit5(2)) - 16;
    case DType::kQ5_1: return nib(8) | bit5(4);
    case DType::kIQ4_NL: return static_cast<int>(std::lround(blocks::iq4_level(static_cast<uint32_t>(nib(2)))));
    default: return 0;
  }
}

inline float host_group_value(DType type, const uint8_t* group, int n_sub, const int8_t* q, const kq::KxBlock& kb) {
  if (type == DType::kIQ4_XS) {
    const uint32_t scales_h = blocks::rd_u16(group + 2), scales_l = blocks::rd_u32(group + 4);
    int t_sum = 0;
    for (int j = 0; j < 8; ++j) {
      int s = 0;
      for (int l = 0; l < 32; ++l) {
        const int byte = group[8 + 16 * j + (l & 15)];
        const int level = static_cast<int>(std::lround(blocks::iq4_level(static_cast<uint32_t>(l < 16 ? byte & 15 : byte >> 4))));
        s += level * q[32 * j + l];
      }
      t_sum += (iq4xs::scale(scales_h, scales_l, j) * s) << kb.sh[j];
    }
    return kq::kq_value_sym(kb.d8, host_f16(group), t_sum);
  }
  const int bytes = group_bytes(type) / 8;
  const bool has_min = type == DType::kQ4_1 || type == DType::kQ5_1;
  float u = 0.0f;
  for (int j = 0; j < n_sub; ++j) {
    const uint8_t* blk = group + bytes * j;
    int s = 0;
    for (int l = 0; l < 32; ++l) s += host_code(type, blk, l) * q[32 * j + l];
    u = kq::ffma(host_f16(blk), kq::i2f(s << kb.sh[j]), u);
    if (has_min) u = kq::ffma(host_f16(blk + 2), kq::i2f(kb.qsum[j]), u);
  }
  return kq::fmul(kb.d8, u);
}

}  // namespace saker::cuda::q32
