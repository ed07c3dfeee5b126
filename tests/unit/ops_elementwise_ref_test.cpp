// Reference row ops against naive double-precision formulas: rms_norm, swiglu, geglu_tanh, softmax,
// embedding, argmax.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/ref/argmax.h"
#include "ops/ref/embedding.h"
#include "ops/ref/geglu_tanh.h"
#include "ops/ref/rms_norm.h"
#include "ops/ref/softmax.h"
#include "ops/ref/swiglu.h"
#include "unit/ops_test_util.h"

namespace saker {
namespace {

using testing::OpsRng;
using testing::view;

TEST(RefRmsNorm, MatchesFormulaInEveryWeightMode) {
  constexpr int64_t kRows = 6, kN = 96;
  constexpr float kEps = 1e-6f;
  OpsRng rng(1);
  std::vector<float> x = rng.normals(kRows * kN, 3.0), w = rng.normals(kN);
  for (ref::RmsNormWeight mode :
       {ref::RmsNormWeight::kScale, ref::RmsNormWeight::kOnePlusScale, ref::RmsNormWeight::kNone}) {
    std::vector<float> out(x.size());
    ASSERT_TRUE(ref::rms_norm(view(x, {kRows, kN}), view(w, {kN}), view(out, {kRows, kN}), kEps, mode).ok());
    for (int64_t r = 0; r < kRows; ++r) {
      double ms = 0.0;
      for (int64_t i = 0; i < kN; ++i) ms += static_cast<double>(x[r * kN + i]) * x[r * kN + i] / kN;
      for (int64_t i = 0; i < kN; ++i) {
        const double scale = mode == ref::RmsNormWeight::kScale ? w[i] : mode == ref::RmsNormWeight::kNone ? 1.0 : 1.0 + w[i];
        const double expect = x[r * kN + i] / std::sqrt(ms + kEps) * scale;
        EXPECT_NEAR(out[r * kN + i], expect, 1e-6 * (std::fabs(expect) + 1e-3));
      }
    }
  }
}

TEST(RefRmsNorm, PerHeadInPlaceOnAThreeDimensionalView) {
  // Qwen3's q_norm: [n_tokens, n_head, head_dim] normalised over head_dim, in place.
  constexpr int64_t kTokens = 3, kHeads = 4, kDim = 16;
  OpsRng rng(2);
  std::vector<float> x = rng.normals(kTokens * kHeads * kDim), w = rng.normals(kDim);
  std::vector<float> flat_out(x.size());
  ASSERT_TRUE(ref::rms_norm(view(x, {kTokens * kHeads, kDim}), view(w, {kDim}), view(flat_out, {kTokens * kHeads, kDim}),
                            1e-6f).ok());
  ASSERT_TRUE(ref::rms_norm(view(x, {kTokens, kHeads, kDim}), view(w, {kDim}), view(x, {kTokens, kHeads, kDim}), 1e-6f).ok());
  EXPECT_EQ(x, flat_out);
}

TEST(RefRmsNorm, RejectsWrongWeightLength) {
  std::vector<float> x(8), w(3), out(8);
  EXPECT_EQ(ref::rms_norm(view(x, {2, 4}), view(w, {3}), view(out, {2, 4}), 1e-6f).code(), StatusCode::kInvalidArgument);
}

TEST(RefGatedUnits, SwigluAndGegluMatchFormulasOnFusedGateUp) {
  constexpr int64_t kTokens = 4, kFf = 40;
  OpsRng rng(3);
  std::vector<float> gate_up = rng.normals(kTokens * 2 * kFf, 4.0);
  gate_up[0] = -800.0f;  // exp overflow territory: silu must give -0, not NaN
  gate_up[1] = 800.0f;
  TensorView gate = view(gate_up, {kTokens, kFf});
  gate.stride_bytes[0] = 2 * kFf * sizeof(float);
  TensorView up = gate;
  up.data = gate_up.data() + kFf;
  std::vector<float> sw(kTokens * kFf), ge(kTokens * kFf);
  ASSERT_TRUE(ref::swiglu(gate, up, view(sw, {kTokens, kFf})).ok());
  ASSERT_TRUE(ref::geglu_tanh(gate, up, view(ge, {kTokens, kFf})).ok());
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t i = 0; i < kFf; ++i) {
      const double g = gate_up[t * 2 * kFf + i], u = gate_up[t * 2 * kFf + kFf + i];
      const double silu = g * (1.0 / (1.0 + std::exp(-g)));
      const double gelu = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
      EXPECT_NEAR(sw[t * kFf + i], silu * u, 1e-6 * (std::fabs(silu * u) + 1e-6));
      EXPECT_NEAR(ge[t * kFf + i], gelu * u, 1e-6 * (std::fabs(gelu * u) + 1e-6));
    }
  }
}

TEST(RefSoftmax, StableOnLargeLogitsAndHandlesMinusInfinity) {
  std::vector<float> x = {1000.0f, 1001.0f, 999.0f, -INFINITY, 0.0f, 1.0f, 2.0f, 3.0f};
  std::vector<float> out(x.size());
  ASSERT_TRUE(ref::softmax(view(x, {2, 4}), view(out, {2, 4})).ok());
  const double z = std::exp(-1.0) + 1.0 + std::exp(-2.0);
  EXPECT_NEAR(out[0], std::exp(-1.0) / z, 1e-7);
  EXPECT_NEAR(out[1], 1.0 / z, 1e-7);
  EXPECT_NEAR(out[2], std::exp(-2.0) / z, 1e-7);
  EXPECT_EQ(out[3], 0.0f);
  double sum = 0.0;
  for (int i = 4; i < 8; ++i) sum += out[i];
  EXPECT_NEAR(sum, 1.0, 1e-7);
  // In place, and a row of -inf gives zeros; a NaN row stays NaN.
  std::vector<float> y = {-INFINITY, -INFINITY, NAN, 0.0f};
  ASSERT_TRUE(ref::softmax(view(y, {2, 2}), view(y, {2, 2})).ok());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]));
}

TEST(RefEmbedding, GathersAndDequantisesRows) {
  constexpr int64_t kVocab = 10, kEmbd = 256;
  for (DType type : {DType::kF32, DType::kQ4_K, DType::kQ6_K, DType::kQ8_0}) {
    testing::QuantWeight table = testing::make_weight(type, kVocab, kEmbd, 4);
    const std::vector<int32_t> tokens = {3, 0, 9, 3};
    std::vector<float> out(tokens.size() * kEmbd);
    ASSERT_TRUE(ref::embedding(table.view(), tokens, view(out, {4, kEmbd})).ok());
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int64_t i = 0; i < kEmbd; ++i) ASSERT_EQ(out[t * kEmbd + i], table.dequantized[tokens[t] * kEmbd + i]);
    }
    const std::vector<int32_t> bad = {1, 10};
    EXPECT_EQ(ref::embedding(table.view(), bad, view(out, {2, kEmbd})).code(), StatusCode::kOutOfRange);
    const std::vector<int32_t> negative = {-1};
    EXPECT_EQ(ref::embedding(table.view(), negative, view(out, {1, kEmbd})).code(), StatusCode::kOutOfRange);
  }
}

TEST(RefArgmax, FirstMaximumWinsAndNanIsSkipped) {
  std::vector<float> x = {1.0f, 5.0f, 5.0f, 2.0f,   // tie: index 1
                          NAN, -3.0f, NAN, -4.0f,   // NaN skipped: index 1
                          NAN, NAN, NAN, NAN,       // nothing comparable: -1
                          -INFINITY, -INFINITY, -INFINITY, 7.0f};
  std::vector<int32_t> out(4);
  ASSERT_TRUE(ref::argmax(view(x, {4, 4}), out).ok());
  EXPECT_EQ(out, (std::vector<int32_t>{1, 1, -1, 3}));
  std::vector<int32_t> wrong(3);
  EXPECT_EQ(ref::argmax(view(x, {4, 4}), wrong).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace saker
