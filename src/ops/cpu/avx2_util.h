#pragma once
// Helpers shared by the AVX2 kernel files (vec_dot_avx2*.cpp); x86-64 only. Not a public interface.
// Every function carries SAKER_AVX2: it is compiled for AVX2 + FMA + F16C whatever the baseline, and
// reached only after the runtime check in have_avx2().
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/vec_dot.h"

#define SAKER_AVX2 __attribute__((target("avx2,fma,f16c")))

// n_rows (1..4) -> the kernel template instantiated for that many rows; the arguments before the row
// count come first in the template list.
#define SAKER_DISPATCH_ROWS(kernel, ...)                  \
  switch (n_rows) {                                       \
    case 1: kernel<__VA_ARGS__ 1>(w, x, n, out); break;   \
    case 2: kernel<__VA_ARGS__ 2>(w, x, n, out); break;   \
    case 3: kernel<__VA_ARGS__ 3>(w, x, n, out); break;   \
    default: kernel<__VA_ARGS__ 4>(w, x, n, out); break;  \
  }

namespace saker::cpu::avx2 {

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

// Weight rows stream from memory once per step; the kernels ask for the cache lines of the block kPrefetchBytes
// ahead of the one they decode. On the 2-core x86 VM of the CPU figures in docs/performance.md the hardware
// prefetcher alone held one core's Q4_K stream at 4.4 GB/s (Q8_0 at 7.4); with this, about 9 GB/s. Prefetches
// past the end of the matrix are harmless (they never fault).
inline constexpr int kPrefetchBytes = 1536;
template <int kBlockBytes>
SAKER_AVX2 inline void prefetch_weights(const void* block) {
  const char* p = static_cast<const char*>(block) + kPrefetchBytes;
  for (int o = 0; o < kBlockBytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
}

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

// The super-block kernels (vec_dot_avx2_kquants.cpp).
void dot_q4_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out);
void dot_q5_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out);
void dot_q6_k(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out);
void dot_iq4_xs(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out);

}  // namespace saker::cpu::avx2
