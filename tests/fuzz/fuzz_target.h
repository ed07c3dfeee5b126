#pragma once
// The interface every fuzz target implements (libFuzzer's), and the seed inputs shared by the seed writer
// (libFuzzer corpus) and the replay driver (builds without libFuzzer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace saker::fuzz {

struct Seed {
  std::string name;
  std::vector<uint8_t> bytes;
};

// Seed inputs for a target (a name of target_names()); empty for an unknown name.
std::vector<Seed> seeds_for(const std::string& target);
// libFuzzer dictionary entries (raw bytes) for a target.
std::vector<std::string> dictionary_for(const std::string& target);
std::vector<std::string> target_names();

// The checkout the target was built from, for data read in place (models/, and ../shared/data when present);
// SAKER_TEST_SOURCE_DIR overrides it, as for the tests, when prebuilt binaries run beside another copy.
inline std::string source_dir() {
  if (const char* dir = std::getenv("SAKER_TEST_SOURCE_DIR"); dir && *dir) return dir;
#ifdef SAKER_SOURCE_DIR
  return SAKER_SOURCE_DIR;
#else
  return ".";
#endif
}

// Keeps the reads a target makes from being optimised away.
inline volatile uint64_t g_sink = 0;
inline void consume(uint64_t x) { g_sink = g_sink + x; }

// A broken invariant: abort so that libFuzzer (or the replay driver's exit status) reports it.
[[noreturn]] inline void invariant_failed(const char* what) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
  std::abort();
}

}  // namespace saker::fuzz

#define SAKER_FUZZ_CHECK(cond) \
  do {                         \
    if (!(cond)) ::saker::fuzz::invariant_failed(#cond); \
  } while (0)
