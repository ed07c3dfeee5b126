// AVX2 dot-product kernels for the 256-element super-block formats: Q4_K, Q5_K, Q6_K, IQ4_XS (see vec_dot.h
// and avx2_util.h). Activation block j of a super-block lines up with the weights' 32-element sub-block j.
#if defined(__x86_64__) || defined(_M_X64)

#include "ops/cpu/avx2_util.h"

namespace saker::cpu::avx2 {

namespace {

// The eight 6-bit scales and mins of Q4_K / Q5_K (docs/formats: Quant blocks), byte-parallel in 32-bit words:
// bytes 0-3 hold the low six bits of scales 0-3, bytes 4-7 of mins 0-3; bytes 8-11 the low four bits of
// scales (low nibble) and mins (high nibble) 4-7, whose top two bits are the top bits of bytes 0-3 / 4-7.
// Returns scales 0-7 in bytes 0-7, mins 0-7 in bytes 8-15.
SAKER_AVX2 inline __m128i unpack_scales_mins(const uint8_t* s) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  constexpr uint32_t k6 = 0x3F3F3F3F, k4 = 0x0F0F0F0F, k2 = 0x03030303;
  const uint32_t sc_lo = a & k6, m_lo = b & k6;
  const uint32_t sc_hi = (c & k4) | (((a >> 6) & k2) << 4);
  const uint32_t m_hi = ((c >> 4) & k4) | (((b >> 6) & k2) << 4);
  return _mm_set_epi32(static_cast<int>(m_hi), static_cast<int>(m_lo), static_cast<int>(sc_hi),
                       static_cast<int>(sc_lo));
}

// Shuffle masks that spread 16-bit lane j of a 128-bit vector (broadcast to both halves) over all 16 lanes.
SAKER_AVX2 inline __m256i lane16_spread(int j) {
  return _mm256_set1_epi16(static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8)));
}

// acc[r] += d * d_x * isum[r] for super-block b: the super-block kernels' one int-to-float step, where isum[r]
// is row r's exact integer sum over the super-block and d_x its one activation scale (kQ8_K: the eight
// activation blocks of a super-block share it).
template <int R>
SAKER_AVX2 inline void add_super_block(__m256 (&acc)[R], const __m256i (&isum)[R], float d, const ActBlock* const* x,
                                       int64_t b) {
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * x[r][8 * b].d), _mm256_cvtepi32_ps(isum[r]), acc[r]);
  }
}

// Q4_K / Q5_K share everything but the fifth bit. Chunk c (64 elements) reads qs[32c .. 32c + 31]: low
// nibbles are sub-block 2c, high nibbles sub-block 2c + 1; Q5_K's qh byte l carries their fifth bits at
// bits 2c and 2c + 1. The activations are quantised per 256 values (one scale for the super-block, ActQuant
// kQ8_K), so sum_j sc_j * (codes . q over sub-block j) is one exact integer sum per super-block: one int-to-
// float conversion and one multiply by d * d_x a super-block, as ggml's CPU backend computes it. The mins term,
// dmin * sum_j m_j * sum(x over sub-block j), uses the activation blocks' sums.
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
    prefetch_weights<kBytes>(w);
    const float d = load_f16(w), dmin = load_f16(w + 2);
    const __m128i sm = unpack_scales_mins(w + 4);
    // Scales as 16-bit lanes in both halves, for _mm256_madd_epi16; mins as floats times dmin.
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    alignas(32) float m[8];
    _mm256_store_ps(
        m, _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)))));
    for (int r = 0; r < R; ++r) {
      const ActBlock* xb = x[r] + 8 * b;
      float m_even = 0.0f, m_odd = 0.0f;  // two independent chains, in a fixed order (the same for every R)
      for (int j = 0; j < 8; j += 2) {
        m_even += m[j] * xb[j].sum;
        m_odd += m[j + 1] * xb[j + 1].sum;
      }
      mins[r] += m_even + m_odd;
    }
    const uint8_t* qs = w + (kFiveBit ? 48 : 16);
    const __m256i qh = kFiveBit ? load256(w + 16) : _mm256_setzero_si256();
    __m256i isum[R];
    for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
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
      const __m256i sc_lo = _mm256_shuffle_epi8(sc16, lane16_spread(2 * c));
      const __m256i sc_hi = _mm256_shuffle_epi8(sc16, lane16_spread(2 * c + 1));
      for (int r = 0; r < R; ++r) {
        const ActBlock* xb = x[r] + 8 * b + 2 * c;
        // |code * q| pairs <= 2 * 31 * 127 fit int16; times a scale <= 63, eight sub-blocks: < 2^24.
        const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(xb[0].q)), sc_lo);
        const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(xb[1].q)), sc_hi);
        isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(p_lo, p_hi));
      }
    }
    add_super_block<R>(acc, isum, d, x, b);
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
    prefetch_weights<210>(w);
    const float d = load_f16(w + 208);
    const auto* scales = reinterpret_cast<const int8_t*>(w + 192);
    __m256i isum[R];  // one exact integer sum a super-block (one activation scale for all of it, kQ8_K)
    for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
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
          // |code| <= 32 times |q| <= 127, pairs: < 2^13; times |scale| <= 128, pairs, eight groups: < 2^25.
          const __m256i p16 = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(load256(xb.q), q));
          isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p16, sc));
        }
      }
    }
    add_super_block<R>(acc, isum, d, x, b);
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
    prefetch_weights<136>(w);
    const float d = load_f16(w);
    uint16_t scales_h;
    std::memcpy(&scales_h, w + 2, 2);
    __m256i isum[R];  // one exact integer sum a super-block (one activation scale for all of it, kQ8_K)
    for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((w[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
      const __m256i sc = _mm256_set1_epi16(static_cast<int16_t>(ls - 32));
      const __m256i v = _mm256_shuffle_epi8(table, unpack_nibbles16(w + 8 + 16 * ib));
      const __m256i v_abs = _mm256_sign_epi8(v, v);
      for (int r = 0; r < R; ++r) {
        const ActBlock& xb = x[r][8 * b + ib];
        // |level * q| pairs <= 2 * 127 * 127 fit int16; times |ls - 32| <= 32, pairs, eight sub-blocks: < 2^25.
        const __m256i p16 = _mm256_maddubs_epi16(v_abs, _mm256_sign_epi8(load256(xb.q), v));
        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p16, sc));
      }
    }
    add_super_block<R>(acc, isum, d, x, b);
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
