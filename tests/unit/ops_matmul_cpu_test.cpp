// cpu::matmul against ref::matmul for every weight dtype and each of its paths (AVX2 integer / float,
// portable, OpenBLAS), with per-path NMSE bounds; the integer kernels against the exact product of the
// quantised activations; bit-identical rows whatever the batch holds; NaN propagation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/cpu/act_quant.h"
#include "ops/cpu/matmul.h"
#include "ops/cpu/vec_dot.h"
#include "ops/ref/matmul.h"
#include "unit/ops_test_util.h"

namespace saker {
namespace {

using testing::make_weight;
using testing::nmse;
using testing::OpsRng;
using testing::view;

// The AVX2 integer kernels quantise activations to 8 bits: NMSE ~ 3e-5 on Gaussian rows. Float paths only
// reorder f32 sums.
constexpr double kIntegerPathNmse = 1e-4;
constexpr double kFloatPathNmse = 1e-10;

bool integer_path(DType type, const cpu::MatmulOptions& o) {
  return o.simd && cpu::have_avx2() && cpu::avx2_quant_dot(type) != nullptr;
}

std::vector<float> run_matmul(testing::QuantWeight& w, std::vector<float>& x, int64_t n_tokens, bool use_ref,
                              const cpu::MatmulOptions& options = {}) {
  std::vector<float> out(static_cast<size_t>(n_tokens * w.n_out), -7.0f);
  const Status s = use_ref ? ref::matmul(view(x, {n_tokens, w.n_in}), w.view(), view(out, {n_tokens, w.n_out}))
                           : cpu::matmul(view(x, {n_tokens, w.n_in}), w.view(), view(out, {n_tokens, w.n_out}), options);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

class CpuMatmul : public ::testing::TestWithParam<DType> {};

TEST_P(CpuMatmul, EveryPathMatchesRef) {
  const DType type = GetParam();
  constexpr int64_t kOut = 72, kIn = 768;
  testing::QuantWeight w = make_weight(type, kOut, kIn, 21);
  ASSERT_FALSE(w.bytes.empty());
  OpsRng rng(22);
  for (int64_t n_tokens : {1, 3, 40}) {
    std::vector<float> x = rng.normals(static_cast<size_t>(n_tokens * kIn));
    const std::vector<float> expect = run_matmul(w, x, n_tokens, true);
    for (bool simd : {true, false}) {
      cpu::MatmulOptions o;
      o.simd = simd;
      o.blas = n_tokens >= 40;
      o.blas_min_tokens = 40;
      const std::vector<float> got = run_matmul(w, x, n_tokens, false, o);
      const bool via_blas = o.blas && cpu::blas_available();
      const double bound = !via_blas && integer_path(type, o) ? kIntegerPathNmse : kFloatPathNmse;
      EXPECT_LE(nmse(got, expect), bound) << "tokens " << n_tokens << " simd " << simd << " blas " << via_blas;
    }
  }
}

class CpuIntegerKernel : public ::testing::TestWithParam<DType> {};

TEST_P(CpuIntegerKernel, ExactOnQuantisedActivations) {
  const DType type = GetParam();
  if (!cpu::have_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  const cpu::QuantDotFn dot = cpu::avx2_quant_dot(type);
  ASSERT_NE(dot, nullptr) << "every block dtype has an integer kernel";
  constexpr int64_t kRows = 16, kIn = 1024;
  testing::QuantWeight w = make_weight(type, kRows, kIn, 31);
  OpsRng rng(32);
  const std::vector<float> x = rng.normals(kIn, 5.0);
  std::vector<cpu::ActBlock> xq(kIn / cpu::kActBlock);
  // The super-block kernels need kQ8_K's one scale a super-block; kQ8_1's f16-rounded block sums would move
  // the affine 32-element formats off the exact value this test takes, so those get kQ8_0 blocks.
  const cpu::ActQuant style =
      cpu::act_quant_for(type) == cpu::ActQuant::kQ8_K ? cpu::ActQuant::kQ8_K : cpu::ActQuant::kQ8_0;
  cpu::quantize_act_row(x.data(), xq.data(), kIn, style);
  for (int64_t r = 0; r < kRows; ++r) {
    double expect = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < kIn; ++i) {
      const double xi = static_cast<double>(xq[i / 32].d) * xq[i / 32].q[i % 32];
      expect += xi * w.dequantized[r * kIn + i];
      magnitude += std::fabs(xi * w.dequantized[r * kIn + i]);
    }
    const cpu::ActBlock* rows[1] = {xq.data()};
    float got = 0.0f;
    dot(w.bytes.data() + r * *row_bytes(type, kIn), rows, 1, kIn, &got);
    // Only f32 rounding of scales and partial sums separates the kernel from the exact value.
    EXPECT_NEAR(got, expect, 1e-5 * magnitude) << "row " << r;
  }
}

TEST_P(CpuMatmul, RowsAreBitIdenticalWhateverTheBatch) {
  const DType type = GetParam();
  constexpr int64_t kOut = 40, kIn = 512, kTokens = 7;
  testing::QuantWeight w = make_weight(type, kOut, kIn, 41);
  OpsRng rng(42);
  std::vector<float> x = rng.normals(kTokens * kIn);
  cpu::MatmulOptions o;
  o.blas = false;
  const std::vector<float> batch = run_matmul(w, x, kTokens, false, o);
  for (int64_t t = 0; t < kTokens; ++t) {
    std::vector<float> row(x.begin() + t * kIn, x.begin() + (t + 1) * kIn);
    const std::vector<float> single = run_matmul(w, row, 1, false, o);
    for (int64_t i = 0; i < kOut; ++i) ASSERT_EQ(single[i], batch[t * kOut + i]) << "token " << t << " out " << i;
  }
}

TEST_P(CpuMatmul, NanInActivationsReachesTheOutput) {
  const DType type = GetParam();
  constexpr int64_t kOut = 8, kIn = 256;
  testing::QuantWeight w = make_weight(type, kOut, kIn, 51);
  OpsRng rng(52);
  std::vector<float> x = rng.normals(2 * kIn);
  x[kIn + 100] = NAN;  // token 1 only
  for (int path = 0; path < 3; ++path) {
    cpu::MatmulOptions o;
    o.simd = path != 1;
    o.blas = path == 2;
    o.blas_min_tokens = 1;
    const std::vector<float> out = run_matmul(w, x, 2, false, o);
    for (int64_t i = 0; i < kOut; ++i) {
      EXPECT_TRUE(std::isfinite(out[i])) << "token 0 must not be touched";
      EXPECT_TRUE(std::isnan(out[kOut + i])) << "path " << path;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockTypes, CpuIntegerKernel,
                         ::testing::Values(DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                                           DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(AllWeightTypes, CpuMatmul, ::testing::ValuesIn(testing::weight_dtypes()),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

TEST(CpuMatmulTest, StridedActivationsAndOutputs) {
  constexpr int64_t kTokens = 4, kOut = 16, kIn = 256;
  testing::QuantWeight w = make_weight(DType::kQ4_K, kOut, kIn, 61);
  OpsRng rng(62);
  std::vector<float> wide = rng.normals(kTokens * 2 * kIn), wide_out(kTokens * 3 * kOut, 5.0f);
  TensorView x = view(wide, {kTokens, kIn});
  x.stride_bytes[0] = 2 * kIn * sizeof(float);
  TensorView out = view(wide_out, {kTokens, kOut});
  out.data = wide_out.data() + kOut;
  out.stride_bytes[0] = 3 * kOut * sizeof(float);
  for (bool blas : {false, true}) {
    cpu::MatmulOptions o;
    o.blas = blas;
    o.blas_min_tokens = 1;
    ASSERT_TRUE(cpu::matmul(x, w.view(), out, o).ok());
    std::vector<float> ref_out(kTokens * kOut);
    ASSERT_TRUE(ref::matmul(x, w.view(), view(ref_out, {kTokens, kOut})).ok());
    std::vector<float> got(kTokens * kOut);
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t o2 = 0; o2 < kOut; ++o2) {
        got[t * kOut + o2] = wide_out[t * 3 * kOut + kOut + o2];
        EXPECT_EQ(wide_out[t * 3 * kOut + o2], 5.0f);
        EXPECT_EQ(wide_out[t * 3 * kOut + 2 * kOut + o2], 5.0f);
      }
    }
    EXPECT_LE(nmse(got, ref_out), kIntegerPathNmse) << "blas " << blas;
  }
}

TEST(CpuMatmulTest, FloatWeightsWithRowsThatAreNotAMultipleOfTheVectorWidth) {
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t n_in : {1, 7, 37, 100}) {
      testing::QuantWeight w = make_weight(type, 9, n_in, 71);
      OpsRng rng(72);
      std::vector<float> x = rng.normals(static_cast<size_t>(6 * n_in));
      const std::vector<float> expect = run_matmul(w, x, 6, true);
      for (bool simd : {true, false}) {
        cpu::MatmulOptions o;
        o.simd = simd;
        o.blas = false;
        EXPECT_LE(nmse(run_matmul(w, x, 6, false, o), expect), kFloatPathNmse) << dtype_name(type) << " n_in " << n_in;
      }
    }
  }
}

TEST(CpuMatmulTest, RejectsWhatRefRejects) {
  std::vector<float> x(64), out(4), w(4 * 32);
  EXPECT_EQ(cpu::matmul(view(x, {2, 32}), view(w, {4, 32}), view(out, {2, 2})).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> q2k(84);
  std::vector<float> x256(256), out1(1);
  EXPECT_EQ(cpu::matmul(view(x256, {1, 256}), TensorView::contiguous(q2k.data(), DType::kQ2_K, {1, 256}), view(out1, {1, 1})).code(),
            StatusCode::kUnsupported);
}

}  // namespace
}  // namespace saker
