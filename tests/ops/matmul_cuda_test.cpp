// CUDA matmul and embedding vs the ref ops, for every weight dtype: decode rows (fast kernels), misaligned
// activations (the simple kernel), prefill rows (cuBLAS), stacked parts, accumulate, padded output rows.
// Outputs are poisoned with NaN first, so an element never written fails, and padding must stay NaN.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <cstring>

#include "core/env.h"
#include "formats/quant/codec.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda_test_util.h"
#include "ops/matmul_test_util.h"
#include "ops/ref/embedding.h"
#include "ops/ref/matmul.h"

namespace saker {
namespace {

using testing::make_weights;
using testing::random_floats;

struct TypeCase {
  DType type;
  double decode_tol;   // f32 activations, f32 accumulation: only summation order differs from ref
  double prefill_tol;  // GEMM path: activations (and quantized weights) rounded to f16 / bf16
};

constexpr TypeCase kCases[] = {
    {DType::kF32, 1e-10, 1e-10},   {DType::kF16, 1e-9, 1e-5},    {DType::kBF16, 1e-9, 1e-4},
    {DType::kQ8_0, 1e-9, 1e-5},    {DType::kQ4_0, 1e-9, 1e-5},   {DType::kQ4_1, 1e-9, 1e-5},
    {DType::kQ5_0, 1e-9, 1e-5},    {DType::kQ5_1, 1e-9, 1e-5},   {DType::kIQ4_NL, 1e-9, 1e-5},
    {DType::kQ4_K, 1e-9, 1e-5},    {DType::kQ5_K, 1e-9, 1e-5},   {DType::kQ6_K, 1e-9, 1e-5},
    {DType::kIQ4_XS, 1e-9, 1e-5},
};

// Whether matmul() sends `rows` rows of this dtype (aligned x, n_in a multiple of 256) to the tensor-core
// verify kernel, which rounds x and the weights to f16 / bf16 like the prefill path: it gets prefill_tol.
bool takes_mma(DType type, int64_t rows) {
  if (rows < 2 || rows > 64) return false;
  switch (type) {
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return true;
    default: return false;
  }
}

// Whether matmul() sends `rows` rows (aligned x, n_in a multiple of 256) to an int8-activation kernel: Q4_K /
// Q5_K / Q6_K at 1-64 rows (the width-invariant tensor-core kernel; with SAKER_CUDA_MATMUL=legacy the dp4a
// kernels at 1-8 rows) unless SAKER_CUDA_MATMUL is fma or simple. They round x to int8, so they get kQ8Tol
// instead of the f32 decode tolerance; fma / simple runs keep the tight bounds.
constexpr double kQ8Tol = 2e-4;
bool takes_q8(DType type, int64_t rows) {
  const char* env = debug_env().cuda_matmul;
  if (env != nullptr && (std::strcmp(env, "fma") == 0 || std::strcmp(env, "simple") == 0)) return false;
  const bool legacy = env != nullptr && std::strcmp(env, "legacy") == 0;
  return (type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ6_K) && rows >= 1 &&
         rows <= (legacy ? 8 : 64);
}
double row_tol(const TypeCase& c, int64_t rows) {
  if (takes_q8(c.type, rows)) return kQ8Tol;
  return takes_mma(c.type, rows) ? c.prefill_tol : c.decode_tol;
}

struct RunSpec {
  int64_t n_out = 37;  // odd: not a multiple of any tile
  int64_t n_in = 512;
  int64_t rows = 1;
  int64_t out_pad = 0;  // out_stride = n_out + out_pad
  bool accumulate = false;
  bool misalign_x = false;  // x at a 4-byte offset: the fast kernels decline, the simple kernel runs
  int parts = 2;            // weight uploaded as this many stacked parts
};

// Runs one matmul and returns the NMSE against ref (or +inf when an element is NaN / padding was written).
double run_matmul(cuda::MatmulContext& ctx, DType type, const RunSpec& s, uint32_t seed) {
  const std::vector<uint8_t> w = make_weights(type, s.n_out, s.n_in, seed);
  const uint64_t rb = *row_bytes(type, s.n_in);
  // Split n_out into `parts` stacked pieces of unequal height.
  std::vector<TensorView> parts;
  int64_t row = 0;
  for (int p = 0; p < s.parts; ++p) {
    const int64_t h = p + 1 == s.parts ? s.n_out - row : std::max<int64_t>(1, s.n_out / (s.parts + 1) + p);
    parts.push_back(TensorView::contiguous(const_cast<uint8_t*>(w.data()) + row * rb, type, {h, s.n_in}));
    row += h;
  }
  auto dm = cuda::upload_matrix(parts);
  EXPECT_TRUE(dm.ok()) << dm.status().message();
  if (!dm.ok()) return INFINITY;
  EXPECT_EQ(dm->n_out, s.n_out);

  std::vector<float> x = random_floats(static_cast<size_t>(s.rows * s.n_in), seed + 1);
  std::vector<float> ref(static_cast<size_t>(s.rows * s.n_out));
  EXPECT_TRUE(ref::matmul(TensorView::contiguous(x.data(), DType::kF32, {s.rows, s.n_in}),
                          TensorView::contiguous(const_cast<uint8_t*>(w.data()), type, {s.n_out, s.n_in}),
                          TensorView::contiguous(ref.data(), DType::kF32, {s.rows, s.n_out}))
                  .ok());
  const int64_t stride = s.n_out + s.out_pad;
  std::vector<float> out_init(static_cast<size_t>(s.rows * stride), std::nanf(""));
  const std::vector<float> base = random_floats(static_cast<size_t>(s.rows * s.n_out), seed + 2);
  if (s.accumulate) {
    for (int64_t t = 0; t < s.rows; ++t) {
      for (int64_t o = 0; o < s.n_out; ++o) {
        out_init[t * stride + o] = base[t * s.n_out + o];
        ref[t * s.n_out + o] += base[t * s.n_out + o];
      }
    }
  }
  std::vector<float> x_dev_host(x.size() + 1);
  std::copy(x.begin(), x.end(), x_dev_host.begin() + (s.misalign_x ? 1 : 0));
  testing::DeviceArray<float> dx(x_dev_host), dout(out_init);
  const Status st = cuda::matmul(ctx, *dm, dx.get() + (s.misalign_x ? 1 : 0), s.rows, dout.get(), stride,
                                 s.accumulate, nullptr);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> out = dout.to_host();
  cuda::free_matrix(&*dm);
  std::vector<float> got(static_cast<size_t>(s.rows * s.n_out));
  for (int64_t t = 0; t < s.rows; ++t) {
    for (int64_t o = 0; o < stride; ++o) {
      const float v = out[t * stride + o];
      if (o < s.n_out) {
        got[t * s.n_out + o] = v;
      } else if (!std::isnan(v)) {
        ADD_FAILURE() << "padding written at row " << t << " col " << o;
        return INFINITY;
      }
    }
  }
  return testing::nmse(got, ref);
}

std::string describe(DType type, const RunSpec& s) {
  return std::string(dtype_name(type)) + " rows=" + std::to_string(s.rows) + " n_out=" + std::to_string(s.n_out) +
         " n_in=" + std::to_string(s.n_in) + " pad=" + std::to_string(s.out_pad) +
         " acc=" + std::to_string(s.accumulate) + " misaligned=" + std::to_string(s.misalign_x);
}

TEST(CudaMatmul, SupportsEveryLoadedDtype) {
  for (const TypeCase& c : kCases) EXPECT_TRUE(cuda::matmul_supports(c.type)) << dtype_name(c.type);
  EXPECT_FALSE(cuda::matmul_supports(DType::kQ2_K));
  EXPECT_FALSE(cuda::matmul_supports(DType::kI32));
}

TEST(CudaMatmul, DecodeRowsMatchRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(64, 512, 64);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)->max_kernel_rows(), 64);
  uint32_t seed = 1;
  for (const TypeCase& c : kCases) {
    for (int64_t rows : {1, 2, 3, 5, 8, 13, 16, 31, 32, 64}) {
      for (int variant = 0; variant < 2; ++variant) {
        RunSpec s;
        s.rows = rows;
        s.accumulate = variant == 1;
        s.out_pad = variant == 1 ? 5 : 0;
        s.parts = variant == 1 ? 3 : 1;
        const double e = run_matmul(**ctx, c.type, s, seed++);
        EXPECT_LT(e, row_tol(c, rows)) << describe(c.type, s);
      }
    }
  }
}

TEST(CudaMatmul, WideMatrixDecodeMatchesRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(64, 2048, 1024);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 500;
  for (const TypeCase& c : kCases) {
    for (int64_t rows : {1, 4, 9}) {
      RunSpec s;
      s.n_out = 301;
      s.n_in = 2048;
      s.rows = rows;
      s.parts = 3;
      EXPECT_LT(run_matmul(**ctx, c.type, s, seed++), row_tol(c, rows)) << describe(c.type, s);
    }
  }
}

// Every verify width through the tensor-core kernel: odd n_out (partial 16-row tiles), n_in of one 256-step
// (three of the four K-split warps idle) and of eight steps, accumulate, padded out_stride, stacked parts.
TEST(CudaMatmul, VerifyRowsTensorCoreMatchRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(64, 2048, 301);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 700;
  for (const TypeCase& c : kCases) {
    if (!takes_mma(c.type, 2)) continue;
    for (int64_t rows = 2; rows <= 64; ++rows) {
      RunSpec s;
      s.rows = rows;
      s.n_out = rows % 3 == 0 ? 301 : (rows % 3 == 1 ? 37 : 16);
      s.n_in = rows % 2 == 0 ? 2048 : 256;
      s.accumulate = rows % 4 < 2;
      s.out_pad = rows % 5;
      s.parts = 1 + rows % 3;
      // Q4_K / Q5_K / Q6_K at 2-8 rows take the dp4a kernels by default: the int8-activation bound there.
      EXPECT_LT(run_matmul(**ctx, c.type, s, seed++), takes_q8(c.type, rows) ? kQ8Tol : c.prefill_tol)
          << describe(c.type, s);
    }
  }
}

// The int8-activation dp4a decode kernels (Q4_K, Q5_K, Q6_K, 1-8 rows; every row tile R = 1, 2, 4, 8 and
// partial tiles): odd n_out, one to sixteen 256-element blocks per row, accumulate, padded out_stride, stacked parts.
TEST(CudaMatmul, DecodeRowsInt8ActivationsMatchRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(8, 4096, 301);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 900;
  for (DType type : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    for (int64_t rows = 1; rows <= 8; ++rows) {
      for (int variant = 0; variant < 3; ++variant) {
        RunSpec s;
        s.rows = rows;
        s.n_out = variant == 0 ? 37 : (variant == 1 ? 301 : 5);
        s.n_in = variant == 0 ? 256 : (variant == 1 ? 2048 : 4096);
        s.accumulate = (rows + variant) % 2 == 1;
        s.out_pad = variant == 2 ? 0 : 3;
        s.parts = 1 + (rows + variant) % 3;
        const double e = run_matmul(**ctx, type, s, seed++);
        EXPECT_LT(e, takes_q8(type, rows) ? kQ8Tol : 1e-5) << describe(type, s);
      }
    }
  }
}

// Width invariance of the dp4a decode kernels: a row's output is bit-identical whether it is multiplied alone
// or with 1-7 other rows (row tiles R = 1, 2, 4, 8; one or two output rows per warp; odd n_out for a last warp
// with one row). The engine's batched greedy output equals a lone run only if this holds.
TEST(CudaMatmul, Int8ActivationRowsAreWidthInvariant) {
  SAKER_REQUIRE_GPU();
  constexpr int64_t kRows = 8, kOut = 301, kIn = 2048;
  auto ctx = cuda::MatmulContext::create(kRows, kIn, kOut);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 1700;
  for (DType type : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const std::vector<uint8_t> w = make_weights(type, kOut, kIn, seed++);
    const TensorView part = TensorView::contiguous(const_cast<uint8_t*>(w.data()), type, {kOut, kIn});
    auto dm = cuda::upload_matrix(std::span<const TensorView>(&part, 1));
    ASSERT_TRUE(dm.ok()) << dm.status().message();
    const std::vector<float> x = random_floats(static_cast<size_t>(kRows * kIn), seed++);
    testing::DeviceArray<float> dx(x), dout(std::vector<float>(static_cast<size_t>(kRows * kOut), 0.0f));
    auto run = [&](int64_t first, int64_t rows) {
      EXPECT_TRUE(cuda::matmul(**ctx, *dm, dx.get() + first * kIn, rows, dout.get(), kOut, false, nullptr).ok());
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> all = dout.to_host();
      all.resize(static_cast<size_t>(rows * kOut));
      return all;
    };
    std::vector<std::vector<float>> alone;
    for (int64_t t = 0; t < kRows; ++t) alone.push_back(run(t, 1));
    for (int64_t rows = 2; rows <= kRows; ++rows) {
      const std::vector<float> got = run(0, rows);
      for (int64_t t = 0; t < rows; ++t) {
        EXPECT_EQ(0, std::memcmp(got.data() + t * kOut, alone[t].data(), sizeof(float) * kOut))
            << dtype_name(type) << ": row " << t << " of " << rows << " differs from the row alone";
      }
    }
    cuda::free_matrix(&*dm);
  }
}

// Misaligned activations: the simple kernel (K-quants: the width-invariant kernel).
TEST(CudaMatmul, SimpleKernelMatchesRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(64, 512, 64);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 1000;
  for (const TypeCase& c : kCases) {
    for (int64_t rows : {1, 5, 64}) {
      RunSpec s;
      s.rows = rows;
      s.misalign_x = true;
      s.accumulate = rows == 5;
      s.out_pad = 3;
      // K-quant rows keep the width-invariant kernel (it reads x one float at a time), so a row's bits do not
      // depend on where its activations lie either.
      EXPECT_LT(run_matmul(**ctx, c.type, s, seed++), takes_q8(c.type, rows) ? kQ8Tol : c.decode_tol)
          << describe(c.type, s);
    }
  }
  // Plain float rows that are not whole 256-element blocks take the simple kernel too.
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    RunSpec s;
    s.n_in = 200;
    s.rows = 3;
    EXPECT_LT(run_matmul(**ctx, type, s, seed++), 1e-9) << describe(type, s);
  }
}

TEST(CudaMatmul, PrefillRowsMatchRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(512, 512, 64);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 2000;
  for (const TypeCase& c : kCases) {
    for (int64_t rows : {65, 200, 512}) {
      RunSpec s;
      s.rows = rows;
      s.accumulate = rows == 200;
      s.out_pad = rows == 65 ? 0 : 7;
      s.parts = 2;
      EXPECT_LT(run_matmul(**ctx, c.type, s, seed++), c.prefill_tol) << describe(c.type, s);
    }
  }
}

// A context made for prefill also serves decode/verify rows through cuBLAS where that is faster (F16/BF16 at
// every width, quantized weights from 16 rows): those rows carry the GEMM path's rounding.
TEST(CudaMatmul, LibraryDecodeRowsMatchRef) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(512, 512, 64);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 3000;
  for (const TypeCase& c : kCases) {
    for (int64_t rows : {1, 3, 16, 64}) {
      RunSpec s;
      s.rows = rows;
      s.accumulate = rows == 3 || rows == 64;
      s.out_pad = rows == 16 ? 5 : 0;
      s.parts = rows == 64 ? 2 : 1;
      const double tol = takes_q8(c.type, rows) ? kQ8Tol : std::max(c.decode_tol, c.prefill_tol);
      EXPECT_LT(run_matmul(**ctx, c.type, s, seed++), tol) << describe(c.type, s);
    }
  }
}

TEST(CudaMatmul, RejectsBadArguments) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(64, 256, 16);
  ASSERT_TRUE(ctx.ok());
  const std::vector<uint8_t> w = make_weights(DType::kF16, 16, 256, 3);
  const TensorView part = TensorView::contiguous(const_cast<uint8_t*>(w.data()), DType::kF16, {16, 256});
  auto dm = cuda::upload_matrix({&part, 1});
  ASSERT_TRUE(dm.ok());
  testing::DeviceArray<float> x(256), out(64);
  EXPECT_EQ(cuda::matmul(**ctx, *dm, x.get(), 1, out.get(), 8, false, nullptr).code(), StatusCode::kInvalidArgument);
  // Prefill rows on a decode-only context.
  testing::DeviceArray<float> xb(256 * 65), outb(16 * 65);
  EXPECT_FALSE(cuda::matmul(**ctx, *dm, xb.get(), 65, outb.get(), 16, false, nullptr).ok());
  cuda::free_matrix(&*dm);
  // Parts of different dtypes cannot stack.
  const std::vector<uint8_t> w2 = make_weights(DType::kQ8_0, 16, 256, 4);
  const TensorView parts[2] = {part, TensorView::contiguous(const_cast<uint8_t*>(w2.data()), DType::kQ8_0, {16, 256})};
  EXPECT_FALSE(cuda::upload_matrix(parts).ok());
}

TEST(CudaEmbedding, MatchesRef) {
  SAKER_REQUIRE_GPU();
  const int64_t n_vocab = 50, n_embd = 512;
  const std::vector<int32_t> tokens = {3, 0, 49, 3, 17, 25};
  uint32_t seed = 3000;
  for (const TypeCase& c : kCases) {
    const std::vector<uint8_t> w = make_weights(c.type, n_vocab, n_embd, seed++);
    const TensorView table = TensorView::contiguous(const_cast<uint8_t*>(w.data()), c.type, {n_vocab, n_embd});
    auto dm = cuda::upload_matrix({&table, 1});
    ASSERT_TRUE(dm.ok());
    std::vector<float> ref(tokens.size() * n_embd);
    ASSERT_TRUE(ref::embedding(table, tokens,
                               TensorView::contiguous(ref.data(), DType::kF32,
                                                      {static_cast<int64_t>(tokens.size()), n_embd}))
                    .ok());
    for (float scale : {1.0f, 0.5f}) {
      std::vector<float> want = ref;
      for (auto& v : want) v *= scale;
      testing::DeviceArray<int32_t> dtok(tokens);
      testing::DeviceArray<float> dout(std::vector<float>(want.size(), std::nanf("")));
      ASSERT_TRUE(cuda::embedding(*dm, dtok.get(), static_cast<int64_t>(tokens.size()), scale, dout.get(), nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      // The decode may fuse (d * sc) * q - m into one FMA: allow rounding-level differences only.
      EXPECT_LT(testing::nmse(dout.to_host(), want), 1e-12) << dtype_name(c.type) << " scale " << scale;
    }
    cuda::free_matrix(&*dm);
  }
}

}  // namespace
}  // namespace saker
