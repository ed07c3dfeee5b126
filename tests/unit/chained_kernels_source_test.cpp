// Every CUDA kernel of ops/cuda is launched chained (ops/cuda/chained_launch.cuh), so each must wait in
// chain_in() / chain_in_late() before it touches anything but weights: a kernel that read an activation or
// wrote an output first would race with the kernel before it, and only sometimes. This reads the kernels'
// source (no GPU needed) and checks that each body opens with that wait, preceded at most by constants
// computed from its indices and parameters and by calls of the prefetch_weights_* family (prefetch_weights_l2,
// and prefetch_weights_smem / prefetch_weights_tma: copies of weights into shared memory, which read nothing else).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace saker {
namespace {

// The index just past the parenthesised group opening at s[open] ('(').
size_t past_group(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

std::string without_comments(const std::string& s) {
  return std::regex_replace(s, std::regex(R"(//[^\n]*)"), "");
}

// Problems of one kernel body's text before its wait ("" when it has none).
std::string check_prefix(const std::string& body) {
  const size_t wait = body.find("chain_in");
  if (wait == std::string::npos) return "no chain_in() / chain_in_late()";
  const std::string prefix = without_comments(body.substr(0, wait));
  static const std::regex constant(R"(^\s*const\s+[\w:<>]+\s+\w+\s*=[^;]*$)");
  static const std::regex prefetch(R"(^\s*prefetch_weights_\w+(<[^;(]*>)?\([^;]*$)");  // template arguments too
  static const std::regex touches(R"(\[|->|__ldg|\batomic|\breturn\b|\bif\b|\bfor\b|\bwhile\b|(^|[=(,?:])\s*\*)");
  std::stringstream ss(prefix);
  std::string stmt;
  while (std::getline(ss, stmt, ';')) {
    if (stmt.find_first_not_of(" \t\n") == std::string::npos) continue;
    if (std::regex_search(stmt, touches)) return "before the wait: '" + stmt + "'";
    if (!std::regex_search(stmt, constant) && !std::regex_search(stmt, prefetch)) {
      return "before the wait, neither a constant nor a weight prefetch: '" + stmt + "'";
    }
  }
  return "";
}

TEST(ChainedKernelsSource, EveryKernelWaitsBeforeTouchingAnythingButWeights) {
  const std::filesystem::path dir = testing::source_dir() / "src" / "ops" / "cuda";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no source tree at " << dir;
  int kernels = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cu" && ext != ".cuh") continue;
    const std::string s = testing::read_file(entry.path());
    for (size_t at = s.find("__global__"); at != std::string::npos; at = s.find("__global__", at + 1)) {
      size_t open = s.find('(', at);
      if (s.substr(at, open - at).find("__launch_bounds__") != std::string::npos) {
        open = s.find('(', past_group(s, open));  // the parameters follow __launch_bounds__(...)
      }
      const size_t body = s.find('{', past_group(s, open));
      ASSERT_NE(body, std::string::npos) << entry.path();
      const std::string name = s.substr(s.rfind(' ', open - 1) + 1, open - s.rfind(' ', open - 1) - 1);
      EXPECT_EQ(check_prefix(s.substr(body + 1, 2000)), "") << entry.path().filename() << ": kernel " << name;
      ++kernels;
    }
  }
  EXPECT_GE(kernels, 30) << "the kernels of ops/cuda were not found";
}

TEST(ChainedKernelsSource, TheCheckCatchesAReadBeforeTheWait) {
  EXPECT_EQ(check_prefix("\n  const int64_t first = blockIdx.x * 4;\n  prefetch_weights_l2(w + first, n);\n  chain_in();"),
            "");
  EXPECT_EQ(check_prefix("\n  prefetch_weights_tma<Layout<F, 2>, F, true>(&tw, warp, n, tile);\n  chain_in_late();"), "");
  EXPECT_NE(check_prefix("\n  const float v = x[threadIdx.x];\n  chain_in();"), "");
  EXPECT_NE(check_prefix("\n  if (o >= n) return;\n  chain_in();"), "");
  EXPECT_NE(check_prefix("\n  out[0] = 1.0f;\n  chain_in();"), "");
  EXPECT_NE(check_prefix("\n  const float v = *x;\n  chain_in();"), "");
  EXPECT_NE(check_prefix("\n  int i = 0;\n  float y = 1;\n"), "");  // no wait at all
}

}  // namespace
}  // namespace saker
