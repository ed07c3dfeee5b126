// The CUDA backends run on cudaStreamNonBlocking streams, which do not wait for the default stream. A
// cudaMemcpy / cudaMemcpy2D from pageable memory may return before its DMA lands, and a cudaMemset returns at
// once; both run on the default stream, so a kernel launched on a backend's stream right after could read the
// memory before it is written (an H100 showed it: a chain of kernels on such a stream read the tail of an
// array whose upload had not landed). This reads the source (no GPU needed) and checks that every such call in
// src/ is followed, before its function ends, by cudaDeviceSynchronize().
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "test_paths.h"

namespace saker {
namespace {

// The default-stream copies and memsets of `s` not waited for: each call's text up to the end of its function
// (the next line that opens with '}' in the first column: the code is formatted with unindented namespaces;
// a method defined in its class is checked up to the class's end) must hold a cudaDeviceSynchronize().
std::vector<std::string> unwaited_calls(const std::string& s) {
  static const std::regex call(R"(\bcuda(Memcpy|Memcpy2D|Memset)\s*\()");
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), call); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position());
    const size_t line_start = s.rfind('\n', at) + 1;
    if (s.substr(line_start, at - line_start).find("//") != std::string::npos) continue;  // in a comment
    size_t end = s.find("\n}", at);
    if (end == std::string::npos) end = s.size();
    if (s.substr(at, end - at).find("cudaDeviceSynchronize()") == std::string::npos) {
      const size_t line_end = s.find('\n', at);
      found.push_back(s.substr(line_start, line_end - line_start));
    }
  }
  return found;
}

TEST(DefaultStreamSource, EveryCopyAndMemsetOfSrcIsWaitedFor) {
  const std::filesystem::path dir = testing::source_dir() / "src";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no source tree at " << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cu" && ext != ".cuh" && ext != ".cpp" && ext != ".h") continue;
    const std::string s = testing::read_file(entry.path());
    if (s.find("cuda") == std::string::npos) continue;
    ++files;
    for (const std::string& line : unwaited_calls(s)) {
      ADD_FAILURE() << entry.path().lexically_relative(dir) << ": a default-stream copy or memset not waited for"
                    << " (copy on the stream that reads it, or end with cudaDeviceSynchronize()): " << line;
    }
  }
  EXPECT_GE(files, 20) << "the CUDA sources were not found";
}

TEST(DefaultStreamSource, TheCheckCatchesAnUnwaitedCopy) {
  EXPECT_TRUE(unwaited_calls("Status f() {\n  cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);\n"
                             "  SAKER_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());\n  return {};\n}\n")
                  .empty());
  EXPECT_EQ(unwaited_calls("Status f() {\n  cudaMemset(d, 0, n);\n  return {};\n}\n"
                           "void g() { cudaDeviceSynchronize(); }\n")
                .size(),
            1u);  // the wait in another function does not count
  EXPECT_EQ(unwaited_calls("void f() {\n  for (int i = 0; i < 2; ++i) {\n    cudaMemcpy2D(d, p, h, p, w, r, k);\n"
                           "  }\n}\n")
                .size(),
            1u);
  EXPECT_TRUE(unwaited_calls("void f() {\n  // cudaMemcpy(d, h, n, k) would not be waited for\n}\n").empty());
  EXPECT_TRUE(unwaited_calls("void f() {\n  cudaMemcpyAsync(d, h, n, k, stream);\n}\n").empty());
}

}  // namespace
}  // namespace saker
