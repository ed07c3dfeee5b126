// Q4_0 and Q4_1: blocks of 32 elements with 4-bit codes.
//
// Q4_0, 18 bytes:                         Q4_1, 20 bytes:
//   offset 0  d       f16                   offset 0  d       f16
//   offset 2  qs[16]  nibbles               offset 2  m       f16
//                                           offset 4  qs[16]  nibbles
// Low nibble of qs[j] is element j, high nibble is element j + 16.
//   Q4_0: x = d * (q - 8)        Q4_1: x = d * q + m
//
// Quantisers follow ggml's reference convention so files match llama.cpp's byte for byte. Q4_0 maps the
// signed value of largest magnitude to -8 (d = max / -8), so the extra negative level is used; Q4_1 spans
// [min, max] with 15 steps.
#include <cfloat>

#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {
constexpr int kBlock = 32;
}  // namespace

void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  constexpr int kBytes = 18;
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kBlock) {
    const float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < kBlock / 2; ++j) {
      dst[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
      dst[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
  }
}

void quantize_q4_0(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr int kBytes = 18;
  for (int64_t b = 0; b < n_blocks; ++b, src += kBlock, dst += kBytes) {
    const float max = signed_absmax(src, kBlock);
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    uint8_t* qs = dst + 2;
    for (int j = 0; j < kBlock / 2; ++j) {
      const int lo = trunc_clamp(src[j] * id + 8.5f, 15);
      const int hi = trunc_clamp(src[j + 16] * id + 8.5f, 15);
      qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  constexpr int kBytes = 20;
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kBlock) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    const uint8_t* qs = src + 4;
    for (int j = 0; j < kBlock / 2; ++j) {
      dst[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
      dst[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
    }
  }
}

void quantize_q4_1(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr int kBytes = 20;
  for (int64_t b = 0; b < n_blocks; ++b, src += kBlock, dst += kBytes) {
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int i = 0; i < kBlock; ++i) {
      if (src[i] < min) min = src[i];
      if (src[i] > max) max = src[i];
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    store_f16(dst + 2, min);
    uint8_t* qs = dst + 4;
    for (int j = 0; j < kBlock / 2; ++j) {
      const int lo = trunc_clamp((src[j] - min) * id + 0.5f, 15);
      const int hi = trunc_clamp((src[j + 16] - min) * id + 0.5f, 15);
      qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

}  // namespace saker::quant
