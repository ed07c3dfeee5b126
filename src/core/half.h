#pragma once
// IEEE half and bfloat16 <-> float conversions (round to nearest even), usable on any host compiler.
#include <cstdint>
#include <cstring>

namespace saker {

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    // Subnormal: value = mant * 2^-24.
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_float(sign | 0x7F800000 | (mant << 13));
  return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = float_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs >= 0x7F800000) return static_cast<uint16_t>(sign | 0x7C00 | (abs > 0x7F800000 ? 0x200 : 0));  // inf/nan
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past 65504: inf
  if (abs < 0x38800000) {
    // Result is subnormal (or zero): round abs * 2^24 to an integer, ties to even.
    const float v = bits_to_float(abs) * 16777216.0f;
    uint32_t m = static_cast<uint32_t>(v);
    const float rem = v - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: rebias the exponent and round the mantissa from 23 to 10 bits, ties to even.
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_fp32(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  uint32_t x = float_to_bits(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace saker
