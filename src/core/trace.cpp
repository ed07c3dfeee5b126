#include "core/trace.h"

#include <xxhash.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/half.h"
#include "core/log.h"

namespace saker {
namespace {

std::mutex g_mutex;
TraceHook g_hook;
std::atomic<bool> g_enabled{false};

std::vector<float> to_f32(const TensorView& t) {
  std::vector<float> out;
  if (t.device != Device::kCpu || !t.is_contiguous()) return out;
  const int64_t n = t.n_elements();
  out.resize(static_cast<size_t>(n));
  switch (t.dtype) {
    case DType::kF32: for (int64_t i = 0; i < n; ++i) out[i] = t.as<float>()[i]; break;
    case DType::kF16: for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(t.as<uint16_t>()[i]); break;
    case DType::kBF16: for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_fp32(t.as<uint16_t>()[i]); break;
    case DType::kI32: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(t.as<int32_t>()[i]); break;
    default: out.clear();
  }
  return out;
}

// The default hook, built from SAKER_TRACE / SAKER_TRACE_DIR.
class EnvTracer {
 public:
  EnvTracer(std::string selection, const char* dir) : dir_(dir ? dir : "") {
    std::stringstream ss(selection);
    for (std::string item; std::getline(ss, item, ',');) {
      if (item == "all") all_ = true;
      else if (!item.empty()) names_.push_back(item);
    }
  }

  void operator()(const TensorView& t, const char* name, int layer) {
    if (!selected(name)) return;
    const std::vector<float> v = to_f32(t);
    double sum = 0, abs_max = 0;
    for (float x : v) {
      sum += x;
      abs_max = std::max(abs_max, static_cast<double>(std::fabs(x)));
    }
    const uint64_t hash = XXH64(v.data(), v.size() * sizeof(float), 0);
    const int call = counts_[std::string(name) + "." + std::to_string(layer)]++;
    if (dir_.empty()) {
      SAKER_LOG_INFO("trace {} layer {} #{} {} mean {:.6g} absmax {:.6g} xxh64 {:016x}", name, layer, call,
                     t.shape_string(), v.empty() ? 0.0 : sum / static_cast<double>(v.size()), abs_max, hash);
      return;
    }
    const std::string file = fmt::format("{}/{}.{}.{}.f32", dir_, name, layer, call);
    if (FILE* f = std::fopen(file.c_str(), "wb")) {
      std::fwrite(v.data(), sizeof(float), v.size(), f);
      std::fclose(f);
    }
    if (FILE* idx = std::fopen((dir_ + "/index.tsv").c_str(), "a")) {
      std::fprintf(idx, "%s\t%d\t%d\t%s\t%016llx\n", name, layer, call, t.shape_string().c_str(),
                   static_cast<unsigned long long>(hash));
      std::fclose(idx);
    }
  }

 private:
  bool selected(const char* name) const {
    if (all_) return true;
    for (const auto& n : names_) {
      if (n == name) return true;
    }
    return false;
  }

  std::string dir_;
  bool all_ = false;
  std::vector<std::string> names_;
  std::map<std::string, int> counts_;
};

struct EnvInit {
  EnvInit() {
    if (const char* sel = debug_env().trace) {
      auto tracer = std::make_shared<EnvTracer>(sel, debug_env().trace_dir);
      g_hook = [tracer](const TensorView& t, const char* name, int layer) { (*tracer)(t, name, layer); };
      g_enabled = true;
    }
  }
};
EnvInit g_env_init;

}  // namespace

void set_trace_hook(TraceHook hook) {
  std::lock_guard lock(g_mutex);
  g_hook = std::move(hook);
  g_enabled = static_cast<bool>(g_hook);
}

bool trace_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void trace_dispatch(const TensorView& t, const char* name, int layer) {
  std::lock_guard lock(g_mutex);
  if (g_hook) g_hook(t, name, layer);
}

}  // namespace saker
