// Hopper's warpgroup MMA on int8, checked against the CPU before any kernel is built on it: one warpgroup
// computes C[64 x N] (s32) = A[64 x 32] B[32 x N] (s8) with `wgmma.mma_async ... m64nNk32.s32.s8.s8`, A from
// registers (each warp 16 rows, mma.m16n8k32's A fragment) and B from shared memory through a matrix descriptor
// (no swizzle: 8 x 16-byte core matrices, an n-row's 16 k-bytes contiguous). Which descriptor field is the
// step between core matrices along k and which the step between groups of 8 n-rows is the thing to learn, so
// both readings are tried and the one whose products equal the CPU's is the layout to build the verify kernel
// on (docs/performance.md, "where the time goes": 16-64 rows on warpgroup MMA).
//   wgmma_probe            prints, for N = 16 and 64 and each reading (and the 128-byte swizzled layout the
//                          K-quant kernel reads, at two k-steps), the wrong elements of 64 x N
// Needs an sm_90a build (the default CMAKE_CUDA_ARCHITECTURES); elsewhere it says so and exits 2.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PROBE_WGMMA 1
#endif

__device__ int g_built = 0;  // 1 when the kernel holds the wgmma code (an sm_90a build)

// The shared-memory matrix descriptor: start address, the two byte offsets (each >> 4), no swizzle.
__device__ __forceinline__ uint64_t smem_desc(const void* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((addr >> 4) & 0x3FFF) | (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32);
}

// The descriptor of a K-major operand under the 128-byte swizzle (rows of 128 bytes, 8-row groups 1024 apart).
__device__ __forceinline__ uint64_t smem_desc_sw128(const void* p) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((addr >> 4) & 0x3FFF) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

// One warpgroup. a: [64, 32] row-major; b: [N, 32] (row n holds column n of B, its 32 k-bytes); c: [64, N].
// koff < 0: no swizzle, B's core matrices as below, descriptor offsets lbo / sbo. koff 0, 32, 64, 96: B as a TMA
// copy with the 128-byte swizzle leaves it (row n a 128-byte line, its 16-byte chunk c at c ^ (n % 8)), the 32
// k-bytes at bytes koff .. koff + 31 of each line and the descriptor's start koff bytes into the buffer: the
// layout and k-step addressing of the K-quant kernel (ops/cuda/matmul_kq_wgmma.cu).
template <int N>
__global__ void __launch_bounds__(128)
    probe_kernel(const int8_t* a, const int8_t* b, int32_t* c, uint32_t lbo, uint32_t sbo, int koff) {
  // Core matrix (n-group g, k-half h) at byte 128 (2 g + h): its row r = n 8 g + r, bytes k 16 h .. 16 h + 15.
  __shared__ __align__(1024) int8_t bs[N * 128];
  for (int i = threadIdx.x; i < N * 32; i += 128) {
    const int n = i / 32, k = i % 32;
    if (koff < 0) {
      bs[(2 * (n / 8) + k / 16) * 128 + (n % 8) * 16 + k % 16] = b[n * 32 + k];
    } else {
      const int byte = koff + k;
      bs[n * 128 + (((byte >> 4) ^ (n & 7)) << 4) + (byte & 15)] = b[n * 32 + k];
    }
  }
#ifdef PROBE_WGMMA
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy writes, read by the async proxy
#endif
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  const int r0 = 16 * warp + gid, r1 = r0 + 8;
  const auto word = [&](int row, int k) { return *reinterpret_cast<const uint32_t*>(a + row * 32 + k); };
  const uint32_t a0 = word(r0, 4 * tig), a1 = word(r1, 4 * tig), a2 = word(r0, 16 + 4 * tig),
                 a3 = word(r1, 16 + 4 * tig);
  int32_t d[N / 2];
  for (int i = 0; i < N / 2; ++i) d[i] = 0;
#ifdef PROBE_WGMMA
  if (threadIdx.x == 0) g_built = 1;
  const uint64_t desc = koff < 0 ? smem_desc(bs, lbo, sbo) : smem_desc_sw128(bs + koff);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  if constexpr (N == 16) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, "
        "%12, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc), "r"(0));
  } else {
    static_assert(N == 16 || N == 64, "the probe's shapes");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
        "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
          "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
          "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc), "r"(0));
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#else
  (void)lbo, (void)sbo, (void)a0, (void)a1, (void)a2, (void)a3;
#endif
  // D as mma.m16n8's C fragment, one per 8 columns: d[4j + 0, 1] at (r0, 8 j + 2 tig + 0, 1), d[4j + 2, 3] at r1.
  for (int j = 0; j < N / 8; ++j) {
    c[r0 * N + 8 * j + 2 * tig] = d[4 * j];
    c[r0 * N + 8 * j + 2 * tig + 1] = d[4 * j + 1];
    c[r1 * N + 8 * j + 2 * tig] = d[4 * j + 2];
    c[r1 * N + 8 * j + 2 * tig + 1] = d[4 * j + 3];
  }
}

#define CHECK(x)                                                                       \
  do {                                                                                 \
    const cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                           \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

template <int N>
int run(uint32_t lbo, uint32_t sbo, int koff, bool* built, int* wrong_out) {
  std::mt19937 rng(7 + N);
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> a(64 * 32), b(N * 32);
  for (auto& v : a) v = static_cast<int8_t>(dist(rng));
  for (auto& v : b) v = static_cast<int8_t>(dist(rng));
  std::vector<int32_t> want(64 * N), got(64 * N, 0);
  for (int m = 0; m < 64; ++m) {
    for (int n = 0; n < N; ++n) {
      int32_t s = 0;
      for (int k = 0; k < 32; ++k) s += static_cast<int32_t>(a[m * 32 + k]) * b[n * 32 + k];
      want[m * N + n] = s;
    }
  }
  int8_t *da = nullptr, *db = nullptr;
  int32_t* dc = nullptr;
  CHECK(cudaMalloc(&da, a.size()));
  CHECK(cudaMalloc(&db, b.size()));
  CHECK(cudaMalloc(&dc, got.size() * sizeof(int32_t)));
  CHECK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0, got.size() * sizeof(int32_t)));
  int zero = 0;
  CHECK(cudaMemcpyToSymbol(g_built, &zero, sizeof(int)));
  probe_kernel<N><<<1, 128>>>(da, db, dc, lbo, sbo, koff);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(got.data(), dc, got.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  int flag = 0;
  CHECK(cudaMemcpyFromSymbol(&flag, g_built, sizeof(int)));
  *built = flag != 0;
  int wrong = 0, shown = 0;
  for (int i = 0; i < 64 * N; ++i) {
    if (got[i] != want[i]) {
      if (shown++ < 3) std::printf("    (m %d, n %d): got %d, want %d\n", i / N, i % N, got[i], want[i]);
      ++wrong;
    }
  }
  *wrong_out = wrong;
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return 0;
}

}  // namespace

int main() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) !=
                                                 cudaSuccess) {
    std::printf("wgmma_probe: no CUDA device\n");
    return 2;
  }
  if (major < 9) {
    std::printf("wgmma_probe: compute capability %d.x has no warpgroup MMA\n", major);
    return 2;
  }
  // Core matrices 128 bytes apart along k (the two halves of k32) and 256 bytes apart along n: the two readings.
  const struct {
    uint32_t lbo, sbo;
    int koff;
    const char* what;
  } readings[] = {{128, 256, -1, "leading = along k, stride = along n"},
                  {256, 128, -1, "leading = along n, stride = along k"},
                  {0, 0, 0, "128-byte swizzle, k-step at byte 0"},
                  {0, 0, 96, "128-byte swizzle, k-step at byte 96"}};
  int passed = 0;
  std::printf("| N | descriptor | wrong of 64 x N |\n|---|---|---|\n");
  for (const auto& r : readings) {
    for (int n : {16, 64}) {
      bool built = false;
      int wrong = 0;
      if ((n == 16 ? run<16>(r.lbo, r.sbo, r.koff, &built, &wrong) : run<64>(r.lbo, r.sbo, r.koff, &built, &wrong)) !=
          0) {
        return 1;
      }
      if (!built) {
        std::printf("wgmma_probe: built without sm_90a code (CMAKE_CUDA_ARCHITECTURES 90a)\n");
        return 2;
      }
      std::printf("| %d | LBO %u, SBO %u (%s) | %d of %d |\n", n, r.lbo, r.sbo, r.what, wrong, 64 * n);
      passed += wrong == 0;
    }
  }
  std::printf("wgmma_probe: %d of 8 cases exact\n", passed);
  return passed >= 6 ? 0 : 1;
}
