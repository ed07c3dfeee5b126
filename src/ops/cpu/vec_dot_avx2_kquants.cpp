// AVX2 dot-product kernels for the 256-element super-block formats: Q4_K, Q5_K, Q6_K, IQ4_XS (see vec_dot.h
// and avx2_util.h). Activation block j of a super-block lines up with the weights' 32-element sub-block j.
#if defined(__x86_64__) || defined(_M_X64)

#include "ops/cpu/avx2_util.h"

namespace saker::cpu::avx2 {

namespace {

// The eight 6-bit (scale, min) pairs of Q4_K / Q5_K (docs/formats: Quant blocks).
inline void unpack_scales_mins(const uint8_t* s, int* sc, int* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    m[j] = s[j + 4] & 63;
    sc[j + 4] = (s[j + 8] & 0x0F) | ((s[j] >> 6) << 4);
    m[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
  }
}

// Q4_K / Q5_K share everything but the fifth bit. Chunk c (64 elements) reads qs[32c .. 32c + 31]: low
// nibbles are sub-block 2c, high nibbles sub-block 2c + 1; Q5_K's qh byte l carries their fifth bits at
// bits 2c and 2c + 1. The mins term, dmin * m_j * sum(x over sub-block j), uses the activation blocks' sums.
template <bool kFiveBit, int R>
SAKER_AVX2 inline void dot_k_affine_rows(const void* wv, const ActBlock* const* x, int64_t n, float* out) {
  constexpr int kBytes = kFiveBit ? 176 : 144;
  const auto* w = static_cast<const uint8_t*>(wv);
  const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  __m256 acc[R];
  float mins[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    mins[r] = 0.0f;
  }
  for (int64_t b = 0; b < n / 256; ++b, w += kBytes) {
    const float d = load_f16(w), dmin = load_f16(w + 2);
    int sc[8], m[8];
    unpack_scales_mins(w + 4, sc, m);
    for (int r = 0; r < R; ++r) {
      const ActBlock* xb = x[r] + 8 * b;
      float block_mins = 0.0f;
      for (int j = 0; j < 8; ++j) block_mins += static_cast<float>(m[j]) * xb[j].sum;
      mins[r] += dmin * block_mins;
    }
    const uint8_t* qs = w + (kFiveBit ? 48 : 16);
    const __m256i qh = kFiveBit ? load256(w + 16) : _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load256(qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kFiveBit) {
        // Bit 2c (2c + 1) of each qh byte moved to bit 4: shift right within 16-bit lanes, keep bit 0 of
        // each byte, shift it up by 4 (no bit crosses a byte boundary).
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
      }
      const float d_lo = d * static_cast<float>(sc[2 * c]), d_hi = d * static_cast<float>(sc[2 * c + 1]);
      for (int r = 0; r < R; ++r) {
        const ActBlock& x_lo = x[r][8 * b + 2 * c];
        const ActBlock& x_hi = x[r][8 * b + 2 * c + 1];
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d_lo * x_lo.d), _mm256_cvtepi32_ps(dot_u8_s8(lo, load256(x_lo.q))), acc[r]);
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d_hi * x_hi.d), _mm256_cvtepi32_ps(dot_u8_s8(hi, load256(x_hi.q))), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]) - mins[r];
}

// Q6_K: ql[128], qh[64], int8 scales[16], d f16. Half h (128 elements) reads ql[64h ..], qh[32h ..]; group g
// (32 elements, act block 4h + g) takes its low 4 bits from ql[l] (g = 0, 2: low / high nibble) or
// ql[l + 32] (g = 1, 3) and its high 2 bits from qh[l] >> 2g; q = code - 32. Each group spans two
// sub-blocks of 16 with their own scales, applied in 16-bit lanes by _mm256_madd_epi16.
template <int R>
SAKER_AVX2 inline void dot_q6_k_rows(const void* wv, const ActBlock* const* x, int64_t n, float* out) {
  const auto* w = static_cast<const uint8_t*>(wv);
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b, w += 210) {
    const float d = load_f16(w + 208);
    const auto* scales = reinterpret_cast<const int8_t*>(w + 192);
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(w + 64 * h), ql1 = load256(w + 64 * h + 32);
      const __m256i qh = load256(w + 128 + 32 * h);
      const __m256i low[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                              _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                              _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
      for (int g = 0; g < 4; ++g) {
        const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), low2), 4);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low[g], high), bias);
        const __m256i q_abs = _mm256_sign_epi8(q, q);
        // s16 lanes 0..7 hold elements 0..15 (one sub-block), lanes 8..15 elements 16..31 (the next).
        const int s = 8 * h + 2 * g;
        const __m256i sc = _mm256_set_m128i(_mm_set1_epi16(scales[s + 1]), _mm_set1_epi16(scales[s]));
        for (int r = 0; r < R; ++r) {
          const ActBlock& xb = x[r][8 * b + 4 * h + g];
          const __m256i p16 = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(load256(xb.q), q));
          const __m256i p = _mm256_madd_epi16(p16, sc);
          acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb.d), _mm256_cvtepi32_ps(p), acc[r]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// IQ4_XS: d f16, scales_h u16, scales_l[4], qs[128]; sub-block ib (32 elements) is laid out like an IQ4_NL
// block in qs[16ib ..] with the 6-bit scale ls - 32.
template <int R>
SAKER_AVX2 inline void dot_iq4_xs_rows(const void* wv, const ActBlock* const* x, int64_t n, float* out) {
  const auto* w = static_cast<const uint8_t*>(wv);
  const __m256i table = iq4_table();
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b, w += 136) {
    const float d = load_f16(w);
    uint16_t scales_h;
    std::memcpy(&scales_h, w + 2, 2);
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((w[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
      const float d_sub = d * static_cast<float>(ls - 32);
      const __m256i v = _mm256_shuffle_epi8(table, unpack_nibbles16(w + 8 + 16 * ib));
      const __m256i v_abs = _mm256_sign_epi8(v, v);
      for (int r = 0; r < R; ++r) {
        const ActBlock& xb = x[r][8 * b + ib];
        const __m256i p = dot_u8_s8(v_abs, _mm256_sign_epi8(load256(xb.q), v));
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d_sub * xb.d), _mm256_cvtepi32_ps(p), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

}  // namespace

SAKER_AVX2 void dot_q4_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_k_affine_rows, false,)
}

SAKER_AVX2 void dot_q5_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_k_affine_rows, true,)
}

SAKER_AVX2 void dot_q6_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_q6_k_rows, )
}

SAKER_AVX2 void dot_iq4_xs(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_iq4_xs_rows, )
}

}  // namespace saker::cpu::avx2

#endif
