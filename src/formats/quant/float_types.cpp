// Plain float element types: F32 (copy), F16 (IEEE half) and BF16 (upper half of an F32), both rounded to
// nearest even on the way in. Counts here are elements, not blocks.
#include "formats/quant/quant_internal.h"

namespace saker::quant {

void dequantize_f32(const uint8_t* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quantize_f32(const float* src, uint8_t* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}
void quantize_f16(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store_f16(dst + 2 * i, src[i]);
}

void dequantize_bf16(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    dst[i] = bf16_to_fp32(b);
  }
}
void quantize_bf16(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = fp32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &b, 2);
  }
}

}  // namespace saker::quant
