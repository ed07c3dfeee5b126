// AVX2 + FMA + F16C dot-product kernels (see vec_dot.h). Every function that uses the instructions carries
// SAKER_AVX2, so the rest of the library is compiled for the baseline and these are reached only through
// the runtime check in have_avx2().
//
// Integer products use _mm256_maddubs_epi16 (u8 x s8 -> pairs summed to s16). Signed weight codes go
// through the sign trick: |w| * (x with w's sign) = w * x, with |w| <= 128 and |x| <= 127, so a pair sum
// stays below 2 * 128 * 127 = 32512 and never saturates.
#include "ops/cpu/vec_dot.h"

#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#define SAKER_X86 1
#include <immintrin.h>
#endif

namespace saker::cpu {

#if SAKER_X86

#define SAKER_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace {

SAKER_AVX2 inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

SAKER_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

SAKER_AVX2 inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// sum over pairs of u8 * s8 -> eight s32 lanes (lane k: elements 4k .. 4k + 3).
SAKER_AVX2 inline __m256i dot_u8_s8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// 16 packed bytes -> 32 nibbles: element j is the low nibble of byte j, element j + 16 the high nibble
// (the layout of Q4_0 and IQ4_NL blocks and IQ4_XS sub-blocks).
SAKER_AVX2 inline __m256i unpack_nibbles16(const uint8_t* p) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i mask = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), mask), _mm_and_si128(q, mask));
}

// The 16 levels of IQ4_NL / IQ4_XS, as a byte shuffle table in both 128-bit lanes.
SAKER_AVX2 inline __m256i iq4_table() {
  static const int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kValues)));
}

// ---- float weights ----
// Two accumulator chains per row over 16 elements a step, then 8, then a scalar tail.

template <int kFormat>  // 0: f32, 1: f16, 2: bf16
SAKER_AVX2 inline __m256 load8_weight(const void* w, int64_t i) {
  if constexpr (kFormat == 0) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
    if constexpr (kFormat == 1) {
      return _mm256_cvtph_ps(h);
    } else {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
}

template <int kFormat>
SAKER_AVX2 inline float load1_weight(const void* w, int64_t i) {
  if constexpr (kFormat == 0) {
    return static_cast<const float*>(w)[i];
  } else if constexpr (kFormat == 1) {
    return _cvtsh_ss(static_cast<const uint16_t*>(w)[i]);
  } else {
    const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(w)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
}

template <int kFormat, int R>
SAKER_AVX2 inline void dot_float_rows(const void* w, const float* const* x, int64_t n, float* out) {
  __m256 a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = load8_weight<kFormat>(w, i), w1 = load8_weight<kFormat>(w, i + 8);
    for (int r = 0; r < R; ++r) {
      a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[r] + i), a0[r]);
      a1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[r] + i + 8), a1[r]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 w0 = load8_weight<kFormat>(w, i);
    for (int r = 0; r < R; ++r) a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[r] + i), a0[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(_mm256_add_ps(a0[r], a1[r]));
  for (; i < n; ++i) {
    const float wi = load1_weight<kFormat>(w, i);
    for (int r = 0; r < R; ++r) out[r] += wi * x[r][i];
  }
}

// n_rows (1..4) -> the kernel instantiated for that many rows.
#define SAKER_DISPATCH_ROWS(kernel, ...)   \
  switch (n_rows) {                        \
    case 1: kernel<__VA_ARGS__ 1>(w, x, n, out); break; \
    case 2: kernel<__VA_ARGS__ 2>(w, x, n, out); break; \
    case 3: kernel<__VA_ARGS__ 3>(w, x, n, out); break; \
    default: kernel<__VA_ARGS__ 4>(w, x, n, out); break; \
  }

SAKER_AVX2 void dot_f32(const void* w, const float* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_float_rows, 0,)
}
SAKER_AVX2 void dot_f16(const void* w, const float* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_float_rows, 1,)
}
SAKER_AVX2 void dot_bf16(const void* w, const float* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_float_rows, 2,)
}

// ---- 32-element blocks: Q8_0, Q4_0, IQ4_NL, Q4_1, Q5_0, Q5_1 ----

enum Block32 { kQ8_0, kQ4_0, kIQ4_NL, kQ4_1, kQ5_0, kQ5_1 };

template <int kFormat>
struct Block32Layout {
  static constexpr int kBytes = kFormat == kQ8_0 ? 34 : kFormat == kQ4_1 ? 20 : kFormat == kQ5_0 ? 22 : kFormat == kQ5_1 ? 24 : 18;
  static constexpr bool kAffine = kFormat == kQ4_1 || kFormat == kQ5_1;  // x = d * q + m, q unsigned
  static constexpr int kQh = kFormat == kQ5_0 ? 2 : 4;                     // offset of Q5's u32 of fifth bits
  static constexpr int kQs = kFormat == kQ4_1 ? 4 : kFormat == kQ5_0 ? 6 : kFormat == kQ5_1 ? 8 : 2;
};

// Bit i of a little-endian u32 -> 0x10 in byte i (the fifth bit of Q5_0 / Q5_1 element i).
SAKER_AVX2 inline __m256i expand_fifth_bits(const uint8_t* p) {
  uint32_t qh;
  std::memcpy(&qh, p, 4);
  const __m256i bytes = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(qh)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
}

// The 32 codes of a block as int8: signed values for the symmetric formats, unsigned for the affine ones.
template <int kFormat>
SAKER_AVX2 inline __m256i load_block32_codes(const uint8_t* w, __m256i table) {
  using L = Block32Layout<kFormat>;
  if constexpr (kFormat == kQ8_0) {
    return load256(w + 2);
  } else if constexpr (kFormat == kIQ4_NL) {
    return _mm256_shuffle_epi8(table, unpack_nibbles16(w + L::kQs));  // x = d * level[q]
  } else if constexpr (kFormat == kQ4_0) {
    return _mm256_sub_epi8(unpack_nibbles16(w + L::kQs), _mm256_set1_epi8(8));  // x = d * (q - 8)
  } else if constexpr (kFormat == kQ4_1) {
    return unpack_nibbles16(w + L::kQs);
  } else {
    const __m256i q = _mm256_or_si256(unpack_nibbles16(w + L::kQs), expand_fifth_bits(w + L::kQh));
    if constexpr (kFormat == kQ5_0) return _mm256_sub_epi8(q, _mm256_set1_epi8(16));  // x = d * (q - 16)
    return q;
  }
}

template <int kFormat, int R>
SAKER_AVX2 inline void dot_block32_rows(const void* wv, const ActBlock* const* x, int64_t n, float* out) {
  using L = Block32Layout<kFormat>;
  const auto* w = static_cast<const uint8_t*>(wv);
  const __m256i table = iq4_table();
  __m256 acc[R];
  float offsets[R];  // affine formats: sum over blocks of m * sum(x)
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    offsets[r] = 0.0f;
  }
  for (int64_t b = 0; b < n / 32; ++b, w += L::kBytes) {
    const __m256i q = load_block32_codes<kFormat>(w, table);
    const float d = load_f16(w);
    if constexpr (L::kAffine) {
      const float m = load_f16(w + 2);
      for (int r = 0; r < R; ++r) {
        const ActBlock& xb = x[r][b];
        const __m256i p = dot_u8_s8(q, load256(xb.q));
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb.d), _mm256_cvtepi32_ps(p), acc[r]);
        offsets[r] += m * xb.sum;
      }
    } else {
      const __m256i q_abs = _mm256_sign_epi8(q, q);
      for (int r = 0; r < R; ++r) {
        const ActBlock& xb = x[r][b];
        const __m256i p = dot_u8_s8(q_abs, _mm256_sign_epi8(load256(xb.q), q));
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb.d), _mm256_cvtepi32_ps(p), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]) + offsets[r];
}

template <int kFormat>
SAKER_AVX2 void dot_block32(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_block32_rows, kFormat,)
}

// ---- 256-element super-blocks ----

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

SAKER_AVX2 void dot_q4_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_k_affine_rows, false,)
}
SAKER_AVX2 void dot_q5_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_k_affine_rows, true,)
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

SAKER_AVX2 void dot_q6_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_q6_k_rows, )
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

SAKER_AVX2 void dot_iq4_xs(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out) {
  SAKER_DISPATCH_ROWS(dot_iq4_xs_rows, )
}

}  // namespace

bool have_avx2() {
  static const bool kHave = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                            __builtin_cpu_supports("f16c");
  return kHave;
}

FloatDotFn avx2_float_dot(DType type) {
  switch (type) {
    case DType::kF32: return dot_f32;
    case DType::kF16: return dot_f16;
    case DType::kBF16: return dot_bf16;
    default: return nullptr;
  }
}

QuantDotFn avx2_quant_dot(DType type) {
  switch (type) {
    case DType::kQ8_0: return dot_block32<kQ8_0>;
    case DType::kQ4_0: return dot_block32<kQ4_0>;
    case DType::kIQ4_NL: return dot_block32<kIQ4_NL>;
    case DType::kQ4_1: return dot_block32<kQ4_1>;
    case DType::kQ5_0: return dot_block32<kQ5_0>;
    case DType::kQ5_1: return dot_block32<kQ5_1>;
    case DType::kQ4_K: return dot_q4_k;
    case DType::kQ5_K: return dot_q5_k;
    case DType::kQ6_K: return dot_q6_k;
    case DType::kIQ4_XS: return dot_iq4_xs;
    default: return nullptr;
  }
}

#else  // not x86-64: no SIMD kernels yet, the generic path serves every dtype

bool have_avx2() { return false; }
FloatDotFn avx2_float_dot(DType) { return nullptr; }
QuantDotFn avx2_quant_dot(DType) { return nullptr; }

#endif

float dot_f32_generic(const float* w, const float* x, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += w[i + j] * x[i + j];
  }
  for (; i < n; ++i) acc[0] += w[i] * x[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace saker::cpu
