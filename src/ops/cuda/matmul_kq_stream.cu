// The one- and two-row K-quant matmul on Hopper, with the weights streamed through shared memory: the dp4a
// kernel's arithmetic (kq_dp4a_units.cuh, so the same bits), but each warp's weight bytes arrive by bulk copies
// (cp.async.bulk, one instruction of lane 0 a stage) into a ring of kStages stages of its own, issued
// kStages - 1 chunks ahead of the one it computes. The dp4a kernel loads a row's units into registers and
// waits on their DRAM latency before it can ask for more, with a few KB a warp in flight and a new block per
// four rows; here the blocks stay resident (a persistent grid: warp g takes rows g, g + warps, ...) and every
// warp keeps up to kStages chunks of weights in flight while it computes, so the copy engine, not the warps'
// issue, keeps DRAM busy. The first chunks go out before the kernel's chained-launch wait (weights only), so
// they load while the kernel before it finishes.
//
// A stage holds one chunk: kChunkBlocks consecutive weight blocks of one row (the row's last chunk may be
// shorter). A bulk copy needs 16-byte aligned addresses and a size of whole 16-byte units: rows of a multiple
// of 16 bytes from a 16-byte aligned matrix (every Q4_K / Q5_K row; Q6_K rows of a multiple of 2,048 elements)
// qualify; the launcher sends the rest to the dp4a kernel.
#include <cuda_runtime.h>

#include <atomic>
#include <type_traits>

#include "core/env.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/chained_launch.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_dp4a_units.cuh"
#include "ops/cuda/resident_blocks.h"
#include "ops/cuda/tma.cuh"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

constexpr int kStreamWarps = 8;   // warps a block, each with its own ring (no block-wide barrier)
constexpr int kStages = 3;        // chunks a warp has in flight or in hand
constexpr int kChunkBlocks = 16;  // weight blocks a chunk: 2,304 / 2,816 / 3,360 bytes (Q4_K / Q5_K / Q6_K)

template <DType T>
constexpr int kChunkBytes = kChunkBlocks* dp4a::Dp4aFmt<T>::kBlockBytes;
// The stages of every warp, then each warp's kStages mbarriers. Q4_K 55.5 KB (three blocks an SM), Q5_K 67.8 KB
// (three), Q6_K 80.8 KB (two).
template <DType T>
constexpr int kSmemBytes = (kChunkBytes<T> + 8) * kStages* kStreamWarps;

// One warp's ring: its stages and barriers in the block's shared memory and its work items, item j being chunk
// j % chunks of row gw + (j / chunks) * n_warps (warp gw of n_warps in the grid). Built from indices and
// parameters only, so a kernel may build it before its wait.
template <DType T>
struct WarpRing {
  using F = dp4a::Dp4aFmt<T>;
  uint8_t* stages;
  uint64_t* bars;
  const uint8_t* w;
  int64_t row_bytes, gw, n_warps, items;
  int n_blocks, chunks;

  __device__ __forceinline__ static WarpRing of(const uint8_t* w, int64_t row_bytes, int64_t n_out, int n_blocks,
                                                int chunks) {
    extern __shared__ __align__(128) uint8_t smem[];
    const int warp = static_cast<int>(threadIdx.x >> 5);
    WarpRing r;
    r.stages = smem + warp * kStages * kChunkBytes<T>;
    r.bars = reinterpret_cast<uint64_t*>(smem + kStreamWarps * kStages * kChunkBytes<T>) + warp * kStages;
    r.w = w;
    r.row_bytes = row_bytes;
    r.n_warps = static_cast<int64_t>(gridDim.x) * kStreamWarps;
    r.gw = static_cast<int64_t>(blockIdx.x) * kStreamWarps + warp;
    r.items = r.gw < n_out ? ((n_out - 1 - r.gw) / r.n_warps + 1) * chunks : 0;
    r.n_blocks = n_blocks;
    r.chunks = chunks;
    return r;
  }
  __device__ __forceinline__ int64_t row(int64_t j) const { return gw + (j / chunks) * n_warps; }
  __device__ __forceinline__ const uint8_t* stage(int64_t j) const {
    return stages + static_cast<int>(j % kStages) * kChunkBytes<T>;
  }
  // Lane 0: item j's chunk into stage j % kStages, its bytes counted on that stage's barrier. The stage was last
  // read by item j - kStages, which every lane finished before the __syncwarp that precedes this.
  __device__ __forceinline__ void issue(int64_t j) const {
    const int b0 = static_cast<int>(j % chunks) * kChunkBlocks;
    const int nb = min(kChunkBlocks, n_blocks - b0);
    const uint32_t bytes = static_cast<uint32_t>(nb * F::kBlockBytes);
    const int s = static_cast<int>(j % kStages);
    fence_proxy_async_smem();
    mbar_arrive_expect_tx(bars + s, bytes);
    bulk_load_1d(stages + s * kChunkBytes<T>, w + row(j) * row_bytes + static_cast<int64_t>(b0) * F::kBlockBytes, bytes,
                 bars + s);
  }
};

// What the kernel does before its wait (chained_launch.cuh allows weights only): lane 0 initialises the warp's
// barriers and sends its first kStages chunks, which read weights into the block's own shared memory, so
// their DRAM time overlaps the kernel this one waits for. The other lanes wait on the barriers after a
// __syncwarp.
template <DType T>
__device__ __forceinline__ void stage_weights_early(const WarpRing<T>& ring) {
  if (ring.items == 0 || (threadIdx.x & 31) != 0) return;
  for (int s = 0; s < kStages; ++s) mbar_init(ring.bars + s, 1);
  mbar_init_fence();
  for (int64_t j = 0; j < kStages && j < ring.items; ++j) ring.issue(j);
}

template <DType T, int R>
__global__ void __launch_bounds__(kStreamWarps * 32, 3)  // three blocks an SM where shared memory allows
    kq_stream_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_out, int n_blocks,
                     const int8_t* __restrict__ xq,   // [rows, n_in] codes
                     const KxBlock* __restrict__ kx,  // [rows, n_blocks]
                     int64_t n_in, int rows, float* __restrict__ out, int64_t out_stride, int accumulate,
                     int chunks) {  // chunks a row: ceil(n_blocks / kChunkBlocks)
  const WarpRing<T> ring = WarpRing<T>::of(w, row_bytes, n_out, n_blocks, chunks);
  stage_weights_early(ring);
  chain_in();
  if (ring.items == 0) return;  // whole warp (nothing below waits for other warps)
  __syncwarp();                 // lane 0's barrier initialisation before the others wait on them
  const int lane = threadIdx.x & 31;
  dp4a::RowAcc<R> acc(rows);
  const int grp = lane >> 3, unit = lane & 7;
  for (int64_t j = 0; j < ring.items; ++j) {
    const int c = static_cast<int>(j % chunks);
    const int b0 = c * kChunkBlocks, b_end = min(b0 + kChunkBlocks, n_blocks);
    mbar_wait(ring.bars + static_cast<int>(j % kStages), static_cast<uint32_t>(j / kStages) & 1u);
    dp4a::row_span<T, q8::SharedBytes, R>(ring.stage(j), b0, grp, unit, b0 / 4, b_end, xq, kx, n_in, n_blocks, acc);
    __syncwarp();
    if (lane == 0 && j + kStages < ring.items) ring.issue(j + kStages);
    if (c == chunks - 1) {
      dp4a::row_finish<R>(acc, lane, rows, ring.row(j), out, out_stride, accumulate);
      acc.reset();
    }
  }
}

// Blocks of one instantiation resident on a device at once (the persistent grid), after raising its shared
// memory limit; computed once per device.
template <DType T, int R>
Result<int64_t> stream_blocks(int device) {
  static std::atomic<int64_t> cache[64] = {};
  return once_per_device(cache, device, [&]() -> Result<int64_t> {
    SAKER_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kq_stream_kernel<T, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<T>));
    return resident_blocks(kq_stream_kernel<T, R>, kStreamWarps * 32, kSmemBytes<T>, device);
  });
}

template <DType T>
Status launch_stream_for(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                         int64_t out_stride, bool accumulate, cudaStream_t stream) {
  int device = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int n_blocks = static_cast<int>(w.n_in / kq::kBlock);
  const int chunks = (n_blocks + kChunkBlocks - 1) / kChunkBlocks;
  const int64_t wanted = (w.n_out + kStreamWarps - 1) / kStreamWarps;
  auto launch = [&](auto r) -> Status {
    constexpr int R = decltype(r)::value;
    SAKER_ASSIGN_OR_RETURN(const int64_t resident, (stream_blocks<T, R>(device)));
    const int64_t grid = wanted < resident ? wanted : resident;
    launch_chained(kq_stream_kernel<T, R>, static_cast<unsigned>(grid), kStreamWarps * 32, kSmemBytes<T>, stream, wp,
                   matrix_row_bytes(w), w.n_out, n_blocks, xq, kx, w.n_in, static_cast<int>(rows), out, out_stride,
                   accumulate ? 1 : 0, chunks);
    SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status{};
  };
  static_assert(kKqDp4aMaxRows <= 2, "row tiles of the streaming kernel");
  if (rows == 1) return launch(std::integral_constant<int, 1>{});
  return launch(std::integral_constant<int, 2>{});
}

// SAKER_CUDA_MATMUL=kqstream selects the streaming kernel (opt-in until measured against the dp4a kernel).
bool kq_stream_enabled() {
  static const bool on = cuda_matmul_is("kqstream");
  return on;
}

}  // namespace

bool kq_stream_takes(const DeviceMatrix& w, int64_t rows) {
  if (!kq_stream_enabled() || rows < 1 || rows > kKqDp4aMaxRows) return false;
  if (w.type != DType::kQ4_K && w.type != DType::kQ5_K && w.type != DType::kQ6_K) return false;
  if (w.n_in % kq::kBlock != 0 || matrix_row_bytes(w) % 16 != 0 || (reinterpret_cast<uintptr_t>(w.data) & 15) != 0) {
    return false;
  }
  int device = 0;
  return cudaGetDevice(&device) == cudaSuccess && hopper_code_on(device);
}

Status launch_kq_stream(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                        int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ4_K:
      return launch_stream_for<DType::kQ4_K>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K:
      return launch_stream_for<DType::kQ5_K>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K:
      return launch_stream_for<DType::kQ6_K>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    default:
      return make_error(StatusCode::kUnsupported, "cuda matmul: no streaming kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
