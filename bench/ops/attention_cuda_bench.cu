// Playground (not part of CI): speed of the CUDA paged attention and the row-wise layer ops at the
// geometry of an 8B model (32 query heads, 8 KV heads, head_dim 128, hidden 4096, ffn 12288).
// Usage: attention_cuda_bench [--quick] [--match TEXT] [--memset-flush]   (--match: the cases whose name contains
// TEXT, from the whole list; --quick then only shortens the timing)
// Each case: warm-up runs, then >= 20 runs timed by CUDA events (median reported). Before every timed
// run a read of 256 MB evicts L2 so K/V come from HBM (--memset-flush: a 256 MB memset, as before 2026-12-07).
// Decode is reported as GB/s over the K/V bytes the step must read (and % of the H200's 4.28 TB/s), prefill
// as TFLOP/s over the unmasked QK^T and PV products (4 * head_dim flops per query head and visible key).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ops/cuda/attention.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda/qk_norm_rope_kv_write.h"

namespace {

using namespace saker;

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define CHECK_OK(x)                                                                        \
  do {                                                                                     \
    const Status s_ = (x);                                                                 \
    if (!s_.ok()) {                                                                        \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_.message().c_str()); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr double kPeakBytesPerSecond = 4.28e12;

// Deterministic pseudo-random fill on the device (a hash of the index), values in about [-2, 2).
__global__ void fill_f16(__half* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * static_cast<size_t>(blockDim.x)) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2half(static_cast<float>(h & 0xFFFF) / 16384.0f - 2.0f);
  }
}
__global__ void fill_f32(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * static_cast<size_t>(blockDim.x)) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = static_cast<float>(h & 0xFFFF) / 16384.0f - 2.0f;
  }
}

// Reads n float4 and keeps them from being optimised away (the sum is stored only if it hits a value it
// cannot have): L2 is left holding clean lines of this buffer, which the next kernel's reads evict for free.
__global__ void read_through_l2(const float4* p, size_t n, float* sink) {
  float acc = 0.0f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<size_t>(blockDim.x)) {
    const float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == -1.0f) *sink = acc;  // the buffer holds zeros
}

struct Timer {
  int warmup = 5, runs = 30;
  // Before every timed run L2 is emptied of the case's data by reading a buffer five times its size. A memset
  // did it before (--memset-flush keeps that, to compare with earlier figures), but left L2 full of dirty lines
  // whose write-back then shared the HBM with the timed kernel's reads (up to 50 MB of writes beside a 4,096-key
  // decode's 17 MB of K/V).
  bool memset_flush = false;
  void* flush = nullptr;
  float* sink = nullptr;
  size_t flush_bytes = 256u << 20;
  Timer() {
    CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
    CHECK_CUDA(cudaMalloc(&sink, sizeof(float)));
    CHECK_CUDA(cudaMemset(flush, 0, flush_bytes));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~Timer() {
    cudaFree(flush);
    cudaFree(sink);
  }
  void empty_l2(int i) {
    if (memset_flush) {
      CHECK_CUDA(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, nullptr));
    } else {
      read_through_l2<<<1024, 256>>>(static_cast<const float4*>(flush), flush_bytes / sizeof(float4), sink);
    }
  }
  // Median milliseconds of fn() over `runs` timed runs.
  template <typename F>
  double median_ms(F&& fn) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    for (int i = 0; i < warmup; ++i) fn();
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      empty_l2(i);
      CHECK_CUDA(cudaEventRecord(a, nullptr));
      fn();
      CHECK_CUDA(cudaEventRecord(b, nullptr));
      CHECK_CUDA(cudaEventSynchronize(b));
      float t = 0;
      CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    CHECK_CUDA(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

// The batch validated, packed and copied to the device (the caller frees .data). The copy and the kernels
// share the default stream.
cuda::DeviceAttentionBatch upload_batch(const AttentionBatch& batch, int32_t n_blocks, int32_t block_size) {
  CHECK_OK(batch.validate(n_blocks, block_size));
  std::vector<int32_t> packed;
  cuda::DeviceAttentionBatch db;
  db.layout = cuda::pack_attention_batch(batch, &packed);
  db.block_size = block_size;
  int32_t* dpacked = nullptr;
  CHECK_CUDA(cudaMalloc(&dpacked, packed.size() * sizeof(int32_t)));
  CHECK_CUDA(cudaMemcpy(dpacked, packed.data(), packed.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  db.data = dpacked;
  return db;
}

struct Row {
  std::string name;
  double us;
  std::string metric;
};

// One sequence (or n_seqs sequences of one token each) over a shuffled paged cache.
struct AttentionCase {
  std::string name;
  int32_t n_seqs = 1, rows = 1, ctx = 4096;  // rows: new tokens per sequence, ctx: total length after them
  bool prefill = false;
  cuda::AttentionKernel kernel = cuda::AttentionKernel::kAuto;
};

Row run_attention(const AttentionCase& c, Timer& timer) {
  constexpr int32_t H = 32, KV = 8, D = 128, BS = 16;
  const int32_t blocks_per_seq = (c.ctx + BS - 1) / BS;
  const int32_t n_blocks = blocks_per_seq * c.n_seqs;
  std::mt19937 rng(1);
  std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(c.n_seqs));
  std::vector<AttentionSequence> seqs;
  std::vector<int32_t> tseq, tslot;
  for (int32_t s = 0; s < c.n_seqs; ++s) {
    tables[s].assign(perm.begin() + s * blocks_per_seq, perm.begin() + (s + 1) * blocks_per_seq);
    seqs.push_back({tables[s], c.ctx, AttentionMask::kCausal, 0});
    for (int32_t r = 0; r < c.rows; ++r) {
      tseq.push_back(s);
      tslot.push_back(c.ctx - c.rows + r);
    }
  }
  const AttentionBatch batch{seqs, tseq, tslot, tslot, {}};
  const cuda::DeviceAttentionBatch db = upload_batch(batch, n_blocks, BS);
  const int64_t T = batch.n_tokens();
  const size_t cache_elems = static_cast<size_t>(n_blocks) * BS * KV * D;
  __half *k = nullptr, *v = nullptr;
  float *q = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&k, cache_elems * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&v, cache_elems * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&q, T * H * D * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, T * H * D * sizeof(float)));
  fill_f16<<<1024, 256>>>(k, cache_elems, 1);
  fill_f16<<<1024, 256>>>(v, cache_elems, 2);
  fill_f32<<<1024, 256>>>(q, T * H * D, 3);
  cuda::AttentionLaunch launch;
  launch.n_head = H;
  launch.n_head_kv = KV;
  launch.head_dim = D;
  launch.max_ctx = c.ctx;
  launch.kernel = c.kernel;
  const size_t ws_bytes = cuda::attention_workspace_bytes(db, launch);
  void* ws = nullptr;
  if (ws_bytes) CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
  const double ms = timer.median_ms([&] { CHECK_OK(cuda::attention(q, H * D, k, v, db, launch, out, ws, ws_bytes, nullptr)); });
  char metric[128];
  if (c.prefill) {
    double pairs = 0;  // visible (query, key) pairs
    for (int64_t t = 0; t < T; ++t) pairs += tslot[t] + 1;
    const double tflops = 4.0 * D * H * pairs / (ms * 1e-3) / 1e12;
    std::snprintf(metric, sizeof(metric), "%.1f TFLOP/s", tflops);
  } else {
    const double bytes = 2.0 * c.n_seqs * static_cast<double>(c.ctx) * KV * D * sizeof(__half);
    const double gbs = bytes / (ms * 1e-3) / 1e9;
    std::snprintf(metric, sizeof(metric), "%.0f GB/s (%.0f%% of 4.28 TB/s)", gbs, 100.0 * gbs * 1e9 / kPeakBytesPerSecond);
  }
  cudaFree(ws);
  cudaFree(k);
  cudaFree(v);
  cudaFree(q);
  cudaFree(out);
  cudaFree(const_cast<int32_t*>(db.data));
  return {c.name, ms * 1e3, metric};
}

std::string gbs(double bytes, double ms) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.0f GB/s", bytes / (ms * 1e-3) / 1e9);
  return b;
}

std::vector<Row> run_layer_ops(Timer& timer, bool quick) {
  std::vector<Row> rows;
  constexpr int64_t kHidden = 4096, kFfn = 12288;
  constexpr int32_t kHeads = 32, kKvHeads = 8, kHeadDim = 128;
  for (int64_t T : quick ? std::vector<int64_t>{1, 2048} : std::vector<int64_t>{1, 64, 2048, 8192}) {
    float *x = nullptr, *w = nullptr, *qkv = nullptr, *gu = nullptr, *h = nullptr;
    int32_t* pos = nullptr;
    const int64_t qkv_stride = (kHeads + 2 * kKvHeads) * kHeadDim;
    CHECK_CUDA(cudaMalloc(&x, T * kHidden * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&w, kHidden * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&qkv, T * qkv_stride * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&gu, T * 2 * kFfn * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&h, T * kFfn * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&pos, T * sizeof(int32_t)));
    fill_f32<<<1024, 256>>>(x, T * kHidden, 4);
    fill_f32<<<1024, 256>>>(w, kHidden, 5);
    fill_f32<<<1024, 256>>>(qkv, T * qkv_stride, 6);
    fill_f32<<<1024, 256>>>(gu, T * 2 * kFfn, 7);
    CHECK_CUDA(cudaMemset(pos, 0, T * sizeof(int32_t)));
    const std::string tn = " T=" + std::to_string(T);
    double ms = timer.median_ms([&] { CHECK_OK(cuda::rms_norm(x, w, x, T, kHidden, 1e-6f, false, nullptr)); });
    rows.push_back({"rms_norm 4096" + tn, ms * 1e3, gbs(2.0 * T * kHidden * 4, ms)});
    cuda::RopeConfig rc;
    rc.theta_base = 1e6f;
    ms = timer.median_ms([&] {
      CHECK_OK(cuda::head_norm_rope(qkv, T, qkv_stride, kHeads, kHeadDim, w, 1e-6f, false, pos, rc, nullptr));
      CHECK_OK(cuda::head_norm_rope(qkv + kHeads * kHeadDim, T, qkv_stride, kKvHeads, kHeadDim, w, 1e-6f, false, pos, rc,
                                    nullptr));
    });
    rows.push_back({"head_norm_rope q+k" + tn, ms * 1e3, gbs(2.0 * T * (kHeads + kKvHeads) * kHeadDim * 4, ms)});
    {
      // The fused q/k norm + rope + kv write against the three ops it replaces, over T tokens of one
      // sequence (block size 16, identity block table).
      constexpr int32_t BS = 16;
      const int32_t n_blocks = static_cast<int32_t>((T + BS - 1) / BS);
      std::vector<int32_t> table(static_cast<size_t>(n_blocks));
      std::iota(table.begin(), table.end(), 0);
      std::vector<int32_t> slots(static_cast<size_t>(T));
      std::iota(slots.begin(), slots.end(), 0);
      const std::vector<AttentionSequence> seqs = {{table, static_cast<int32_t>(T), AttentionMask::kCausal, 0}};
      const std::vector<int32_t> tseq(static_cast<size_t>(T), 0);
      const AttentionBatch batch{seqs, tseq, slots, slots, {}};
      const cuda::DeviceAttentionBatch db = upload_batch(batch, n_blocks, BS);
      const size_t cache_elems = static_cast<size_t>(n_blocks) * BS * kKvHeads * kHeadDim;
      __half *kc = nullptr, *vc = nullptr;
      CHECK_CUDA(cudaMalloc(&kc, cache_elems * sizeof(__half)));
      CHECK_CUDA(cudaMalloc(&vc, cache_elems * sizeof(__half)));
      const double bytes = static_cast<double>(T) * ((2.0 * (kHeads + kKvHeads) + kKvHeads) * kHeadDim * 4 +
                                                     2.0 * kKvHeads * kHeadDim * 2);
      ms = timer.median_ms([&] {
        CHECK_OK(cuda::head_norm_rope(qkv, T, qkv_stride, kHeads, kHeadDim, w, 1e-6f, false, pos, rc, nullptr));
        CHECK_OK(cuda::head_norm_rope(qkv + kHeads * kHeadDim, T, qkv_stride, kKvHeads, kHeadDim, w, 1e-6f, false, pos,
                                      rc, nullptr));
        CHECK_OK(cuda::kv_write(qkv + kHeads * kHeadDim, qkv + (kHeads + kKvHeads) * kHeadDim, qkv_stride, kc, vc, db,
                                kKvHeads, kHeadDim, nullptr));
      });
      rows.push_back({"norm_rope q+k, kv_write (3 ops)" + tn, ms * 1e3, gbs(bytes, ms)});
      ms = timer.median_ms([&] {
        CHECK_OK(cuda::qk_norm_rope_kv_write(qkv, qkv_stride, kHeads, kKvHeads, kHeadDim, nullptr, w, w, 1e-6f, false,
                                             pos, rc, kc, vc, db, nullptr));
      });
      rows.push_back({"qk_norm_rope_kv_write fused" + tn, ms * 1e3, gbs(bytes, ms)});
      cudaFree(kc);
      cudaFree(vc);
      cudaFree(const_cast<int32_t*>(db.data));
    }
    ms = timer.median_ms([&] { CHECK_OK(cuda::swiglu(gu, gu + kFfn, 2 * kFfn, h, T, kFfn, nullptr)); });
    rows.push_back({"swiglu 12288" + tn, ms * 1e3, gbs(3.0 * T * kFfn * 4, ms)});
    cudaFree(x);
    cudaFree(w);
    cudaFree(qkv);
    cudaFree(gu);
    cudaFree(h);
    cudaFree(pos);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, memset_flush = false;
  std::string match;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--memset-flush") == 0) {
      memset_flush = true;
    } else if (std::strcmp(argv[i], "--match") == 0 && i + 1 < argc) {
      match = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--match TEXT] [--memset-flush]\n", argv[0]);
      return 2;
    }
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  using K = cuda::AttentionKernel;
  Timer timer;
  timer.memset_flush = memset_flush;
  if (quick) timer.warmup = 2, timer.runs = 20;

  // Names without a kernel run the automatic choice (the tensor-core kernel on fixed 128-key slices for
  // decode and verify, tiled for prefill; SAKER_CUDA_ATTENTION=grid gives the previous, batch-dependent
  // choice: split-K for 1-7 rows at GQA 4, the verify kernel for 8-64 rows); the others force one.
  std::vector<AttentionCase> cases = {
      {"decode 1 tok ctx 4096", 1, 1, 4096, false},
      {"decode 1 tok ctx 4096 warp", 1, 1, 4096, false, K::kWarpDecode},
      {"decode 1 tok ctx 512", 1, 1, 512, false},
      {"decode 1 tok ctx 512 warp", 1, 1, 512, false, K::kWarpDecode},
      {"decode 1 tok ctx 8192", 1, 1, 8192, false},
      {"decode 1 tok ctx 8192 warp", 1, 1, 8192, false, K::kWarpDecode},
      {"decode 4 rows ctx 4096", 1, 4, 4096, false},
      {"decode 16 rows ctx 4096", 1, 16, 4096, false},
      {"decode 16 rows ctx 4096 decode-k", 1, 16, 4096, false, K::kDecode},
      {"decode 16 rows ctx 4096 split-K", 1, 16, 4096, false, K::kSplitK},
      {"decode 16 rows ctx 512", 1, 16, 512, false},
      {"decode 16 rows ctx 1024", 1, 16, 1024, false},
      {"verify 64 rows ctx 512", 1, 64, 512, false},
      {"decode 1 tok ctx 32768", 1, 1, 32768, false},
      {"decode 1 tok ctx 32768 warp", 1, 1, 32768, false, K::kWarpDecode},
      {"decode 16 rows ctx 32768", 1, 16, 32768, false},
      {"decode 32 seqs x ctx 4096", 32, 1, 4096, false},
      {"decode 32 seqs x ctx 4096 warp", 32, 1, 4096, false, K::kWarpDecode},
      {"verify 64 rows ctx 4096", 1, 64, 4096, false},
      {"verify 64 rows ctx 4096 tiled", 1, 64, 4096, false, K::kTiled},
      {"verify 64 rows ctx 4096 split-K", 1, 64, 4096, false, K::kSplitK},
      {"prefill causal 2048", 1, 2048, 2048, true},
      {"prefill causal 2048 tiled-pair", 1, 2048, 2048, true, K::kTiledPair},
      {"prefill causal 8192", 1, 8192, 8192, true},
      {"prefill causal 8192 tiled-pair", 1, 8192, 8192, true, K::kTiledPair},
      {"prefill causal 2048 split-K f32", 1, 2048, 2048, true, K::kSplitK},
  };
  if (quick && match.empty()) {
    // Each quick case by name, so the list above can grow.
    const char* quick_names[] = {"decode 1 tok ctx 4096", "decode 1 tok ctx 4096 warp", "decode 1 tok ctx 512",
                                 "decode 1 tok ctx 512 warp", "decode 1 tok ctx 8192", "decode 1 tok ctx 8192 warp",
                                 "decode 4 rows ctx 4096", "decode 16 rows ctx 4096", "decode 1 tok ctx 32768",
                                 "decode 1 tok ctx 32768 warp", "decode 32 seqs x ctx 4096",
                                 "decode 32 seqs x ctx 4096 warp", "verify 64 rows ctx 4096", "prefill causal 2048"};
    std::vector<AttentionCase> picked;
    for (const char* n : quick_names) {
      for (const AttentionCase& c : cases) {
        if (c.name == std::string(n)) picked.push_back(c);
      }
    }
    cases = picked;
  }
  if (!match.empty()) {
    std::erase_if(cases, [&](const AttentionCase& c) { return c.name.find(match) == std::string::npos; });
  }
  std::vector<Row> rows;
  for (const AttentionCase& c : cases) {
    rows.push_back(run_attention(c, timer));
    std::printf("%-30s %10.1f us  %s\n", rows.back().name.c_str(), rows.back().us, rows.back().metric.c_str());
    std::fflush(stdout);
  }
  for (const Row& r : match.empty() ? run_layer_ops(timer, quick) : std::vector<Row>{}) {
    rows.push_back(r);
    std::printf("%-30s %10.1f us  %s\n", r.name.c_str(), r.us, r.metric.c_str());
  }
  std::printf("\n| case | median us | rate |\n|---|---:|---|\n");
  for (const Row& r : rows) std::printf("| %s | %.1f | %s |\n", r.name.c_str(), r.us, r.metric.c_str());
  return 0;
}
