// Q8_0: blocks of 32 elements, 34 bytes.
//
//   offset 0   d      f16     block scale
//   offset 2   qs[32] int8    codes
//   x[i] = d * qs[i]
//
// Quantiser (ggml's convention, so files match llama.cpp's byte for byte): d = max|x| / 127, codes are
// x / d rounded half away from zero.
#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {
constexpr int kBlock = 32;
constexpr int kBytes = 34;
}  // namespace

void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kBlock) {
    const float d = load_f16(src);
    const auto* qs = reinterpret_cast<const int8_t*>(src + 2);
    for (int i = 0; i < kBlock; ++i) dst[i] = static_cast<float>(qs[i]) * d;
  }
}

void quantize_q8_0(const float* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += kBlock, dst += kBytes) {
    float amax = 0.0f;
    for (int i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(src[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    auto* qs = reinterpret_cast<int8_t*>(dst + 2);
    for (int i = 0; i < kBlock; ++i) {
      qs[i] = static_cast<int8_t>(clamp_to_int(std::round(src[i] * id), -127, 127));
    }
  }
}

}  // namespace saker::quant
