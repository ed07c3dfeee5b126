#include "cli/bench_ceilings.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu/matmul.h"

namespace saker::cli {

ModelCost model_cost(const ModelWeights& weights) {
  ModelCost c;
  const bool tied = weights.find("output.weight") == nullptr;
  std::map<std::string, int> types;
  for (const std::string& name : weights.names()) {
    const TensorView& t = *weights.find(name);
    types[std::string(dtype_name(t.dtype))]++;
    const bool matrix = t.n_dims == 2;
    const bool head = name == "output.weight" || (tied && name == "token_embd.weight");
    if (name.rfind("blk.", 0) == 0) {
      c.decode_bytes += t.n_bytes();
      if (matrix) c.layer_params += static_cast<double>(t.n_elements());
    } else if (head) {
      c.decode_bytes += t.n_bytes();
      c.head_params = static_cast<double>(t.n_elements());
    }
  }
  for (const auto& [name, n] : types) c.type_summary += fmt::format("{}{}: {}", c.type_summary.empty() ? "" : ", ", name, n);
  return c;
}

Ceilings gpu_ceilings(const std::string& device_name) {
  Ceilings c{4280.0, 800.0, "H200 device-to-device copy and bf16 GEMM, measured"};
  if (device_name.find("H200") == std::string::npos) {
    c.source = fmt::format("the H200's ceilings: none known for {}; --bandwidth and --tflops set them",
                           device_name.empty() ? std::string("this GPU") : device_name);
  }
  return c;
}

Ceilings measure_cpu_ceilings() {
  using Clock = std::chrono::steady_clock;
  Ceilings c;
  // Bandwidth: every thread sums its slice of 512 MiB of random floats; best of 3 passes.
  const int64_t n = int64_t{128} << 20;
  std::vector<float> buf(n);
  std::mt19937 rng(1);
  for (int64_t i = 0; i < n; i += 1024) buf[i] = static_cast<float>(rng() & 0xff);
  ThreadPool& pool = ThreadPool::global();
  double best = 1e30;
  std::vector<double> sink(1024, 0.0);
  for (int pass = 0; pass < 3; ++pass) {
    const auto t0 = Clock::now();
    pool.parallel_for(64, [&](int64_t b, int64_t e) {
      for (int64_t chunk = b; chunk < e; ++chunk) {
        const float* p = buf.data() + chunk * (n / 64);
        float acc[8] = {};
        for (int64_t i = 0; i < n / 64; i += 8) {
          for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
        }
        sink[chunk] = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
      }
    });
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  c.bandwidth_gbs = n * 4.0 / best / 1e9;
  // Matrix rate: a 512 x 2048 x 2048 f32 matmul through the CPU backend's fastest path; best of 3.
  const int64_t m = 512, k = 2048, o = 2048;
  std::vector<float> x(m * k), w(o * k), out(m * o);
  std::normal_distribution<float> d;
  for (auto& v : x) v = d(rng);
  for (auto& v : w) v = d(rng);
  const TensorView xv = TensorView::contiguous(x.data(), DType::kF32, {m, k});
  const TensorView wv = TensorView::contiguous(w.data(), DType::kF32, {o, k});
  const TensorView ov = TensorView::contiguous(out.data(), DType::kF32, {m, o});
  best = 1e30;
  for (int pass = 0; pass < 3; ++pass) {
    const auto t0 = Clock::now();
    if (!cpu::matmul(xv, wv, ov).ok()) break;
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  c.tflops = 2.0 * m * k * o / best / 1e12;
  c.source = fmt::format("this CPU, measured: {}-thread read of 512 MiB, f32 matmul 512x2048x2048", pool.size());
  return c;
}

}  // namespace saker::cli
