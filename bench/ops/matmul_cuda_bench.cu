// Playground (not part of CI): CUDA matmul speed per weight dtype, shape and row count, as weight bytes read
// per second against the H200's 4.28 TB/s copy bandwidth (and TFLOP/s for prefill rows).
// Usage: matmul_cuda_bench [--quick [TYPE]] | --one TYPE N_OUT N_IN ROWS
// Each timing is the median of 15 CUDA-event-timed bursts of 10 back-to-back calls after warm-up, rotating
// through enough copies of the weight to exceed the 60 MB L2. Before timing, one result is checked against the simple kernel's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/quant/codec.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/matmul_internal.cuh"

using namespace saker;

namespace {

constexpr double kPeakBytesPerS = 4.28e12;

#define BENCH_CHECK(expr)                                                                   \
  do {                                                                                      \
    cudaError_t e_ = (expr);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "CUDA error %s at %s\n", cudaGetErrorString(e_), #expr);        \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

struct Row {
  std::string type;
  int64_t n_out, n_in, rows;
  double ms, gbs, pct, tflops;
};

std::vector<uint8_t> random_weights(DType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  // Quantise a few distinct random rows and tile them: quantising 600M values on the host would take minutes.
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const uint64_t rb = *row_bytes(type, n_in);
  constexpr int64_t kDistinct = 64;
  std::vector<uint8_t> distinct(rb * kDistinct);
  std::vector<float> f(static_cast<size_t>(n_in));
  for (int64_t r = 0; r < kDistinct; ++r) {
    for (auto& v : f) v = dist(rng);
    if (!quantize_row(type, f.data(), distinct.data() + r * rb, n_in).ok()) std::exit(1);
  }
  std::vector<uint8_t> w(rb * static_cast<uint64_t>(n_out));
  for (int64_t r = 0; r < n_out; ++r) std::memcpy(w.data() + r * rb, distinct.data() + (r % kDistinct) * rb, rb);
  return w;
}

bool env_is(const char* env_path, const char* v) { return env_path != nullptr && std::strcmp(env_path, v) == 0; }

// Whether matmul() takes the int8-activation dp4a kernels for these rows (cuda::matmul_quantizes_input: the
// width-invariant K-quant kernels, which come first).
bool takes_q8(cuda::MatmulContext& ctx, const cuda::DeviceMatrix& w, const float* x, int64_t rows,
              const char* env_path) {
  if (env_is(env_path, "fma") || env_is(env_path, "simple")) return false;
  if (cuda::matmul_quantizes_input(ctx, w, x, rows)) return false;
  return rows <= cuda::detail::kQ8MaxRows && cuda::detail::matvec_q8_supported(w, x, rows, 64, w.n_in);
}

}  // namespace

// --one TYPE N_OUT N_IN ROWS: five calls of one shape and nothing else (a target for a profiler).
int run_one(char** argv) {
  const std::optional<DType> type = dtype_from_name(argv[2]);
  const int64_t n_out = std::atoll(argv[3]), n_in = std::atoll(argv[4]), rows = std::atoll(argv[5]);
  if (!type || n_out <= 0 || n_in <= 0 || rows <= 0) {
    std::fprintf(stderr, "usage: matmul_cuda_bench --one TYPE N_OUT N_IN ROWS\n");
    return 2;
  }
  auto ctx = cuda::MatmulContext::create(rows, n_in, n_out);
  if (!ctx.ok()) return 1;
  const std::vector<uint8_t> host = random_weights(*type, n_out, n_in, 11);
  const TensorView view = TensorView::contiguous(const_cast<uint8_t*>(host.data()), *type, {n_out, n_in});
  auto m = cuda::upload_matrix({&view, 1});
  if (!m.ok()) return 1;
  float *x = nullptr, *out = nullptr;
  BENCH_CHECK(cudaMalloc(&x, sizeof(float) * rows * n_in));
  BENCH_CHECK(cudaMemset(x, 0, sizeof(float) * rows * n_in));
  BENCH_CHECK(cudaMalloc(&out, sizeof(float) * rows * n_out));
  for (int i = 0; i < 5; ++i) {
    if (!cuda::matmul(**ctx, *m, x, rows, out, n_out, false, nullptr).ok()) return 1;
  }
  BENCH_CHECK(cudaDeviceSynchronize());
  std::printf("ran %s %lldx%lld rows %lld five times\n", argv[2], (long long)n_out, (long long)n_in, (long long)rows);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 6 && std::strcmp(argv[1], "--one") == 0) return run_one(argv);
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::vector<DType> types = quick ? std::vector<DType>{DType::kF16, DType::kQ4_K, DType::kQ6_K}
                                   : std::vector<DType>{DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_K,
                                                        DType::kQ6_K, DType::kQ5_K, DType::kIQ4_XS, DType::kQ4_0};
  if (quick && argc > 2) {  // --quick TYPE: that dtype only
    const std::optional<DType> only = dtype_from_name(argv[2]);
    if (!only) {
      std::fprintf(stderr, "unknown dtype %s\n", argv[2]);
      return 2;
    }
    types = {*only};
  }
  const std::vector<std::pair<int64_t, int64_t>> base_shapes =
      quick ? std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {12288, 4096}, {4096, 12288}}
            : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {12288, 4096}, {4096, 12288}};
  const std::vector<int64_t> row_counts =
      quick ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 512} : std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 512, 2048};
  const int64_t max_rows = 2048, max_n_in = 12288;
  auto ctx = cuda::MatmulContext::create(max_rows, max_n_in, 151936);
  if (!ctx.ok()) {
    std::fprintf(stderr, "context: %s\n", ctx.status().message().c_str());
    return 1;
  }
  float *x = nullptr, *out = nullptr, *out_ref = nullptr;
  BENCH_CHECK(cudaMalloc(&x, sizeof(float) * max_rows * max_n_in));
  BENCH_CHECK(cudaMalloc(&out, sizeof(float) * max_rows * 151936));
  BENCH_CHECK(cudaMalloc(&out_ref, sizeof(float) * 64 * 151936));
  {
    std::vector<float> hx(static_cast<size_t>(max_rows * max_n_in));
    std::mt19937 rng(5);
    std::normal_distribution<float> dist;
    for (auto& v : hx) v = dist(rng);
    BENCH_CHECK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  }
  cudaEvent_t e0, e1;
  BENCH_CHECK(cudaEventCreate(&e0));
  BENCH_CHECK(cudaEventCreate(&e1));
  std::vector<Row> table;
  const char* env_path = std::getenv("SAKER_CUDA_MATMUL");
  std::printf("SAKER_CUDA_MATMUL=%s\n", env_path ? env_path : "(unset)");
  for (DType type : types) {
    // The output-head shape only for the dtypes output heads use (keeps the full run near a minute).
    std::vector<std::pair<int64_t, int64_t>> shapes = base_shapes;
    if (!quick && (type == DType::kQ6_K || type == DType::kQ8_0)) shapes.push_back({151936, 4096});
    for (auto [n_out, n_in] : shapes) {
      const std::vector<uint8_t> host = random_weights(type, n_out, n_in, 11);
      const TensorView view = TensorView::contiguous(const_cast<uint8_t*>(host.data()), type, {n_out, n_in});
      const size_t bytes = host.size();
      const int copies = static_cast<int>(std::max<size_t>(2, (200u << 20) / bytes + 1));  // > 3x the L2
      std::vector<cuda::DeviceMatrix> mats;
      for (int c = 0; c < copies; ++c) {
        auto m = cuda::upload_matrix({&view, 1});
        if (!m.ok()) {
          std::fprintf(stderr, "upload: %s\n", m.status().message().c_str());
          return 1;
        }
        mats.push_back(*m);
      }
      // Check: the 4-row fast path against the simple kernel.
      {
        const int64_t rows = 4;
        if (!cuda::matmul(**ctx, mats[0], x, rows, out, n_out, false, nullptr).ok() ||
            !cuda::detail::launch_matvec_simple(mats[0], x, rows, out_ref, n_out, false, nullptr).ok()) {
          std::fprintf(stderr, "launch failed\n");
          return 1;
        }
        BENCH_CHECK(cudaDeviceSynchronize());
        std::vector<float> a(static_cast<size_t>(rows * n_out)), b(a.size());
        BENCH_CHECK(cudaMemcpy(a.data(), out, a.size() * 4, cudaMemcpyDeviceToHost));
        BENCH_CHECK(cudaMemcpy(b.data(), out_ref, b.size() * 4, cudaMemcpyDeviceToHost));
        double num = 0, den = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          num += (a[i] - b[i]) * double(a[i] - b[i]);
          den += double(b[i]) * b[i];
        }
        const double e = den > 0 ? num / den : num;
        // The tensor-core path rounds x and weights to f16 (bf16) like the prefill GEMM; the FMA path is f32.
        const bool mma = cuda::detail::matmul_mma_supported(mats[0], x, rows);
        // The dp4a path rounds x to int8 per 32 elements.
        const bool q8 = takes_q8(**ctx, mats[0], x, rows, env_path) || cuda::matmul_quantizes_input(**ctx, mats[0], x, rows);
        const double tol = q8 ? 2e-4 : mma ? (type == DType::kBF16 ? 1e-4 : 1e-5) : 1e-8;
        if (!(e < tol)) {
          std::fprintf(stderr, "MISMATCH %s %lldx%lld: nmse %.3g vs simple kernel\n", std::string(dtype_name(type)).c_str(),
                       (long long)n_out, (long long)n_in, e);
          return 1;
        }
      }
      for (int64_t rows : row_counts) {
        // Each sample times kBurst back-to-back calls (as a decode step's graph runs them), so the launch
        // gaps of a lone call do not count.
        const int warm = 3, iters = 15, kBurst = 10;
        std::vector<float> times;
        int c = 0;
        for (int i = 0; i < warm + iters; ++i) {
          BENCH_CHECK(cudaEventRecord(e0));
          for (int k = 0; k < kBurst; ++k, c = (c + 1) % copies) {
            const Status st = cuda::matmul(**ctx, mats[c], x, rows, out, n_out, false, nullptr);
            if (!st.ok()) {
              std::fprintf(stderr, "matmul: %s\n", st.message().c_str());
              return 1;
            }
          }
          BENCH_CHECK(cudaEventRecord(e1));
          BENCH_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          BENCH_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          if (i >= warm) times.push_back(ms / kBurst);
        }
        std::sort(times.begin(), times.end());
        const double ms = times[times.size() / 2];
        const double gbs = static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
        const double tflops = 2.0 * n_out * n_in * rows / (ms * 1e-3) / 1e12;
        table.push_back({std::string(dtype_name(type)), n_out, n_in, rows, ms, gbs, 100.0 * gbs * 1e9 / kPeakBytesPerS, tflops});
        const bool fma_only = env_path != nullptr && std::strcmp(env_path, "fma") == 0;
        const char* path = env_path != nullptr && std::strcmp(env_path, "simple") == 0 ? "simple"
                           : rows > 64                                              ? "gemm"
                           : cuda::matmul_quantizes_input(**ctx, mats[0], x, rows)
                               ? (rows <= cuda::detail::kKqDp4aMaxRows && !env_is(env_path, "kqmma") ? "kqdp4a" : "kqmma")
                           : takes_q8(**ctx, mats[0], x, rows, env_path)                   ? "q8dp4a"
                           : !fma_only && cuda::detail::matmul_mma_supported(mats[0], x, rows) ? "mma"
                                                                                              : "fma";
        std::printf("%-7s %6lldx%-6lld rows %5lld  %-6s %8.4f ms  %7.1f GB/s  %5.1f%%  %7.2f TFLOP/s\n",
                    table.back().type.c_str(), (long long)n_out, (long long)n_in, (long long)rows, path, ms, gbs,
                    table.back().pct, tflops);
        std::fflush(stdout);
      }
      for (auto& m : mats) cuda::free_matrix(&m);
    }
  }
  // Compact table: per dtype and shape, % of 4.28 TB/s by row count (prefill: TFLOP/s).
  std::printf("\n%-7s %-13s", "dtype", "shape");
  for (int64_t r : row_counts) std::printf(" %7lld", (long long)r);
  std::printf("   (decode: %% of 4.28 TB/s; rows > 64: TFLOP/s)\n");
  for (size_t i = 0; i < table.size(); i += row_counts.size()) {
    char shape[32];
    std::snprintf(shape, sizeof shape, "%lldx%lld", (long long)table[i].n_out, (long long)table[i].n_in);
    std::printf("%-7s %-13s", table[i].type.c_str(), shape);
    for (size_t j = 0; j < row_counts.size(); ++j) {
      const Row& r = table[i + j];
      std::printf(" %7.1f", r.rows > 64 ? r.tflops : r.pct);
    }
    std::printf("\n");
  }
  return 0;
}
