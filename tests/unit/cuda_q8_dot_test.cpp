// The int8-activation decode kernels' block math (ops/cuda/q8_dot.h), built by the host compiler: each
// unit's dot product equals a plain host int8 reference of the same formula bit for bit, and whole matrix
// products agree with ref::matmul to the int8 rounding of x.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "formats/quant/codec.h"
#include "ops/cuda/q8_dot.h"
#include "ops/ref/matmul.h"

namespace saker {
namespace {

namespace q8 = cuda::q8;

struct QuantX {
  std::vector<int8_t> codes;       // [rows, n]
  std::vector<q8::XBlock> blocks;  // [rows, n / 32]: scale, scale * sum of codes
};

// The quantize_x_q8 kernel's arithmetic on the host.
QuantX quantize_x(const std::vector<float>& x, int64_t rows, int64_t n) {
  QuantX q;
  q.codes.resize(static_cast<size_t>(rows * n));
  q.blocks.resize(static_cast<size_t>(rows * n / 32));
  for (int64_t b = 0; b < rows * n / 32; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127.0f;
    int qsum = 0;
    for (int j = 0; j < 32; ++j) {
      q.codes[b * 32 + j] = q8::quantize_value(x[b * 32 + j], d);
      qsum += q.codes[b * 32 + j];
    }
    q.blocks[b] = q8::XBlock{d, d * static_cast<float>(qsum)};
  }
  return q;
}

std::vector<float> random_floats(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& f : v) f = dist(rng) * (1.0f + static_cast<float>(rng() % 4));
  return v;
}

std::vector<uint8_t> quantize_weights(DType type, const std::vector<float>& f, int64_t n_out, int64_t n_in) {
  const uint64_t rb = *row_bytes(type, n_in);
  std::vector<uint8_t> w(rb * static_cast<uint64_t>(n_out));
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quantize_row(type, f.data() + r * n_in, w.data() + r * rb, n_in).ok());
  }
  return w;
}

// ---- plain host references of one unit: codes read by element index from the GGUF block layout ----

void q4k_scale_min_plain(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
int q4k_code(const uint8_t* blk, int e) { return (blk[16 + 32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 15; }

// Q5_K: header 16 bytes, qh[32] at 16, qs[128] at 48.
int q5k_code(const uint8_t* blk, int e) {
  const int c = e / 64, hi = (e % 64) / 32, l = e % 32;
  const int nib = (blk[48 + 32 * c + l] >> (4 * hi)) & 15;
  return nib | (((blk[16 + l] >> (2 * c + hi)) & 1) << 4);
}

float q4k_unit_plain(const uint8_t* blk, int u, const int8_t* xb, const q8::XBlock* xs, bool q5) {
  uint16_t hd, hm;
  std::memcpy(&hd, blk, 2);
  std::memcpy(&hm, blk + 2, 2);
  const float d = fp16_to_fp32(hd), dmin = fp16_to_fp32(hm);
  const int c = u / 2, l0 = 16 * (u % 2);
  int sc1, m1, sc2, m2;
  q4k_scale_min_plain(blk + 4, 2 * c, &sc1, &m1);
  q4k_scale_min_plain(blk + 4, 2 * c + 1, &sc2, &m2);
  int s1 = 0, s2 = 0;
  for (int j = 0; j < 16; ++j) {
    const int e1 = 64 * c + l0 + j, e2 = e1 + 32;
    s1 += (q5 ? q5k_code(blk, e1) : q4k_code(blk, e1)) * xb[e1];
    s2 += (q5 ? q5k_code(blk, e2) : q4k_code(blk, e2)) * xb[e2];
  }
  const q8::XBlock a = xs[2 * c], b = xs[2 * c + 1];
  float r = d * (static_cast<float>(sc1) * a.d * static_cast<float>(s1) +
                 static_cast<float>(sc2) * b.d * static_cast<float>(s2));
  if (l0 == 0) r -= dmin * (static_cast<float>(m1) * a.sum + static_cast<float>(m2) * b.sum);
  return r;
}

int q6k_code(const uint8_t* blk, int e) {
  const int h = e / 128, r = (e % 128) / 32, l = e % 32;
  const uint8_t ql = blk[64 * h + l + 32 * (r & 1)];
  const int nib = (r >> 1) ? (ql >> 4) : (ql & 15);
  const int hi = (blk[128 + 32 * h + l] >> (2 * r)) & 3;
  return (nib | (hi << 4)) - 32;
}

float q6k_unit_plain(const uint8_t* blk, int u, const int8_t* xb, const q8::XBlock* xs) {
  uint16_t hd;
  std::memcpy(&hd, blk + 208, 2);
  const float d = fp16_to_fp32(hd);
  const int h = u / 4, l0 = 8 * (u % 4);
  float acc = 0.0f;
  for (int r = 0; r < 4; ++r) {
    const int e0 = 128 * h + 32 * r + l0;
    int s = 0;
    for (int j = 0; j < 8; ++j) s += q6k_code(blk, e0 + j) * xb[e0 + j];
    const int sc = static_cast<int8_t>(blk[192 + e0 / 16]);
    acc += static_cast<float>(sc) * xs[e0 / 32].d * static_cast<float>(s);
  }
  return d * acc;
}

struct Case {
  DType type;
  int block_bytes;
};

float kernel_unit(DType type, const uint8_t* blk, int u, const int8_t* xb, const q8::XBlock* xs) {
  if (type == DType::kQ4_K) return q8::q4k_dot(q8::q4k_load(blk, u), xb, xs);
  if (type == DType::kQ5_K) return q8::q4k_dot(q8::q5k_load(blk, u), xb, xs);
  return q8::q6k_dot(q8::q6k_load(blk, u), xb, xs);
}
float plain_unit(DType type, const uint8_t* blk, int u, const int8_t* xb, const q8::XBlock* xs) {
  if (type == DType::kQ6_K) return q6k_unit_plain(blk, u, xb, xs);
  return q4k_unit_plain(blk, u, xb, xs, type == DType::kQ5_K);
}

constexpr Case kCases[] = {{DType::kQ4_K, 144}, {DType::kQ5_K, 176}, {DType::kQ6_K, 210}};

TEST(CudaQ8Dot, DpaMatchesSignedByteProducts) {
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t a = rng(), b = rng();
    const int c = static_cast<int>(rng() % 2001) - 1000;
    int want = c;
    for (int k = 0; k < 4; ++k) want += static_cast<int8_t>(a >> (8 * k)) * static_cast<int8_t>(b >> (8 * k));
    EXPECT_EQ(q8::dp4a(a, b, c), want);
  }
}

TEST(CudaQ8Dot, QuantizeValue) {
  EXPECT_EQ(q8::quantize_value(1.0f, 0.0f), 0);
  EXPECT_EQ(q8::quantize_value(1.0f, 1.0f / 127.0f), 127);
  EXPECT_EQ(q8::quantize_value(-1.0f, 1.0f / 127.0f), -127);
  EXPECT_EQ(q8::quantize_value(0.5f / 127.0f * 3.0f, 1.0f / 127.0f), 2);  // 1.5 rounds away from zero
}

// Unit by unit, the kernel's helpers and the plain reference give the same float bits.
TEST(CudaQ8Dot, UnitsMatchPlainInt8ReferenceExactly) {
  std::mt19937 rng(77);
  for (const Case& c : kCases) {
    constexpr int64_t n_out = 5, n_in = 1024;
    const std::vector<uint8_t> w = quantize_weights(c.type, random_floats(n_out * n_in, 0.05f, rng), n_out, n_in);
    const std::vector<float> x = random_floats(n_in, 1.0f, rng);
    const QuantX qx = quantize_x(x, 1, n_in);
    const int64_t rb = *row_bytes(c.type, n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      for (int64_t b = 0; b < n_in / 256; ++b) {
        const uint8_t* blk = w.data() + o * rb + b * c.block_bytes;
        for (int u = 0; u < 8; ++u) {
          const float got = kernel_unit(c.type, blk, u, qx.codes.data() + b * 256, qx.blocks.data() + b * 8);
          const float want = plain_unit(c.type, blk, u, qx.codes.data() + b * 256, qx.blocks.data() + b * 8);
          uint32_t gb, wb;
          std::memcpy(&gb, &got, 4);
          std::memcpy(&wb, &want, 4);
          EXPECT_EQ(gb, wb) << dtype_name(c.type) << " row " << o << " block " << b << " unit " << u;
        }
      }
    }
  }
}

// Whole products for 1..8 activation rows, summed like the kernel (per unit, in float), against ref::matmul.
TEST(CudaQ8Dot, MatrixProductMatchesRefWithinInt8Error) {
  std::mt19937 rng(91);
  for (const Case& c : kCases) {
    for (int64_t rows : {1, 2, 3, 5, 8}) {
      constexpr int64_t n_out = 13, n_in = 2048;
      std::vector<uint8_t> w = quantize_weights(c.type, random_floats(n_out * n_in, 0.05f, rng), n_out, n_in);
      std::vector<float> x = random_floats(static_cast<size_t>(rows * n_in), 1.0f, rng);
      const QuantX qx = quantize_x(x, rows, n_in);
      const int64_t rb = *row_bytes(c.type, n_in);
      std::vector<float> got(static_cast<size_t>(rows * n_out)), want(got.size());
      for (int64_t t = 0; t < rows; ++t) {
        for (int64_t o = 0; o < n_out; ++o) {
          float lanes[32] = {};
          for (int64_t u = 0; u < n_in / 256 * 8; ++u) {
            const int64_t b = u / 8;
            const uint8_t* blk = w.data() + o * rb + b * c.block_bytes;
            lanes[u % 32] += kernel_unit(c.type, blk, static_cast<int>(u % 8), qx.codes.data() + t * n_in + b * 256,
                                         qx.blocks.data() + t * n_in / 32 + b * 8);
          }
          float s = 0.0f;
          for (float l : lanes) s += l;
          got[t * n_out + o] = s;
        }
      }
      ASSERT_TRUE(ref::matmul(TensorView::contiguous(x.data(), DType::kF32, {rows, n_in}),
                              TensorView::contiguous(w.data(), c.type, {n_out, n_in}),
                              TensorView::contiguous(want.data(), DType::kF32, {rows, n_out}))
                      .ok());
      double num = 0.0, den = 0.0;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i]));
        num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
        den += static_cast<double>(want[i]) * want[i];
      }
      EXPECT_LT(num / den, 1e-4) << dtype_name(c.type) << " rows " << rows;
    }
  }
}

}  // namespace
}  // namespace saker
