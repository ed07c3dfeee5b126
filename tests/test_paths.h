#pragma once
// Where tests find outside oracles (../shared/data from the project's root) and the project's own data.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace saker::testing {

// The checkout the tests were built from; SAKER_TEST_SOURCE_DIR overrides it when prebuilt test binaries run
// beside another copy of the tree (e.g. on a GPU machine).
inline std::filesystem::path source_dir() {
  if (const char* dir = std::getenv("SAKER_TEST_SOURCE_DIR"); dir && *dir) return dir;
  return SAKER_SOURCE_DIR;
}
inline std::filesystem::path project_data_dir() { return source_dir() / "tests" / "data"; }

// ../shared/data/<sub>, or an empty path when absent (a user's machine): tests then GTEST_SKIP saying so.
inline std::filesystem::path shared_data_dir(const std::string& sub) {
  const auto p = source_dir().parent_path() / "shared" / "data" / sub;
  return std::filesystem::is_directory(p) ? p : std::filesystem::path();
}

// A file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::filesystem::path temp_dir() {
  auto p = std::filesystem::temp_directory_path() / "saker-tests";
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace saker::testing

#define SAKER_REQUIRE_SHARED(var, sub)                                                            \
  const std::filesystem::path var = ::saker::testing::shared_data_dir(sub);                     \
  if (var.empty()) GTEST_SKIP() << "../shared/data/" sub " is absent: outside-oracle test skipped"
