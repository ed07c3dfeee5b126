#pragma once
// Internals shared by the codec files in formats/quant/: per-type block functions (registered in
// codec.cpp) and the small numeric helpers they share. Not a public interface.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"

static_assert(std::endian::native == std::endian::little, "quant codecs read little-endian blocks directly");

namespace saker::quant {

// Decode / encode n_blocks consecutive blocks.
using DequantizeBlocksFn = void (*)(const uint8_t* src, float* dst, int64_t n_blocks);
using QuantizeBlocksFn = void (*)(const float* src, uint8_t* dst, int64_t n_blocks);

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}
inline void store_f16(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}
// The value a float takes after a round trip through f16 (scales are stored as f16).
inline float round_f16(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

// Round to nearest, ties to even (ggml's nearest_int for |v| < 2^22). NaN gives 0 and huge values
// saturate, so a quantiser fed garbage never hits an undefined float-to-int conversion.
inline int nearest_int(float v) {
  if (!(std::fabs(v) <= 4194303.0f)) return v > 0 ? 4194303 : (v < 0 ? -4194303 : 0);
  return static_cast<int>(std::nearbyint(v));
}

// The signed value of largest magnitude among x[0, n) (the first, on ties; 0 for an all-zero block).
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (amax < std::fabs(x[i])) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

// Truncates v (>= 0 in normal use) to an integer in [0, hi]; NaN gives 0.
inline int trunc_clamp(float v, int hi) {
  return static_cast<int>(std::fmin(std::fmax(v, 0.0f), static_cast<float>(hi)));
}

// Clamps an already-rounded v into [lo, hi]; NaN gives 0.
inline int clamp_to_int(float v, int lo, int hi) {
  if (!(v == v)) return 0;
  return static_cast<int>(std::fmin(std::fmax(v, static_cast<float>(lo)), static_cast<float>(hi)));
}

// The 16 non-uniform levels of IQ4_NL / IQ4_XS.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// Block functions, one family per file.
void dequantize_f32(const uint8_t* src, float* dst, int64_t n);
void quantize_f32(const float* src, uint8_t* dst, int64_t n);
void dequantize_f16(const uint8_t* src, float* dst, int64_t n);
void quantize_f16(const float* src, uint8_t* dst, int64_t n);
void dequantize_bf16(const uint8_t* src, float* dst, int64_t n);
void quantize_bf16(const float* src, uint8_t* dst, int64_t n);

void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q8_0(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q4_0(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q4_1(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q5_0(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q5_1(const float* src, uint8_t* dst, int64_t n_blocks);

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t n_blocks);

void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_iq4_nl(const float* src, uint8_t* dst, int64_t n_blocks);
void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t n_blocks);
void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t n_blocks);

}  // namespace saker::quant
