#include "core/env.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace saker {

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
