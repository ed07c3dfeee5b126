// Replay driver for builds without libFuzzer (gcc): runs a target on its seeds and on deterministic random
// mutations of them, or on the files/folders given (to reproduce a crash libFuzzer saved).
//   fuzz_NAME_replay [--iterations=N] [--seed=S] [FILE_OR_DIR...]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "fuzz_target.h"

#ifndef SAKER_FUZZ_TARGET
#error "SAKER_FUZZ_TARGET (the target's name) must be defined"
#endif

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

struct Rng {
  uint64_t state;
  uint64_t next() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

// Runs the target on an exact-size heap copy, so that a sanitizer sees a read one past the end.
void run(const Bytes& input) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[input.size() + 1]);
  if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
  LLVMFuzzerTestOneInput(input.empty() ? nullptr : copy.get(), input.size());
}

void mutate_once(Bytes& b, const std::vector<Bytes>& pool, const std::vector<std::string>& dict, Rng& rng) {
  static const uint64_t kInteresting[] = {0, 1, 2, 7, 8, 31, 32, 64, 127, 128, 255, 256, 4096, 65535, 65536,
                                          (1ull << 31) - 1, 1ull << 31, 1ull << 32, (1ull << 63) - 1, 1ull << 63,
                                          ~0ull, ~0ull - 7};
  switch (rng.below(b.empty() ? 3 : 9)) {
    case 0: {  // insert random bytes
      const size_t at = rng.below(b.size() + 1), n = 1 + rng.below(8);
      Bytes ins(n);
      for (auto& x : ins) x = static_cast<uint8_t>(rng.next());
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
      break;
    }
    case 1: {  // insert a dictionary word
      if (dict.empty()) break;
      const std::string& w = dict[rng.below(dict.size())];
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng.below(b.size() + 1)), w.begin(), w.end());
      break;
    }
    case 2: {  // splice: our head, another input's tail
      const Bytes& other = pool[rng.below(pool.size())];
      const size_t head = rng.below(b.size() + 1), from = rng.below(other.size() + 1);
      b.resize(head);
      b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
      break;
    }
    case 3: b[rng.below(b.size())] ^= static_cast<uint8_t>(1u << rng.below(8)); break;  // flip a bit
    case 4: b[rng.below(b.size())] = static_cast<uint8_t>(kInteresting[rng.below(std::size(kInteresting))]); break;
    case 5: {  // overwrite a little-endian u32 or u64 with an interesting value
      const uint64_t v = kInteresting[rng.below(std::size(kInteresting))];
      const size_t width = rng.below(2) ? 8 : 4;
      const size_t at = rng.below(b.size());
      std::memcpy(b.data() + at, &v, std::min(width, b.size() - at));
      break;
    }
    case 6: b.resize(rng.below(b.size())); break;  // truncate
    case 7: {  // erase a chunk
      const size_t at = rng.below(b.size()), n = 1 + rng.below(std::min<size_t>(16, b.size() - at));
      b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
    default: {  // duplicate a chunk
      const size_t at = rng.below(b.size()), n = 1 + rng.below(std::min<size_t>(32, b.size() - at));
      const Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng.below(b.size() + 1)), chunk.begin(), chunk.end());
      break;
    }
  }
}

bool read_file(const fs::path& path, Bytes* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string target = SAKER_FUZZ_TARGET;
  long iterations = -1;
  uint64_t seed = 1;
  std::vector<Bytes> inputs;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg.rfind("--iterations=", 0) == 0) {
      iterations = std::stol(arg.substr(13));
    } else if (arg.rfind("--seed=", 0) == 0) {
      seed = std::stoull(arg.substr(7));
    } else if (fs::is_directory(arg)) {
      for (const auto& e : fs::directory_iterator(arg)) {
        Bytes b;
        if (e.is_regular_file() && read_file(e.path(), &b)) inputs.push_back(std::move(b));
      }
    } else {
      Bytes b;
      if (!read_file(arg, &b)) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], arg.c_str());
        return 2;
      }
      inputs.push_back(std::move(b));
    }
  }
  const bool given = !inputs.empty();
  if (!given) {
    for (auto& s : saker::fuzz::seeds_for(target)) inputs.push_back(std::move(s.bytes));
    inputs.push_back({});
  }
  if (iterations < 0) iterations = given ? 0 : 5000;

  for (const Bytes& input : inputs) run(input);
  const std::vector<std::string> dict = saker::fuzz::dictionary_for(target);
  Rng rng{seed};
  for (long i = 0; i < iterations; ++i) {
    Bytes b = inputs[rng.below(inputs.size())];
    const size_t n_mutations = 1 + rng.below(4);
    for (size_t m = 0; m < n_mutations; ++m) mutate_once(b, inputs, dict, rng);
    run(b);
  }
  std::printf("fuzz_%s_replay: %zu inputs and %ld mutations ran without a crash\n", target.c_str(), inputs.size(),
              iterations);
  return 0;
}
