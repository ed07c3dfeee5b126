// The width-invariant K-quant matmul (matmul_kq_mma.cu): every output element equals, bit for bit, the
// canonical order of kq_canon.h recomputed on the host, and a row's output is the same whether it is
// multiplied alone or with up to 63 other rows. The engine's speculative and batched greedy output equal
// plain decoding only if both hold.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/env.h"
#include "ops/cuda/dequant_blocks.h"
#include "ops/cuda/kq_canon.h"
#include "ops/cuda/matmul.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda_test_util.h"
#include "ops/matmul_test_util.h"

namespace saker {
namespace {

namespace kq = cuda::kq;
using cuda::blocks::f16_to_f32;
using cuda::blocks::rd_u16;
using cuda::blocks::rd_u32;

// The int8 kernels, unless SAKER_CUDA_MATMUL picks the older paths or the f16 kernel (kqf16*) for every context.
bool kq_path_on() {
  const char* env = debug_env().cuda_matmul;
  return testing::invariant_matmul_env_on() && (env == nullptr || std::strncmp(env, "kqf16", 5) != 0);
}

// One weight row times one activation row in the canonical order, from the GGUF bytes and the host
// quantisation of x.
float oracle(DType type, const uint8_t* wrow, const int8_t* xq, const kq::KxBlock* kx, int64_t n_blocks) {
  const int64_t block_bytes = type == DType::kQ4_K ? 144 : (type == DType::kQ5_K ? 176 : 210);
  float streams[kq::kStreams] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = wrow + b * block_bytes;
    const int8_t* q = xq + b * kq::kBlock;
    const kq::KxBlock& m = kx[b];
    float v = 0.0f;
    if (type == DType::kQ6_K) {
      const uint8_t* ql = blk;
      const uint8_t* qh = blk + 128;
      int t_sum = 0;
      for (int i = 0; i < 16; ++i) {
        int s = 0;
        for (int l16 = 0; l16 < 16; ++l16) {
          const int e = 16 * i + l16, h = e >> 7, r = (e >> 5) & 3, l = e & 31;
          const int lo = ql[64 * h + 32 * (r & 1) + l];
          const int code = ((r >> 1) ? lo >> 4 : lo & 15) | (((qh[32 * h + l] >> (2 * r)) & 3) << 4);
          s += (code - 32) * q[e];
        }
        t_sum += (static_cast<int8_t>(blk[192 + i]) * s) << m.sh[i >> 1];
      }
      v = kq::kq_value_sym(m.d8, f16_to_f32(static_cast<uint16_t>(rd_u16(blk + 208))), t_sum);
    } else {
      const bool five = type == DType::kQ5_K;
      const uint8_t* qs = blk + (five ? 48 : 16);
      const uint32_t w1 = rd_u32(blk + 4), w2 = rd_u32(blk + 8), w3 = rd_u32(blk + 12);
      int t_sum = 0, m_sum = 0;
      for (int j = 0; j < 8; ++j) {
        int sc = 0, mn = 0;
        cuda::blocks::k_scale_min(w1, w2, w3, j, &sc, &mn);
        int s = 0;
        for (int l = 0; l < 32; ++l) {
          const int byte = qs[32 * (j >> 1) + l];
          int code = (j & 1) ? byte >> 4 : byte & 15;
          if (five) code |= ((blk[16 + l] >> j) & 1) << 4;
          s += code * q[32 * j + l];
        }
        t_sum += (sc * s) << m.sh[j];
        m_sum += mn * m.qsum[j];
      }
      v = kq::kq_value_min(m.d8, f16_to_f32(static_cast<uint16_t>(rd_u16(blk))),
                           f16_to_f32(static_cast<uint16_t>(rd_u16(blk + 2))), t_sum, m_sum);
    }
    streams[b % kq::kStreams] = kq::fadd(streams[b % kq::kStreams], v);
  }
  return kq::combine_streams(streams);
}

// Random weights quantised on the host (into *bytes when given) and uploaded; data null on failure.
cuda::DeviceMatrix upload_random(DType type, int64_t n_out, int64_t n_in, uint32_t seed,
                                 std::vector<uint8_t>* bytes = nullptr) {
  std::vector<uint8_t> w = testing::make_weights(type, n_out, n_in, seed);
  const cuda::DeviceMatrix dm = testing::upload_weights(type, w, n_out, n_in);
  if (bytes != nullptr) *bytes = std::move(w);
  return dm;
}

struct Shape {
  DType type;
  int64_t n_out, n_in;
};

// Odd n_out (a partial last tile), n_in of 1, 9 (streams of unequal length), 16, 48 and 56 blocks (48: the
// 8B down projection's width; every row count covers each of them).
constexpr Shape kShapes[] = {
    {DType::kQ4_K, 301, 2304}, {DType::kQ4_K, 37, 256},   {DType::kQ5_K, 77, 2304},
    {DType::kQ5_K, 16, 4096},  {DType::kQ6_K, 301, 2304}, {DType::kQ6_K, 45, 4096},
    {DType::kQ4_K, 19, 12288}, {DType::kQ6_K, 21, 14336},
};

// One shape against the host's canonical order: random weights and `act_rows` activation rows (seeds from
// *seed), then for each call width in `calls` a call writing and one accumulating onto random outputs; every
// output of every row compared bit for bit.
void expect_canonical(const Shape& sh, int64_t act_rows, std::initializer_list<int64_t> calls, cuda::MatmulContext& ctx,
                      uint32_t* seed) {
  std::vector<uint8_t> w;
  cuda::DeviceMatrix dm = upload_random(sh.type, sh.n_out, sh.n_in, (*seed)++, &w);
  ASSERT_NE(dm.data, nullptr);
  const std::vector<float> x = testing::varied_activations(act_rows, sh.n_in, (*seed)++);
  const std::vector<float> base = testing::random_floats(static_cast<size_t>(act_rows * sh.n_out), (*seed)++);
  const int64_t n_blocks = sh.n_in / kq::kBlock;
  std::vector<int8_t> xq(static_cast<size_t>(act_rows * sh.n_in));
  std::vector<kq::KxBlock> kx(static_cast<size_t>(act_rows * n_blocks));
  for (int64_t i = 0; i < act_rows * n_blocks; ++i) {
    kq::quantize_block_host(x.data() + i * kq::kBlock, xq.data() + i * kq::kBlock, kx.data() + i);
  }
  const uint64_t rb = *row_bytes(sh.type, sh.n_in);
  for (const int64_t rows : calls) {
    for (const bool accumulate : {false, true}) {
      testing::DeviceArray<float> dx(x), dout(base);
      ASSERT_TRUE(cuda::matmul(ctx, dm, dx.get(), rows, dout.get(), sh.n_out, accumulate, nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = dout.to_host();
      int64_t mismatches = 0;
      for (int64_t t = 0; t < rows; ++t) {
        for (int64_t o = 0; o < sh.n_out; ++o) {
          float want = oracle(sh.type, w.data() + o * rb, xq.data() + t * sh.n_in, kx.data() + t * n_blocks, n_blocks);
          if (accumulate) want = kq::fadd(base[t * sh.n_out + o], want);
          const float g = got[t * sh.n_out + o];
          if (std::memcmp(&g, &want, sizeof(float)) != 0 && mismatches++ < 5) {
            ADD_FAILURE() << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in << " rows=" << rows
                          << " acc=" << accumulate << ": row " << t << " out " << o << " got " << g << " want " << want;
          }
        }
      }
      EXPECT_EQ(mismatches, 0) << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in;
    }
  }
  cuda::free_matrix(&dm);
}

// 64 rows (the tensor-core kernel) and one (the one-row kernels).
TEST(CudaMatmulKq, EqualsCanonicalOrderBitForBit) {
  SAKER_REQUIRE_GPU();
  if (!kq_path_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kRows = 64;
  auto ctx = cuda::MatmulContext::create(kRows, 14336, 301);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 4100;
  for (const Shape& sh : kShapes) {
    expect_canonical(sh, kRows, {kRows, 1}, **ctx, &seed);
    if (HasFatalFailure()) return;
  }
}

// One activation row against matrices tall enough that the one-row kernel's warps each walk several row groups
// (its grid stops at the blocks the device holds at once: on an H100 about 4,200 Q4_K rows of 16-block runs
// at a group a warp), with 16 and 8 lanes a row, short last runs and a short last group. Cheap on the host:
// one activation row.
TEST(CudaMatmulKq, OneRowOnTallMatricesEqualsCanonicalOrder) {
  SAKER_REQUIRE_GPU();
  if (!kq_path_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr Shape kTall[] = {{DType::kQ4_K, 12289, 4096},
                             {DType::kQ4_K, 17001, 2304},
                             {DType::kQ6_K, 9003, 4096},
                             {DType::kQ6_K, 17001, 2048}};
  auto ctx = cuda::MatmulContext::create(1, 4096, 17001);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 4700;
  for (const Shape& sh : kTall) {
    expect_canonical(sh, 1, {1}, **ctx, &seed);
    if (HasFatalFailure()) return;
  }
}

// A row multiplied alone, or as any row of calls of 2 .. 64 rows, gives the same bits: every n-tile count
// and m-tile choice of the launcher, and rows at every position of a tile.
TEST(CudaMatmulKq, RowsAreWidthInvariantUpTo64) {
  SAKER_REQUIRE_GPU();
  if (!kq_path_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kRows = 64;
  auto ctx = cuda::MatmulContext::create(kRows, 14336, 301);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 4300;
  for (const Shape& sh : kShapes) {
    cuda::DeviceMatrix dm = upload_random(sh.type, sh.n_out, sh.n_in, seed++);
    ASSERT_NE(dm.data, nullptr);
    const std::vector<float> x = testing::varied_activations(kRows, sh.n_in, seed++);
    testing::DeviceArray<float> dx(x), dout(static_cast<size_t>(kRows * sh.n_out));
    auto run = [&](int64_t first, int64_t rows) {
      EXPECT_TRUE(cuda::matmul(**ctx, dm, dx.get() + first * sh.n_in, rows, dout.get(), sh.n_out, false, nullptr).ok());
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<float> all = dout.to_host();
      all.resize(static_cast<size_t>(rows * sh.n_out));
      return all;
    };
    const std::vector<float> full = run(0, kRows);
    // x 4 bytes off a 16-byte boundary (the quantiser's scalar loads): the same bits.
    {
      std::vector<float> shifted(x.size() + 1, 0.0f);
      std::copy(x.begin(), x.end(), shifted.begin() + 1);
      testing::DeviceArray<float> dxs(shifted);
      for (int64_t rows : {1, 7, 64}) {
        ASSERT_TRUE(cuda::matmul(**ctx, dm, dxs.get() + 1, rows, dout.get(), sh.n_out, false, nullptr).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<float> got = dout.to_host();
        ASSERT_EQ(0, std::memcmp(got.data(), full.data(), sizeof(float) * static_cast<size_t>(rows * sh.n_out)))
            << dtype_name(sh.type) << ": " << rows << " rows with misaligned x differ from the aligned call";
      }
    }
    for (int64_t rows : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63}) {  // 4 | 5: kL1MaxRows
      for (int64_t first : {int64_t{0}, kRows - rows, (kRows - rows) / 2}) {
        const std::vector<float> got = run(first, rows);
        for (int64_t t = 0; t < rows; ++t) {
          ASSERT_EQ(0, std::memcmp(got.data() + t * sh.n_out, full.data() + (first + t) * sh.n_out,
                                   sizeof(float) * static_cast<size_t>(sh.n_out)))
              << dtype_name(sh.type) << " " << sh.n_out << "x" << sh.n_in << ": row " << first + t << " in a call of "
              << rows << " rows from " << first << " differs from the 64-row call";
        }
      }
    }
    cuda::free_matrix(&dm);
  }
}

// rms_norm_quantized + matmul(x_quantized) (the CUDA backend's norm_matmul) gives the same normed rows and
// the same outputs, bit for bit, as rms_norm then matmul, at decode and verify widths, in place too.
TEST(CudaMatmulKq, NormFusedQuantisationEqualsSeparateOps) {
  SAKER_REQUIRE_GPU();
  if (!kq_path_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kIn = 2304, kOut = 301;
  auto ctx = cuda::MatmulContext::create(64, kIn, kOut);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 4500;
  for (DType type : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    cuda::DeviceMatrix dm = upload_random(type, kOut, kIn, seed++);
    ASSERT_NE(dm.data, nullptr);
    const std::vector<float> gamma = testing::random_floats(kIn, seed++);
    testing::DeviceArray<float> dgamma(gamma);
    for (int64_t rows : {1, 2, 5, 16, 64}) {
      const std::vector<float> x = testing::varied_activations(rows, kIn, seed++);
      testing::DeviceArray<float> dx(x), normed_a(x.size()), normed_b(x), out_a(rows * kOut), out_b(rows * kOut);
      ASSERT_TRUE(cuda::rms_norm(dx.get(), dgamma.get(), normed_a.get(), rows, kIn, 1e-6f, false, nullptr).ok());
      ASSERT_TRUE(cuda::matmul(**ctx, dm, normed_a.get(), rows, out_a.get(), kOut, false, nullptr).ok());
      ASSERT_TRUE(cuda::matmul_quantizes_input(**ctx, dm, normed_b.get(), rows));
      // In place, as the output head's norm runs.
      ASSERT_TRUE(cuda::rms_norm_quantized(**ctx, normed_b.get(), dgamma.get(), normed_b.get(), rows, kIn, 1e-6f,
                                           nullptr).ok());
      ASSERT_TRUE(cuda::matmul(**ctx, dm, normed_b.get(), rows, out_b.get(), kOut, false, nullptr, true).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> na = normed_a.to_host(), nb = normed_b.to_host();
      const std::vector<float> oa = out_a.to_host(), ob = out_b.to_host();
      EXPECT_EQ(0, std::memcmp(na.data(), nb.data(), na.size() * sizeof(float))) << dtype_name(type) << " rows " << rows;
      EXPECT_EQ(0, std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float))) << dtype_name(type) << " rows " << rows;
    }
    cuda::free_matrix(&dm);
  }
}

// gated_quantized + matmul(x_quantized) (the CUDA backend's gated_matmul) gives the same activation rows and
// the same outputs, bit for bit, as swiglu / geglu_tanh then matmul, at decode and verify widths, with gate and
// up the halves of one gate|up row as the models lay them out.
TEST(CudaMatmulKq, GatedFusedQuantisationEqualsSeparateOps) {
  SAKER_REQUIRE_GPU();
  if (!kq_path_on()) GTEST_SKIP() << "SAKER_CUDA_MATMUL selects another path";
  constexpr int64_t kFf = 2304, kOut = 301;
  auto ctx = cuda::MatmulContext::create(64, kFf, kOut);
  ASSERT_TRUE(ctx.ok());
  uint32_t seed = 4700;
  for (DType type : {DType::kQ4_K, DType::kQ6_K}) {
    cuda::DeviceMatrix dm = upload_random(type, kOut, kFf, seed++);
    ASSERT_NE(dm.data, nullptr);
    for (cuda::GatedKind kind : {cuda::GatedKind::kSilu, cuda::GatedKind::kGeluTanh}) {
      for (int64_t rows : {1, 2, 5, 16, 64}) {
        const std::vector<float> gu = testing::varied_activations(rows, 2 * kFf, seed++);  // [rows, gate | up]
        testing::DeviceArray<float> dgu(gu), act_a(rows * kFf), act_b(rows * kFf), out_a(rows * kOut),
            out_b(rows * kOut);
        const float* gate = dgu.get();
        const float* up = dgu.get() + kFf;
        const Status sep = kind == cuda::GatedKind::kSilu
                               ? cuda::swiglu(gate, up, 2 * kFf, act_a.get(), rows, kFf, nullptr)
                               : cuda::geglu_tanh(gate, up, 2 * kFf, act_a.get(), rows, kFf, nullptr);
        ASSERT_TRUE(sep.ok()) << sep.message();
        ASSERT_TRUE(cuda::matmul(**ctx, dm, act_a.get(), rows, out_a.get(), kOut, false, nullptr).ok());
        ASSERT_TRUE(cuda::matmul_quantizes_input(**ctx, dm, act_b.get(), rows));
        const Status fused = cuda::gated_quantized(**ctx, kind, gate, up, 2 * kFf, act_b.get(), rows, kFf, nullptr);
        ASSERT_TRUE(fused.ok()) << fused.message();
        ASSERT_TRUE(cuda::matmul(**ctx, dm, act_b.get(), rows, out_b.get(), kOut, false, nullptr, true).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<float> aa = act_a.to_host(), ab = act_b.to_host();
        const std::vector<float> oa = out_a.to_host(), ob = out_b.to_host();
        const char* name = kind == cuda::GatedKind::kSilu ? "swiglu" : "geglu_tanh";
        EXPECT_EQ(0, std::memcmp(aa.data(), ab.data(), aa.size() * sizeof(float)))
            << dtype_name(type) << " " << name << " rows " << rows;
        EXPECT_EQ(0, std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float)))
            << dtype_name(type) << " " << name << " rows " << rows;
      }
    }
    cuda::free_matrix(&dm);
  }
}

// Bad calls are refused with a reason, not run: a width that is not whole 256-element blocks, a width past the
// scratch's, an output over its own input.
TEST(CudaMatmulKq, GatedFusedQuantisationRefusesBadShapes) {
  SAKER_REQUIRE_GPU();
  auto ctx = cuda::MatmulContext::create(4, 512, 64);
  ASSERT_TRUE(ctx.ok());
  testing::DeviceArray<float> gu(8 * 1024), act(8 * 512);
  EXPECT_FALSE(
      cuda::gated_quantized(**ctx, cuda::GatedKind::kSilu, gu.get(), gu.get() + 300, 600, act.get(), 1, 300, nullptr)
          .ok());
  EXPECT_FALSE(
      cuda::gated_quantized(**ctx, cuda::GatedKind::kSilu, gu.get(), gu.get() + 768, 1536, act.get(), 1, 768, nullptr)
          .ok());
  EXPECT_FALSE(
      cuda::gated_quantized(**ctx, cuda::GatedKind::kSilu, gu.get(), gu.get() + 512, 1024, gu.get(), 1, 512, nullptr)
          .ok());
  EXPECT_TRUE(
      cuda::gated_quantized(**ctx, cuda::GatedKind::kSilu, gu.get(), gu.get() + 512, 1024, act.get(), 4, 512, nullptr)
          .ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace saker
