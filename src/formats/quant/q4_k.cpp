// Q4_K: blocks of 256 elements, 144 bytes; eight sub-blocks of 32 with a 6-bit scale and 6-bit min each.
//
//   offset 0   d           f16    super-block scale of the sub-block scales
//   offset 2   dmin        f16    super-block scale of the sub-block mins
//   offset 4   scales[12]         eight 6-bit scales + eight 6-bit mins (see k_quants.h)
//   offset 16  qs[128]            4-bit codes
// Each 64-element chunk c uses qs[32c .. 32c + 31]: low nibbles are elements 64c .. 64c + 31 (sub-block 2c),
// high nibbles elements 64c + 32 .. 64c + 63 (sub-block 2c + 1).
//   x = (d * sc) * q - (dmin * m)
#include <algorithm>

#include "formats/quant/k_quants.h"
#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {
constexpr int kBytes = 144;
constexpr int kSub = 32;
constexpr int kNmax = 15;
}  // namespace

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, src += kBytes, dst += kSuperBlock) {
    const uint8_t* qs = src + 16;
    for (int c = 0; c < 4; ++c) {
      const ChunkScales s = chunk_scales(src, c);
      float* y = dst + 64 * c;
      const uint8_t* q = qs + 32 * c;
      for (int l = 0; l < 32; ++l) y[l] = s.d1 * static_cast<float>(q[l] & 0x0F) - s.m1;
      for (int l = 0; l < 32; ++l) y[l + 32] = s.d2 * static_cast<float>(q[l] >> 4) - s.m2;
    }
  }
}

void quantize_q4_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  uint8_t L[kSuperBlock];
  for (int64_t b = 0; b < n_blocks; ++b, src += kSuperBlock, dst += kBytes) {
    quantize_k_affine_superblock(src, kNmax, -1.0f, 0.1f, 20, dst, L);
    uint8_t* qs = dst + 16;
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
  }
}

}  // namespace saker::quant
