#include "ops/cpu/convert.h"

#include <cstring>

#include "core/half.h"
#include "formats/quant/codec.h"
#include "ops/cpu/vec_dot.h"

#if defined(__x86_64__) || defined(_M_X64)
#define SAKER_X86 1
#include <immintrin.h>
#endif

namespace saker::cpu {

namespace {

#if SAKER_X86
// Every f16 and bf16 value is an f32 value: the conversions are exact.
__attribute__((target("avx2,f16c"))) void f16_to_f32_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx2"))) void bf16_to_f32_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(wide, 16));
  }
  for (; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
}
#endif

}  // namespace

void to_f32_row(DType type, const void* src, float* dst, int64_t n, bool simd) {
#if SAKER_X86
  if (simd && have_avx2()) {
    if (type == DType::kF16) return f16_to_f32_avx2(static_cast<const uint16_t*>(src), dst, n);
    if (type == DType::kBF16) return bf16_to_f32_avx2(static_cast<const uint16_t*>(src), dst, n);
  }
#endif
  if (type == DType::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  (void)dequantize_row(type, src, dst, n);
}

}  // namespace saker::cpu
