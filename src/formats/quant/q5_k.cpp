// Q5_K: blocks of 256 elements, 176 bytes; eight sub-blocks of 32 with a 6-bit scale and 6-bit min each.
//
//   offset 0   d           f16    super-block scale of the sub-block scales
//   offset 2   dmin        f16    super-block scale of the sub-block mins
//   offset 4   scales[12]         eight 6-bit scales + eight 6-bit mins (as Q4_K, see k_quants.h)
//   offset 16  qh[32]             5th bits: element 64c + l (l < 32) uses bit 2c of qh[l],
//                                 element 64c + 32 + l uses bit 2c + 1
//   offset 48  qs[128]            low 4 bits, placed as Q4_K's nibbles
//   x = (d * sc) * q - (dmin * m),  q in 0..31
#include <algorithm>

#include "formats/quant/k_quants.h"
#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {
constexpr int kBytes = 176;
constexpr int kSub = 32;
constexpr int kNmax = 31;
}  // namespace

void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kSuperBlock) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + 48;
    for (int c = 0; c < 4; ++c) {
      int sc, m;
      unpack_scale_min(scales, 2 * c, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      unpack_scale_min(scales, 2 * c + 1, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      float* y = dst + 64 * c;
      const uint8_t* q = qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] & 0x0F) | (((qh[l] >> (2 * c)) & 1) << 4);
        y[l] = d1 * static_cast<float>(v) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
        y[l + 32] = d2 * static_cast<float>(v) - m2;
      }
    }
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  uint8_t L[kSuperBlock];
  float weights[kSub];
  float scales[8], mins[8];
  for (int64_t b = 0; b < n_blocks; ++b, src += kSuperBlock, dst += kBytes) {
    // Per sub-block affine fit, weighting each element by (rms of the sub-block + |x|).
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      const float* x = src + kSub * j;
      float sum_x2 = 0.0f;
      for (int l = 0; l < kSub; ++l) sum_x2 += x[l] * x[l];
      const float rms = std::sqrt(sum_x2 / kSub);
      for (int l = 0; l < kSub; ++l) weights[l] = rms + std::fabs(x[l]);
      scales[j] = fit_affine_codes(x, weights, kSub, kNmax, -0.5f, 0.1f, 15, L + kSub * j, &mins[j]);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    // Sub-block scales and mins to 6 bits against two f16 super-scales.
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    int ls[8], lm[8];
    for (int j = 0; j < 8; ++j) {
      ls[j] = std::min(63, nearest_int(inv_scale * scales[j]));
      lm[j] = std::min(63, nearest_int(inv_min * mins[j]));
    }
    uint8_t* packed = dst + 4;
    pack_scales_mins(ls, lm, packed);
    store_f16(dst, max_scale / 63.0f);
    store_f16(dst + 2, max_min / 63.0f);
    // Codes again, against the scales as they will decode.
    const float d = load_f16(dst);
    const float dmin = load_f16(dst + 2);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      unpack_scale_min(packed, j, &sc, &m);
      const float ds = d * sc;
      if (ds == 0.0f) continue;
      const float dm = dmin * m;
      for (int l = 0; l < kSub; ++l) {
        L[kSub * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((src[kSub * j + l] + dm) / ds), 0, kNmax));
      }
    }
    uint8_t* qh = dst + 16;
    uint8_t* qs = dst + 48;
    std::memset(qh, 0, 32);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l];
        const int hi = L[64 * c + 32 + l];
        qs[32 * c + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

}  // namespace saker::quant
