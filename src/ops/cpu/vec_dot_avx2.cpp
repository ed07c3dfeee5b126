// AVX2 + FMA + F16C dot-product kernels (see vec_dot.h) for the float formats and the 32-element block
// formats, the runtime CPU check, and the dtype -> kernel tables. The super-block formats (K-quants,
// IQ4_XS) are in vec_dot_avx2_kquants.cpp.
//
// Integer products use _mm256_maddubs_epi16 (u8 x s8 -> pairs summed to s16). Signed weight codes go
// through the sign trick: |w| * (x with w's sign) = w * x, with |w| <= 128 and |x| <= 127, so a pair sum
// stays below 2 * 128 * 127 = 32512 and never saturates.
#include "ops/cpu/vec_dot.h"

#if defined(__x86_64__) || defined(_M_X64)
#define SAKER_X86 1
#include <cpuid.h>

#include "ops/cpu/avx2_util.h"
#endif

namespace saker::cpu {

#if SAKER_X86

namespace avx2 {
namespace {

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
  constexpr int kElementBytes = kFormat == 0 ? 4 : 2;
  for (; i + 16 <= n; i += 16) {
    prefetch_weights<16 * kElementBytes>(static_cast<const char*>(w) + kElementBytes * i);
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
    prefetch_weights<L::kBytes>(w);
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

}  // namespace
}  // namespace avx2

namespace {

// CPUID: leaf 1 for FMA, F16C, AVX and OS-managed extended state; XCR0 for the OS saving YMM registers;
// leaf 7 for AVX2. (Read directly: not every compiler's __builtin_cpu_supports knows "f16c".)
bool detect_avx2() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!(fma && osxsave && avx && f16c)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return false;  // XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return b & (1u << 5);
}

}  // namespace

bool have_avx2() {
  static const bool kHave = detect_avx2();
  return kHave;
}

FloatDotFn avx2_float_dot(DType type) {
  switch (type) {
    case DType::kF32: return avx2::dot_f32;
    case DType::kF16: return avx2::dot_f16;
    case DType::kBF16: return avx2::dot_bf16;
    default: return nullptr;
  }
}

QuantDotFn avx2_quant_dot(DType type) {
  switch (type) {
    case DType::kQ8_0: return avx2::dot_block32<avx2::kQ8_0>;
    case DType::kQ4_0: return avx2::dot_block32<avx2::kQ4_0>;
    case DType::kIQ4_NL: return avx2::dot_block32<avx2::kIQ4_NL>;
    case DType::kQ4_1: return avx2::dot_block32<avx2::kQ4_1>;
    case DType::kQ5_0: return avx2::dot_block32<avx2::kQ5_0>;
    case DType::kQ5_1: return avx2::dot_block32<avx2::kQ5_1>;
    case DType::kQ4_K: return avx2::dot_q4_k;
    case DType::kQ5_K: return avx2::dot_q5_k;
    case DType::kQ6_K: return avx2::dot_q6_k;
    case DType::kIQ4_XS: return avx2::dot_iq4_xs;
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