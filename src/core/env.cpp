#include "core/env.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace saker {

namespace {
constexpr struct {
  const char* name;
  unsigned bit;
} kSkipClasses[] = {{"norm", kSkipNorm},   {"qknorm", kSkipQkNorm}, {"attention", kSkipAttention},
                    {"gated", kSkipGated}, {"matmul", kSkipMatmul}, {"add", kSkipAdd}};
}  // namespace

std::string cuda_skip_classes() {
  std::string out;
  for (const auto& c : kSkipClasses) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

unsigned parse_cuda_skip(const std::string& list, std::string& unknown) {
  unsigned bits = 0;
  size_t b = 0;
  while (b <= list.size()) {
    const size_t e = std::min(list.find(',', b), list.size());
    const std::string item = list.substr(b, e - b);
    bool known = false;
    for (const auto& c : kSkipClasses) {
      if (item == c.name) bits |= c.bit, known = true;
    }
    if (!known && !item.empty()) unknown += (unknown.empty() ? "" : ",") + item;
    b = e + 1;
  }
  return bits;
}

const DebugEnv& debug_env() {
  static const DebugEnv env = [] {
    DebugEnv e;
    e.log_level = std::getenv("SAKER_LOG_LEVEL");
    e.trace = std::getenv("SAKER_TRACE");
    e.trace_dir = std::getenv("SAKER_TRACE_DIR");
    e.cuda_matmul = std::getenv("SAKER_CUDA_MATMUL");
    e.cache_dir = std::getenv("SAKER_CACHE_DIR");
    e.python = std::getenv("SAKER_PYTHON");
    e.cuda_attention = std::getenv("SAKER_CUDA_ATTENTION");
    e.cuda_pdl = std::getenv("SAKER_CUDA_PDL");
    if (const char* u = std::getenv("SAKER_CUDA_UNFUSED")) e.cuda_unfused = std::string(u) == "1";
    if (const char* n = std::getenv("SAKER_NUM_THREADS")) e.num_threads = std::atoi(n);
    if (const char* k = std::getenv("SAKER_CUDA_SKIP")) e.cuda_skip = parse_cuda_skip(k, e.cuda_skip_unknown);
    return e;
  }();
  return env;
}

bool cuda_matmul_is(const char* value) {
  const char* v = debug_env().cuda_matmul;
  return v != nullptr && std::strcmp(v, value) == 0;
}

std::string model_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* d = debug_env().cache_dir; d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "saker").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "saker").string();
  return (fs::temp_directory_path() / "saker-cache").string();
}

}  // namespace saker
