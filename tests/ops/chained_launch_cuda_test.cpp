// Chained kernel launches (ops/cuda/chained_launch.cuh): on Hopper a chained kernel starts while the one
// before it still runs and waits in chain_in() for its writes. A kernel that read or wrote before that wait
// would race; these chains of adds, each reading what the one before wrote, would then lose increments,
// eagerly and in a replayed graph whose first node is a copy (as the backend's step graphs are).
#include <cstdlib>
#include <cstring>

#include "ops/cuda/add.h"
#include "ops/cuda/chained_launch.h"
#include "ops/cuda_test_util.h"

namespace saker {
namespace {

constexpr int64_t kN = 1 << 20;  // a grid of many blocks, so a racing block would find stale values
constexpr int kChain = 300;

// x += 1, kChain times on `stream`, through y: each add reads the other buffer, which the add before it wrote.
void add_ones(float* x, float* y, const float* ones, cudaStream_t stream) {
  static_assert(kChain % 2 == 0, "the chain ends in x");
  for (int i = 0; i < kChain; ++i) {
    ASSERT_TRUE((i % 2 == 0 ? cuda::add_f32(x, ones, y, kN, stream) : cuda::add_f32(y, ones, x, kN, stream)).ok());
  }
}

void expect_all(const testing::DeviceArray<float>& x, float want) {
  const std::vector<float> h = x.to_host();
  int64_t wrong = 0;
  for (float v : h) wrong += v != want;
  EXPECT_EQ(wrong, 0) << "elements that missed an increment of the chain (want " << want << ", first "
                      << h.front() << ", last " << h.back() << ")";
}

TEST(ChainedLaunches, OnFromHopperUnlessSwitchedOff) {
  SAKER_REQUIRE_GPU();
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  const char* env = std::getenv("SAKER_CUDA_PDL");
  const bool off = env && std::strcmp(env, "0") == 0;
  EXPECT_EQ(cuda::chained_launches_enabled(), p.major >= 9 && !off);
}

TEST(ChainedLaunches, EachKernelSeesThePreviousOnesWrites) {
  SAKER_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  testing::DeviceArray<float> x(std::vector<float>(kN, 0.0f)), y(kN), ones(std::vector<float>(kN, 1.0f));
  add_ones(x.get(), y.get(), ones.get(), stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_all(x, static_cast<float>(kChain));
  cudaStreamDestroy(stream);
}

TEST(ChainedLaunches, CapturedInAGraphAndReplayed) {
  SAKER_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  testing::DeviceArray<float> x(kN), y(kN), ones(std::vector<float>(kN, 1.0f)), start(std::vector<float>(kN, 7.0f));
  cuda::chained_launches_enabled();  // the first call asks the driver: outside capture, as the backend does
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  // A copy first: the first chained add follows a node that is not a kernel.
  ASSERT_EQ(cudaMemcpyAsync(x.get(), start.get(), kN * sizeof(float), cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  add_ones(x.get(), y.get(), ones.get(), stream);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  constexpr int kReplays = 3;
  for (int r = 0; r < kReplays; ++r) ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_all(x, static_cast<float>(7 + kChain));  // each replay starts again from the copy
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace saker
