// Scale/min searches for the K-quants. The approach (a small grid over the inverse scale, each point
// refined by a weighted least-squares fit, best weighted error wins) is the one llama.cpp's reference
// quantiser uses; matching its arithmetic keeps saker's files close to the ones users already have.
#include "formats/quant/k_quants.h"

#include <algorithm>
#include <cmath>

#include "formats/quant/quant_internal.h"

namespace saker::quant {
namespace {

constexpr float kGroupEps = 1e-15f;  // below this magnitude a group is treated as all zero

// Codes for x under inverse scale `iscale` and minimum `lo`, clamped to [0, nmax].
void affine_codes(const float* x, int n, int nmax, float iscale, float lo, uint8_t* L) {
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax));
}

float weighted_error(const float* x, const float* w, int n, const uint8_t* L, float scale, float lo) {
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float diff = scale * L[i] + lo - x[i];
    err += w[i] * (diff * diff);
  }
  return err;
}

}  // namespace

ChunkScales chunk_scales(const uint8_t* block, int c) {
  const float d = load_f16(block);
  const float dmin = load_f16(block + 2);
  ChunkScales s;
  int sc, m;
  unpack_scale_min(block + 4, 2 * c, &sc, &m);
  s.d1 = d * static_cast<float>(sc);
  s.m1 = dmin * static_cast<float>(m);
  unpack_scale_min(block + 4, 2 * c + 1, &sc, &m);
  s.d2 = d * static_cast<float>(sc);
  s.m2 = dmin * static_cast<float>(m);
  return s;
}

void pack_scales_mins(const int* sc, const int* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

float fit_affine_codes(const float* x, const float* w, int n, int nmax, float rmin, float rdelta, int nstep,
                       uint8_t* L, float* offset) {
  float lo = x[0];
  float hi = x[0];
  float sum_w = w[0];
  float sum_wx = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_wx += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (!(hi > lo)) {  // constant group (or NaN): everything decodes to lo
    std::fill(L, L + n, 0);
    *offset = -lo;
    return 0.0f;
  }
  // Starting point: the range mapped onto [0, nmax].
  float iscale = nmax / (hi - lo);
  float scale = 1.0f / iscale;
  affine_codes(x, n, nmax, iscale, lo, L);
  float best = weighted_error(x, w, n, L, scale, lo);

  uint8_t trial[kSuperBlock];
  for (int k = 0; k <= nstep; ++k) {
    iscale = (rmin + rdelta * k + nmax) / (hi - lo);
    affine_codes(x, n, nmax, iscale, lo, trial);
    // Weighted least squares for x ~ a * l + b over this assignment.
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float wl = w[i] * trial[i];
      sum_l += wl;
      sum_l2 += wl * trial[i];
      sum_xl += wl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float a = (sum_w * sum_xl - sum_wx * sum_l) / det;
    float b = (sum_l2 * sum_wx - sum_l * sum_xl) / det;
    if (b > 0.0f) {  // the decoded minimum may not be positive: refit the scale alone
      b = 0.0f;
      a = sum_xl / sum_l2;
    }
    const float err = weighted_error(x, w, n, trial, a, b);
    if (err < best) {
      best = err;
      std::copy(trial, trial + n, L);
      scale = a;
      lo = b;
    }
  }
  *offset = -lo;
  return scale;
}

float fit_symmetric_codes(const float* x, int n, int nmax, uint8_t* L) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (!(amax >= kGroupEps)) {
    std::fill(L, L + n, static_cast<uint8_t>(nmax));
    return 0.0f;
  }
  // For one trial inverse scale: codes, sum w*x*l and sum w*l*l with w = x^2.
  auto evaluate = [&](float iscale, float* sum_lx, float* sum_l2, uint8_t* codes) {
    *sum_lx = 0.0f;
    *sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      if (codes) codes[i] = static_cast<uint8_t>(l + nmax);
      const float w = x[i] * x[i];
      *sum_lx += w * x[i] * l;
      *sum_l2 += w * l * l;
    }
  };
  float sum_lx, sum_l2;
  evaluate(-nmax / max, &sum_lx, &sum_l2, L);
  float scale = sum_l2 != 0.0f ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;  // the error reduction sum_lx^2 / sum_l2 of the best scale for these codes
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    const float iscale = -(nmax + 0.1f * k) / max;
    evaluate(iscale, &sum_lx, &sum_l2, nullptr);
    if (sum_l2 > 0.0f && sum_lx * sum_lx > best * sum_l2) {
      evaluate(iscale, &sum_lx, &sum_l2, L);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

void quantize_k_affine_superblock(const float* src, int nmax, float rmin, float rdelta, int nstep, uint8_t* dst,
                                  uint8_t* L) {
  constexpr int kSub = 32;
  float weights[kSub];
  float scales[8], mins[8];
  // Per sub-block affine fit, weighting each element by (rms of the sub-block + |x|).
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* x = src + kSub * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < kSub; ++l) sum_x2 += x[l] * x[l];
    const float rms = std::sqrt(sum_x2 / kSub);
    for (int l = 0; l < kSub; ++l) weights[l] = rms + std::fabs(x[l]);
    scales[j] = fit_affine_codes(x, weights, kSub, nmax, rmin, rdelta, nstep, L + kSub * j, &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  // Sub-block scales and mins to 6 bits against two f16 super-scales.
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  int ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::min(63, nearest_int(inv_scale * scales[j]));
    lm[j] = std::min(63, nearest_int(inv_min * mins[j]));
  }
  uint8_t* packed = dst + 4;
  pack_scales_mins(ls, lm, packed);
  store_f16(dst, max_scale / 63.0f);
  store_f16(dst + 2, max_min / 63.0f);
  // Codes again, against the scales as they will decode.
  const float d = load_f16(dst);
  const float dmin = load_f16(dst + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_scale_min(packed, j, &sc, &m);
    const float ds = d * sc;
    if (ds == 0.0f) continue;
    const float dm = dmin * m;
    for (int l = 0; l < kSub; ++l) {
      L[kSub * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((src[kSub * j + l] + dm) / ds), 0, nmax));
    }
  }
}

}  // namespace saker::quant
