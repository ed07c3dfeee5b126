#include "ops/cpu/act_quant.h"

#include <cmath>
#include <limits>

#include "core/half.h"

namespace saker::cpu {
namespace {

float round_f16(float f) { return fp16_to_fp32(fp32_to_fp16(f)); }

// Codes q = round(x * id) into dst->q, clamped to [-127, 127]; returns sum(q).
int quantize_codes(const float* x, float id, ActBlock* dst) {
  int sum = 0;
  for (int i = 0; i < kActBlock; ++i) {
    // |x * id| <= 127 up to rounding; the clamp keeps a last-ulp overshoot inside int8.
    const float v = std::fmin(std::fmax(std::nearbyint(x[i] * id), -127.0f), 127.0f);
    dst->q[i] = static_cast<int8_t>(v);
    sum += dst->q[i];
  }
  return sum;
}

bool all_finite(const float* x, int64_t n) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) finite &= std::isfinite(x[i]);
  return finite;
}

void set_nan(ActBlock* dst) {
  dst->d = dst->sum = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < kActBlock; ++i) dst->q[i] = 0;
}

}  // namespace

ActQuant act_quant_for(DType w) {
  switch (w) {
    case DType::kQ4_1:
    case DType::kQ5_1:
      return ActQuant::kQ8_1;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return ActQuant::kQ8_K;
    default:
      return ActQuant::kQ8_0;
  }
}

void quantize_act_row(const float* x, ActBlock* dst, int64_t n, ActQuant style) {
  if (style == ActQuant::kQ8_K) {
    constexpr int64_t kSuper = 256, kSub = kSuper / kActBlock;
    for (int64_t s = 0; s < n / kSuper; ++s, x += kSuper, dst += kSub) {
      if (!all_finite(x, kSuper)) {
        for (int64_t b = 0; b < kSub; ++b) set_nan(dst + b);
        continue;
      }
      float amax = 0.0f, max = 0.0f;  // the value of largest magnitude, first one on ties
      for (int64_t i = 0; i < kSuper; ++i) {
        if (std::fabs(x[i]) > amax) {
          amax = std::fabs(x[i]);
          max = x[i];
        }
      }
      const float iscale = amax > 0.0f ? -127.0f / max : 0.0f;
      const float d = amax > 0.0f ? 1.0f / iscale : 0.0f;
      for (int64_t b = 0; b < kSub; ++b) {
        const int sum = quantize_codes(x + b * kActBlock, iscale, dst + b);
        dst[b].d = d;
        dst[b].sum = d * static_cast<float>(sum);
      }
    }
    return;
  }
  for (int64_t b = 0; b < n / kActBlock; ++b, x += kActBlock, ++dst) {
    if (!all_finite(x, kActBlock)) {
      set_nan(dst);
      continue;
    }
    float amax = 0.0f;
    for (int i = 0; i < kActBlock; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const int sum = quantize_codes(x, amax > 0.0f ? 127.0f / amax : 0.0f, dst);
    dst->d = round_f16(d);
    dst->sum = style == ActQuant::kQ8_1 ? round_f16(d * static_cast<float>(sum)) : dst->d * static_cast<float>(sum);
  }
}

}  // namespace saker::cpu
