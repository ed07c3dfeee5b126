// CUDA norms, fused per-head norm + RoPE, gated units and argmax against the ref ops (which compute in
// double): f32 kernels must agree to NMSE ~1e-10. Outputs are poisoned with NaN before every run.
#include <cstring>
#include <random>

#include "ops/cuda/norm_rope.h"
#include "ops/cuda_test_util.h"
#include "ops/ref/argmax.h"
#include "ops/ref/geglu_tanh.h"
#include "ops/ref/rms_norm.h"
#include "ops/ref/rope.h"
#include "ops/ref/swiglu.h"

namespace saker {
namespace {

constexpr double kF32Nmse = 1e-10;

std::vector<float> normals(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

template <typename T>
void poison(testing::DeviceArray<T>& d, size_t n) {
  ASSERT_EQ(cudaMemset(d.get(), 0xFF, n * sizeof(T)), cudaSuccess);  // NaN as float, -1 as int32
}

TEST(CudaRmsNorm, MatchesRef) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (int64_t n : {5, 64, 2560, 4096, 8192}) {
    for (int64_t rows : {1, 3, 17}) {
      for (int mode = 0; mode < 3; ++mode) {  // scale, (1 + w), no weight
        std::vector<float> x = normals(rng, rows * n, 2.0f), w = normals(rng, n, 0.5f), ref(rows * n);
        const auto rmode = mode == 0 ? ref::RmsNormWeight::kScale
                           : mode == 1 ? ref::RmsNormWeight::kOnePlusScale
                                       : ref::RmsNormWeight::kNone;
        ASSERT_TRUE(ref::rms_norm(TensorView::contiguous(x.data(), DType::kF32, {rows, n}),
                                  TensorView::contiguous(w.data(), DType::kF32, {n}),
                                  TensorView::contiguous(ref.data(), DType::kF32, {rows, n}), 1e-6f, rmode)
                        .ok());
        testing::DeviceArray<float> dx(x), dw(w), dout(rows * n);
        poison(dout, rows * n);
        ASSERT_TRUE(cuda::rms_norm(dx.get(), mode == 2 ? nullptr : dw.get(), dout.get(), rows, n, 1e-6f, mode == 1,
                                   nullptr).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_LT(testing::nmse(dout.to_host(), ref), kF32Nmse) << "n=" << n << " rows=" << rows << " mode=" << mode;
        // In place.
        ASSERT_TRUE(cuda::rms_norm(dx.get(), mode == 2 ? nullptr : dw.get(), dx.get(), rows, n, 1e-6f, mode == 1,
                                   nullptr).ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_LT(testing::nmse(dx.to_host(), ref), kF32Nmse) << "in place n=" << n;
      }
    }
  }
}

TEST(CudaHeadNormRope, MatchesRefNormThenRope) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(12);
  const int64_t n_tokens = 7;
  const int32_t n_head = 5;
  for (int32_t head_dim : {64, 128, 256}) {
    for (bool neox : {true, false}) {
      for (int32_t n_rot : {0, head_dim / 2}) {
        for (int variant = 0; variant < 3; ++variant) {  // 0: norm, 1: (1 + w) norm + scaling, 2: no norm
          const int64_t stride = static_cast<int64_t>(n_head) * head_dim + 3 * head_dim + 4;  // fused qkv row
          std::vector<float> row = normals(rng, n_tokens * stride, 1.5f);
          std::vector<float> w = normals(rng, head_dim, 0.3f);
          std::vector<int32_t> pos(n_tokens);
          for (int64_t t = 0; t < n_tokens; ++t) pos[t] = static_cast<int32_t>(rng() % 40000);
          const int32_t rot = n_rot == 0 ? head_dim : n_rot;
          std::vector<float> ff(static_cast<size_t>(rot / 2));
          for (float& f : ff) f = 1.0f + static_cast<float>(rng() % 100) / 10.0f;
          const bool use_ff = variant == 1;
          const float freq_scale = variant == 1 ? 0.25f : 1.0f;

          // Ref: copy the heads out, rms_norm over [T * H, D], then rope.
          std::vector<float> x(n_tokens * n_head * head_dim);
          for (int64_t t = 0; t < n_tokens; ++t) {
            std::memcpy(&x[t * n_head * head_dim], &row[t * stride], sizeof(float) * n_head * head_dim);
          }
          const TensorView xv = TensorView::contiguous(x.data(), DType::kF32, {n_tokens, n_head, head_dim});
          if (variant != 2) {
            ASSERT_TRUE(ref::rms_norm(TensorView::contiguous(x.data(), DType::kF32, {n_tokens * n_head, head_dim}),
                                      TensorView::contiguous(w.data(), DType::kF32, {head_dim}),
                                      TensorView::contiguous(x.data(), DType::kF32, {n_tokens * n_head, head_dim}),
                                      1e-6f, variant == 1 ? ref::RmsNormWeight::kOnePlusScale : ref::RmsNormWeight::kScale)
                            .ok());
          }
          ref::RopeParams rp;
          rp.style = neox ? ref::RopeStyle::kNeox : ref::RopeStyle::kInterleaved;
          rp.n_rot = n_rot;
          rp.theta_base = 1e6;
          rp.freq_scale = freq_scale;
          rp.freq_factors = use_ff ? ff.data() : nullptr;
          ASSERT_TRUE(ref::rope(xv, pos, rp).ok());

          testing::DeviceArray<float> drow(row), dw(w), dff(ff);
          testing::DeviceArray<int32_t> dpos(pos);
          cuda::RopeConfig rc;
          rc.neox = neox;
          rc.n_rot = n_rot;
          rc.theta_base = 1e6f;
          rc.freq_scale = freq_scale;
          rc.freq_factors = use_ff ? dff.get() : nullptr;
          ASSERT_TRUE(cuda::head_norm_rope(drow.get(), n_tokens, stride, n_head, head_dim,
                                           variant == 2 ? nullptr : dw.get(), 1e-6f, variant == 1, dpos.get(), rc,
                                           nullptr).ok());
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const std::vector<float> got_row = drow.to_host();
          std::vector<float> got(x.size());
          for (int64_t t = 0; t < n_tokens; ++t) {
            std::memcpy(&got[t * n_head * head_dim], &got_row[t * stride], sizeof(float) * n_head * head_dim);
            // The rest of the fused row (k, v) is untouched.
            for (int64_t i = n_head * head_dim; i < stride; ++i) ASSERT_EQ(got_row[t * stride + i], row[t * stride + i]);
          }
          EXPECT_LT(testing::nmse(got, x), kF32Nmse)
              << "head_dim=" << head_dim << " neox=" << neox << " n_rot=" << n_rot << " variant=" << variant;
        }
      }
    }
  }
}

TEST(CudaGatedUnits, MatchRef) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(13);
  for (int64_t n : {1, 3000, 12288}) {
    const int64_t n_tokens = 5, stride = 2 * n;  // gate | up fused
    std::vector<float> in = normals(rng, n_tokens * stride, 3.0f);
    in[0] = -200.0f;  // exp overflow in silu
    for (int act = 0; act < 2; ++act) {
      std::vector<float> ref(n_tokens * n);
      TensorView gate = TensorView::contiguous(in.data(), DType::kF32, {n_tokens, n});
      gate.stride_bytes[0] = stride * sizeof(float);
      TensorView up = gate;
      up.data = in.data() + n;
      const TensorView out = TensorView::contiguous(ref.data(), DType::kF32, {n_tokens, n});
      ASSERT_TRUE((act == 0 ? ref::swiglu(gate, up, out) : ref::geglu_tanh(gate, up, out)).ok());
      testing::DeviceArray<float> din(in), dout(n_tokens * n);
      poison(dout, n_tokens * n);
      const Status s = act == 0 ? cuda::swiglu(din.get(), din.get() + n, stride, dout.get(), n_tokens, n, nullptr)
                                : cuda::geglu_tanh(din.get(), din.get() + n, stride, dout.get(), n_tokens, n, nullptr);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_LT(testing::nmse(dout.to_host(), ref), kF32Nmse) << "n=" << n << " act=" << act;
    }
  }
}

TEST(CudaArgmax, MatchesRefWithTiesAndNaN) {
  SAKER_REQUIRE_GPU();
  std::mt19937 rng(14);
  for (int64_t n : {1, 1000, 151936, 262144}) {
    for (int64_t rows : {1, 5, 64}) {
      std::vector<float> x = normals(rng, rows * n);
      for (int64_t r = 0; r < rows; ++r) {
        float* xr = &x[r * n];
        if (n > 10 && r % 2 == 0) {  // a tie: the lower index must win
          const int64_t a = rng() % n, b = rng() % n;
          xr[a] = xr[b] = 50.0f;
        }
        if (n > 10 && r % 3 == 0) xr[rng() % n] = NAN;
      }
      if (rows > 1) std::fill(x.begin() + n, x.begin() + 2 * n, NAN);  // a row of NaN -> -1
      std::vector<int32_t> want(rows);
      ASSERT_TRUE(ref::argmax(TensorView::contiguous(x.data(), DType::kF32, {rows, n}), want).ok());
      testing::DeviceArray<float> dx(x);
      testing::DeviceArray<int32_t> didx(rows);
      poison(didx, rows);
      ASSERT_TRUE(cuda::argmax_rows(dx.get(), rows, n, didx.get(), nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(didx.to_host(), want) << "n=" << n << " rows=" << rows;
    }
  }
}

}  // namespace
}  // namespace saker
