// IQ4_NL and IQ4_XS: 4-bit codes indexing a fixed non-uniform table kIq4Values (quant_internal.h).
//
// IQ4_NL, 32 elements, 18 bytes:
//   offset 0  d       f16
//   offset 2  qs[16]  low nibble of qs[j] -> element j, high nibble -> element j + 16
//   x = d * kIq4Values[code]
//
// IQ4_XS, 256 elements, 136 bytes; eight sub-blocks of 32 with a 6-bit signed scale each:
//   offset 0  d           f16
//   offset 2  scales_h    u16: bits 2ib, 2ib + 1 are the high 2 bits of sub-block ib's scale
//   offset 4  scales_l[4] low 4 bits: sub-block ib in nibble ib % 2 of scales_l[ib / 2]
//   offset 8  qs[128]     sub-block ib uses qs[16ib .. 16ib + 15], nibbles placed as IQ4_NL
//   ls = low | high << 4;  x = (d * (ls - 32)) * kIq4Values[code]
//
// Quantiser: per group of 32, try inverse scales around the one mapping the largest-magnitude value onto
// the table's -127 end, keep the scale with the best x^2-weighted least-squares fit; IQ4_XS then
// quantises the eight group scales to 6 bits against d and re-picks the codes. Codes are picked with the
// scale before its f16 rounding, as llama.cpp does: saker's IQ4_XS blocks are byte-identical to
// llama-quantize's (checked by the golden test), at the same error.
#include <algorithm>

#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {

constexpr int kGroup = 32;
constexpr int kTries = 7;
constexpr float kGroupEps = 1e-15f;

// Index of the table value nearest to v (ties to the larger value). NaN lands on an end, never out of range.
int nearest_level(float v) {
  if (v <= kIq4Values[0]) return 0;
  if (v >= kIq4Values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < kIq4Values[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - kIq4Values[lo] < kIq4Values[hi] - v ? lo : hi;
}

// Best scale for one group of kGroup values (0 for an all-zero group).
float fit_group_scale(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kGroup; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (!(amax >= kGroupEps)) return 0.0f;
  // sum w*q*x and sum w*q*q (w = x^2) for the codes an inverse scale picks.
  auto sums = [&](float id, float* sum_qx, float* sum_q2) {
    *sum_qx = 0.0f;
    *sum_q2 = 0.0f;
    for (int j = 0; j < kGroup; ++j) {
      const float q = kIq4Values[nearest_level(id * x[j])];
      const float w = x[j] * x[j];
      *sum_qx += w * q * x[j];
      *sum_q2 += w * q * q;
    }
  };
  float sum_qx, sum_q2;
  sums(-kIq4Values[0] / max, &sum_qx, &sum_q2);
  float d = sum_q2 > 0.0f ? sum_qx / sum_q2 : 0.0f;
  float best = d * sum_qx;
  for (int t = -kTries; t <= kTries; ++t) {
    sums((t + kIq4Values[0]) / max, &sum_qx, &sum_q2);
    if (sum_q2 > 0.0f && sum_qx * sum_qx > best * sum_q2) {
      d = sum_qx / sum_q2;
      best = d * sum_qx;
    }
  }
  return d;
}

// Codes for one group under scale dl, packed as 16 bytes of nibbles.
void pack_group(const float* x, float dl, uint8_t* qs) {
  const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
  for (int j = 0; j < kGroup / 2; ++j) {
    qs[j] = static_cast<uint8_t>(nearest_level(idl * x[j]) | (nearest_level(idl * x[j + 16]) << 4));
  }
}

void decode_group(const uint8_t* qs, float dl, float* y) {
  for (int j = 0; j < kGroup / 2; ++j) {
    y[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0x0F]);
    y[j + 16] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
  }
}

}  // namespace

void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += 18, dst += kGroup) decode_group(src + 2, load_f16(src), dst);
}

void quantize_iq4_nl(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += kGroup, dst += 18) {
    const float d = fit_group_scale(src);
    store_f16(dst, d);
    pack_group(src, d, dst + 2);
  }
}

void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t n_blocks) {
  constexpr int kBytes = 136;
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += 256) {
    const float d = load_f16(src);
    uint16_t scales_h;
    std::memcpy(&scales_h, src + 2, 2);
    const uint8_t* scales_l = src + 4;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
      decode_group(src + 8 + 16 * ib, d * static_cast<float>(ls - 32), dst + kGroup * ib);
    }
  }
}

void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr int kBytes = 136;
  float scales[8];
  for (int64_t b = 0; b < n_blocks; ++b, src += 256, dst += kBytes) {
    float max_scale = 0.0f, amax_scale = 0.0f;  // signed group scale of largest magnitude, and its magnitude
    for (int ib = 0; ib < 8; ++ib) {
      scales[ib] = fit_group_scale(src + kGroup * ib);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    // Group scales become ls - 32 in [-32, 31] times d, the largest at -32.
    const float d = -max_scale / 32.0f;
    store_f16(dst, d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t scales_h = 0;
    uint8_t* scales_l = dst + 4;
    std::memset(scales_l, 0, 4);
    for (int ib = 0; ib < 8; ++ib) {
      const int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
      const int ls = l + 32;
      scales_l[ib / 2] |= static_cast<uint8_t>((ls & 0x0F) << (4 * (ib % 2)));
      scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * ib));
      pack_group(src + kGroup * ib, d * static_cast<float>(l), dst + 8 + 16 * ib);
    }
    std::memcpy(dst + 2, &scales_h, 2);
  }
}

}  // namespace saker::quant
