// Playground (not part of CI): speed of cpu::matmul against ref::matmul per weight dtype, as weight bytes
// read per second. Usage: matmul_cpu_bench [--no-ref] [--cpu-time] [n_out] [n_in] [rows...]
// (defaults: 4096 4096 1 64). --cpu-time reports process CPU time instead of wall time: on a shared,
// loaded machine with SAKER_NUM_THREADS=1 it is close to what an idle core would take.
// Weights are random values quantised by formats/quant; activations are random normals.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "formats/quant/codec.h"
#include "ops/cpu/matmul.h"
#include "ops/cpu/vec_dot.h"
#include "ops/ref/matmul.h"

using namespace saker;

namespace {

bool g_cpu_time = false;

double now_seconds() {
  if (g_cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds of `reps` runs after one warm-up.
template <typename Fn>
double time_median(int reps, Fn fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double start = now_seconds();
    fn();
    t.push_back(now_seconds() - start);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool run_ref = true;
  while (argc > 1 && std::string(argv[1]).rfind("--", 0) == 0) {
    const std::string flag = argv[1];
    if (flag == "--no-ref") run_ref = false;
    if (flag == "--cpu-time") g_cpu_time = true;
    --argc;
    ++argv;
  }
  const int64_t n_out = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int64_t n_in = argc > 2 ? std::atoll(argv[2]) : 4096;
  std::vector<int64_t> rows;
  for (int i = 3; i < argc; ++i) rows.push_back(std::atoll(argv[i]));
  if (rows.empty()) rows = {1, 64};
  std::printf("matmul %lld x %lld, %d threads, avx2 %s, openblas %s\n", static_cast<long long>(n_out),
              static_cast<long long>(n_in), ThreadPool::global().size(), cpu::have_avx2() ? "yes" : "no",
              cpu::blas_available() ? "yes" : "no");
  std::printf("%-7s %5s %12s %12s %12s %12s %9s\n", "dtype", "rows", "ref ms", "cpu ms", "cpu+blas ms", "cpu GB/s",
              "speedup");

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w_f32(static_cast<size_t>(n_out * n_in));
  for (float& v : w_f32) v = 0.05f * normal(rng);
  const int64_t max_rows = *std::max_element(rows.begin(), rows.end());
  std::vector<float> x(static_cast<size_t>(max_rows * n_in)), out(static_cast<size_t>(max_rows * n_out));
  for (float& v : x) v = normal(rng);

  for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K,
                     DType::kQ6_K, DType::kIQ4_XS, DType::kQ5_0}) {
    const uint64_t bytes = *row_bytes(type, n_in) * n_out;
    std::vector<uint8_t> w(bytes);
    if (!quantize(type, w_f32.data(), w.data(), n_out, n_in).ok()) return 1;
    const TensorView wv = TensorView::contiguous(w.data(), type, {n_out, n_in});
    for (int64_t r : rows) {
      const TensorView xv = TensorView::contiguous(x.data(), DType::kF32, {r, n_in});
      const TensorView ov = TensorView::contiguous(out.data(), DType::kF32, {r, n_out});
      cpu::MatmulOptions no_blas;
      no_blas.blas = false;
      cpu::MatmulOptions with_blas;
      with_blas.blas_min_tokens = 1;
      const double t_ref = run_ref ? time_median(1, [&] { (void)ref::matmul(xv, wv, ov); }) : 0.0;
      const double t_cpu = time_median(5, [&] { (void)cpu::matmul(xv, wv, ov, no_blas); });
      const double t_blas = cpu::blas_available() ? time_median(3, [&] { (void)cpu::matmul(xv, wv, ov, with_blas); }) : 0.0;
      std::printf("%-7s %5lld %12.2f %12.2f %12.2f %12.2f %8.1fx\n", std::string(dtype_name(type)).c_str(),
                  static_cast<long long>(r), t_ref * 1e3, t_cpu * 1e3, t_blas * 1e3, bytes / t_cpu / 1e9, t_ref / t_cpu);
    }
  }
  return 0;
}
