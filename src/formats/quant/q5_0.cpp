// Q5_0 and Q5_1: blocks of 32 elements with 5-bit codes (4 low bits in nibbles, 5th bits in a u32).
//
// Q5_0, 22 bytes:                         Q5_1, 24 bytes:
//   offset 0  d       f16                   offset 0  d       f16
//   offset 2  qh      u32 (little-endian)   offset 2  m       f16
//   offset 6  qs[16]  nibbles               offset 4  qh      u32
//                                           offset 8  qs[16]  nibbles
// Element j < 16: low nibble of qs[j], 5th bit = bit j of qh; element j + 16: high nibble of qs[j],
// 5th bit = bit j + 16 of qh.
//   Q5_0: x = d * (q - 16)       Q5_1: x = d * q + m
//
// Quantisers follow ggml's reference convention (Q5_0: d = max / -16 with max the signed value of largest
// magnitude; Q5_1: [min, max] in 31 steps), so files match llama.cpp's byte for byte.
#include <cfloat>

#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {
constexpr int kBlock = 32;

// Codes q[32] in 0..31 -> qh and qs.
void pack5(const int* q, uint8_t* qh_out, uint8_t* qs) {
  uint32_t qh = 0;
  for (int j = 0; j < kBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
  }
  std::memcpy(qh_out, &qh, 4);
}

// qh and qs -> codes q[32] in 0..31.
void unpack5(const uint8_t* qh_in, const uint8_t* qs, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_in, 4);
  for (int j = 0; j < kBlock / 2; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
  }
}

}  // namespace

void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  constexpr int kBytes = 22;
  int q[kBlock];
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kBlock) {
    const float d = load_f16(src);
    unpack5(src + 2, src + 6, q);
    for (int j = 0; j < kBlock; ++j) dst[j] = static_cast<float>(q[j] - 16) * d;
  }
}

void quantize_q5_0(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr int kBytes = 22;
  int q[kBlock];
  for (int64_t b = 0; b < n_blocks; ++b, src += kBlock, dst += kBytes) {
    const float max = signed_absmax(src, kBlock);
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    for (int j = 0; j < kBlock; ++j) q[j] = trunc_clamp(src[j] * id + 16.5f, 31);
    pack5(q, dst + 2, dst + 6);
  }
}

void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  constexpr int kBytes = 24;
  int q[kBlock];
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kBlock) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    unpack5(src + 4, src + 8, q);
    for (int j = 0; j < kBlock; ++j) dst[j] = static_cast<float>(q[j]) * d + m;
  }
}

void quantize_q5_1(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr int kBytes = 24;
  int q[kBlock];
  for (int64_t b = 0; b < n_blocks; ++b, src += kBlock, dst += kBytes) {
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int i = 0; i < kBlock; ++i) {
      if (src[i] < min) min = src[i];
      if (src[i] > max) max = src[i];
    }
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    store_f16(dst + 2, min);
    for (int j = 0; j < kBlock; ++j) q[j] = trunc_clamp((src[j] - min) * id + 0.5f, 31);
    pack5(q, dst + 4, dst + 8);
  }
}

}  // namespace saker::quant
