// Round-trip error of each quantiser + dequantiser on Gaussian and heavy-tailed (Student t, 3 dof) data with
// per-row scales. The bounds are the measured errors plus about 4% headroom, so a quantiser that gets worse
// fails here; the comments give llama.cpp's figures on the golden model's heavy-tailed weights
// (../shared/data/quant/README.md) for comparison (its tails are lighter than t with 3 dof).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "formats/quant/codec.h"
#include "unit/quant_test_data.h"

namespace saker {
namespace {

struct RoundTripCase {
  DType type;
  double gaussian_bound;
  double heavy_bound;
};

void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << dtype_name(c.type); }

class QuantRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

double round_trip_error(DType type, bool heavy_tailed) {
  constexpr int64_t kRows = 64, kCols = 1024;
  const std::vector<float> x = testing::quant_test_matrix(kRows, kCols, heavy_tailed, 1234);
  std::vector<uint8_t> q(*row_bytes(type, kCols) * kRows);
  std::vector<float> y(x.size());
  EXPECT_TRUE(quantize(type, x.data(), q.data(), kRows, kCols).ok());
  EXPECT_TRUE(dequantize(type, q.data(), y.data(), kRows, kCols).ok());
  return testing::relative_error(y.data(), x.data(), x.size());
}

TEST_P(QuantRoundTrip, RelativeErrorWithinBound) {
  const RoundTripCase& c = GetParam();
  const double gaussian = round_trip_error(c.type, false);
  const double heavy = round_trip_error(c.type, true);
  std::printf("%-7s gaussian %.5f  heavy-tailed %.5f\n", std::string(dtype_name(c.type)).c_str(), gaussian, heavy);
  EXPECT_LE(gaussian, c.gaussian_bound);
  EXPECT_LE(heavy, c.heavy_bound);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, QuantRoundTrip,
    ::testing::Values(  // measured (seed 1234): Gaussian / heavy-tailed
        RoundTripCase{DType::kF16, 0.00025, 0.00025},     // 0.00021 / 0.00021
        RoundTripCase{DType::kBF16, 0.0018, 0.0019},      // 0.00168 / 0.00180
        RoundTripCase{DType::kQ8_0, 0.0056, 0.0090},      // 0.00537 / 0.00857; llama.cpp 0.007
        RoundTripCase{DType::kQ4_0, 0.090, 0.132},        // 0.0864 / 0.1272;   llama.cpp 0.115
        RoundTripCase{DType::kQ4_1, 0.082, 0.102},        // 0.0788 / 0.0980
        RoundTripCase{DType::kQ5_0, 0.044, 0.069},        // 0.0425 / 0.0661
        RoundTripCase{DType::kQ5_1, 0.0396, 0.050},       // 0.0381 / 0.0479
        RoundTripCase{DType::kQ4_K, 0.0745, 0.095},       // 0.0716 / 0.0913;   llama.cpp 0.087
        RoundTripCase{DType::kQ5_K, 0.0376, 0.0485},      // 0.0362 / 0.0467;   llama.cpp 0.044
        RoundTripCase{DType::kQ6_K, 0.0187, 0.028},       // 0.0179 / 0.0269;   llama.cpp 0.023
        RoundTripCase{DType::kIQ4_NL, 0.080, 0.1056},     // 0.0770 / 0.1016
        RoundTripCase{DType::kIQ4_XS, 0.0807, 0.1072}),   // 0.0776 / 0.1031;   llama.cpp 0.094
    [](const ::testing::TestParamInfo<RoundTripCase>& info) { return std::string(dtype_name(info.param.type)); });

}  // namespace
}  // namespace saker
