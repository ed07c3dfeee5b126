// SAKER_CUDA_SKIP's parsing (core/env.h): the op classes a timing run leaves out, and names that are none.
#include <gtest/gtest.h>

#include <string>

#include "core/env.h"

namespace saker {
namespace {

TEST(DebugEnv, CudaSkipNamesTheirClasses) {
  std::string unknown;
  EXPECT_EQ(parse_cuda_skip("norm,attention", unknown), kSkipNorm | kSkipAttention);
  EXPECT_EQ(unknown, "");
  EXPECT_EQ(parse_cuda_skip("matmul", unknown), kSkipMatmul);
  EXPECT_EQ(parse_cuda_skip("qknorm,gated,add", unknown), kSkipQkNorm | kSkipGated | kSkipAdd);
  EXPECT_EQ(unknown, "");
}

TEST(DebugEnv, CudaSkipListsItsClasses) {
  EXPECT_EQ(cuda_skip_classes(), "norm, qknorm, attention, gated, matmul, add");
  std::string unknown;
  EXPECT_EQ(parse_cuda_skip("norm,qknorm,attention,gated,matmul,add", unknown),
            kSkipNorm | kSkipQkNorm | kSkipAttention | kSkipGated | kSkipMatmul | kSkipAdd);
}

TEST(DebugEnv, CudaSkipReportsUnknownNames) {
  std::string unknown;
  EXPECT_EQ(parse_cuda_skip("norm,nrom,,matmul", unknown), kSkipNorm | kSkipMatmul);
  EXPECT_EQ(unknown, "nrom");
  unknown.clear();
  EXPECT_EQ(parse_cuda_skip("", unknown), 0u);
  EXPECT_EQ(unknown, "");
}

}  // namespace
}  // namespace saker
