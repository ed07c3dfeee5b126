// Writes the libFuzzer inputs for every target under OUT: seeds/NAME/ (the seed corpus), corpus/NAME/ (empty:
// where a run keeps the new inputs it finds) and NAME.dict (keywords of the format).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fuzz_target.h"

namespace fs = std::filesystem;

namespace {

// libFuzzer's dictionary syntax: name="bytes" with \\, \" and \xNN escapes.
std::string dict_line(size_t index, const std::string& bytes) {
  std::string out = "kw" + std::to_string(index) + "=\"";
  for (unsigned char c : bytes) {
    if (c == '\\' || c == '"' || c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  for (const std::string& target : saker::fuzz::target_names()) {
    const fs::path seeds = out / "seeds" / target;
    fs::remove_all(seeds);
    fs::create_directories(seeds);
    fs::create_directories(out / "corpus" / target);
    size_t n = 0;
    for (const auto& seed : saker::fuzz::seeds_for(target)) {
      std::ofstream f(seeds / seed.name, std::ios::binary);
      f.write(reinterpret_cast<const char*>(seed.bytes.data()), static_cast<std::streamsize>(seed.bytes.size()));
      if (!f) {
        std::fprintf(stderr, "cannot write %s\n", (seeds / seed.name).c_str());
        return 1;
      }
      ++n;
    }
    std::ofstream dict(out / (target + ".dict"));
    const auto words = saker::fuzz::dictionary_for(target);
    for (size_t k = 0; k < words.size(); ++k) dict << dict_line(k, words[k]);
    std::printf("%s: %zu seeds, %zu dictionary words\n", target.c_str(), n, words.size());
  }
  return 0;
}
