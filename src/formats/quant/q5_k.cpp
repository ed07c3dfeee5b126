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
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + 48;
    for (int c = 0; c < 4; ++c) {
      const ChunkScales s = chunk_scales(src, c);
      float* y = dst + 64 * c;
      const uint8_t* q = qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] & 0x0F) | (((qh[l] >> (2 * c)) & 1) << 4);
        y[l] = s.d1 * static_cast<float>(v) - s.m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
        y[l + 32] = s.d2 * static_cast<float>(v) - s.m2;
      }
    }
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, int64_t n_blocks) {
  uint8_t L[kSuperBlock];
  for (int64_t b = 0; b < n_blocks; ++b, src += kSuperBlock, dst += kBytes) {
    quantize_k_affine_superblock(src, kNmax, -0.5f, 0.1f, 15, dst, L);
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
