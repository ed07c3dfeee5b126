#include "ops/cpu/act_quant.h"

#include <cmath>
#include <limits>

namespace saker::cpu {

void quantize_act_row(const float* x, ActBlock* dst, int64_t n) {
  for (int64_t b = 0; b < n / kActBlock; ++b, x += kActBlock, ++dst) {
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < kActBlock; ++i) {
      finite &= std::isfinite(x[i]);
      amax = std::fmax(amax, std::fabs(x[i]));
    }
    if (!finite) {
      dst->d = dst->sum = std::numeric_limits<float>::quiet_NaN();
      for (int i = 0; i < kActBlock; ++i) dst->q[i] = 0;
      continue;
    }
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int i = 0; i < kActBlock; ++i) {
      // |x * id| <= 127 up to rounding; the clamp keeps a last-ulp overshoot inside int8.
      const float v = std::fmin(std::fmax(std::nearbyint(x[i] * id), -127.0f), 127.0f);
      dst->q[i] = static_cast<int8_t>(v);
      sum += dst->q[i];
    }
    dst->d = d;
    dst->sum = d * static_cast<float>(sum);
  }
}

}  // namespace saker::cpu
