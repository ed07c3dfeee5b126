// Q6_K: blocks of 256 elements, 210 bytes; sixteen sub-blocks of 16 with an int8 scale each.
//
//   offset 0    ql[128]      low 4 bits of the codes
//   offset 128  qh[64]       high 2 bits
//   offset 192  scales[16]   int8 sub-block scales
//   offset 208  d            f16 super-block scale
// Each half h (128 elements) uses ql[64h ..], qh[32h ..]; for l < 32 within the half:
//   element l      : ql[l] & 0xF,      (qh[l] >> 0) & 3
//   element l + 32 : ql[l + 32] & 0xF, (qh[l] >> 2) & 3
//   element l + 64 : ql[l] >> 4,       (qh[l] >> 4) & 3
//   element l + 96 : ql[l + 32] >> 4,  (qh[l] >> 6) & 3
// q = (low | high << 4) - 32; element e of the block belongs to sub-block e / 16.
//   x = (d * scale) * q
#include <algorithm>

#include "formats/quant/k_quants.h"
#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {
constexpr int kBytes = 210;
constexpr int kSub = 16;
constexpr int kNmax = 32;
}  // namespace

void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kSuperBlock) {
    const auto* scales = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_f16(src + 208);
    float ds[16];
    for (int j = 0; j < 16; ++j) ds[j] = d * static_cast<float>(scales[j]);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = src + 64 * h;
      const uint8_t* qh = src + 128 + 32 * h;
      float* y = dst + 128 * h;
      const float* s = ds + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = s[l / 16] * static_cast<float>(q1);
        y[l + 32] = s[(l + 32) / 16] * static_cast<float>(q2);
        y[l + 64] = s[(l + 64) / 16] * static_cast<float>(q3);
        y[l + 96] = s[(l + 96) / 16] * static_cast<float>(q4);
      }
    }
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  constexpr float kEps = 1e-15f;
  uint8_t L[kSuperBlock];
  float scales[16];
  for (int64_t b = 0; b < n_blocks; ++b, src += kSuperBlock, dst += kBytes) {
    float max_scale = 0.0f, amax_scale = 0.0f;  // the signed scale of largest magnitude, and its magnitude
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_codes(src + kSub * j, kSub, kNmax, L + kSub * j);
      if (std::fabs(scales[j]) > amax_scale) {
        amax_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (!(amax_scale >= kEps)) {
      std::memset(dst, 0, kBytes);
      continue;
    }
    // Sub-block scales to int8 with the largest at -128 (so the sign of d follows it).
    const float iscale = -128.0f / max_scale;
    store_f16(dst + 208, 1.0f / iscale);
    auto* qscales = reinterpret_cast<int8_t*>(dst + 192);
    for (int j = 0; j < 16; ++j) {
      qscales[j] = static_cast<int8_t>(std::clamp(nearest_int(iscale * scales[j]), -128, 127));
    }
    // Codes again, against the scales as they will decode.
    const float d = load_f16(dst + 208);
    for (int j = 0; j < 16; ++j) {
      const float ds = d * qscales[j];
      if (ds == 0.0f) continue;
      for (int l = 0; l < kSub; ++l) {
        L[kSub * j + l] = static_cast<uint8_t>(std::clamp(nearest_int(src[kSub * j + l] / ds), -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      uint8_t* ql = dst + 64 * h;
      uint8_t* qh = dst + 128 + 32 * h;
      const uint8_t* q = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0x0F) | ((q[l + 64] & 0x0F) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0x0F) | ((q[l + 96] & 0x0F) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                     ((q[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace saker::quant
