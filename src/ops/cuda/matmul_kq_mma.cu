// The K-quant decode and verify matmul (Q4_K, Q5_K, Q6_K weights, 1-64 activation rows; also Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL and IQ4_XS in contexts that ask for width invariance, q32_layout.h) on int8 tensor
// cores, in the canonical order of kq_canon.h, so a row's output bits do not depend on the row count:
//   1. kx_quantize_kernel (matmul_kq.cu): x [rows, n_in] f32 -> int8 codes + one KxBlock per 256 elements;
//   2. kq_mma_kernel: a block of eight warps owns 16 output rows; warp w is stream w of the canonical sum and
//      takes weight blocks w, w + 8, ... Each warp copies its next blocks' 16 weight rows (and, for the
//      K-quants, the block's activation codes) into its own shared-memory stages (two or three deep, no
//      block-wide barrier; on Hopper one lane's two TMA copies a stage, tma.cuh, else cp.async), then reads its lanes'
//      fragments of the codes from there, multiplies them with every 8-row n-tile of activation codes by mma.sync
//      (m16n8k32 for Q4_K / Q5_K sub-blocks of 32, m16n8k16 for Q6_K's of 16) into the exact int32 sums T and M (Q4_K /
//      Q5_K: each sub-block's scale and min ride in the A fragment and the MMAs accumulate the whole block; Q6_K and
//      the other formats fold each sub-block's sum with its scale; kq_mma_formats.cuh), and adds the block's value to
//      its stream. The eight streams meet in shared memory in the canonical tree.
// Each weight byte is read from DRAM once per call; the codes of x (1 byte an element) are re-read from L2 by
// every block of output rows: at 16 rows they are the larger stream (16 x 256 bytes a block against 16 x 144
// of Q4_K weights), and an MMA waiting for its activation operand loaded just before it was the kernel's
// largest stall (ncu), hence the staging that runs them ahead with the weights.
// Why the stages: the previous version loaded each lane's fragments straight into registers (8-byte loads,
// one block ahead); at 16 rows it took 174 registers a thread, one block of eight warps fitted an SM, and
// each warp waited out every load (16 rows cost 2.6x one row in a decode step). With the weights in shared
// memory a thread holds its accumulators, a block's row headers and a few sub-blocks' operands (118-128
// registers; Q6_K at 16 rows still spills a few bytes under the two-blocks-an-SM bound). Measured on the
// H200, the kernel is latency-bound on fragment load -> MMA -> scale fold, not bandwidth-bound
// (docs/performance.md).
#include <cuda_runtime.h>

#include <atomic>
#include <string>
#include <type_traits>

#include "core/env.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cp_async.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/kq_mma_formats.cuh"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/q32_layout.h"
#include "ops/cuda/resident_blocks.h"
#include "ops/cuda/tensor_map.h"
#include "ops/cuda/tma.cuh"

namespace saker::cuda::detail {
namespace {

constexpr int kKqWarps = kq::kStreams;
// Stages a warp cycles through: S - 1 blocks copying while it computes one. Three where the device's
// shared memory per block allows (the H200's 227 KB); two on devices with 99 KB a block (sm_86 / sm_89), where
// three stages of Q5_K / Q6_K rows with the 16-row slots do not fit.
constexpr int kMaxStages = 3;

// A stage: the block's 16 weight rows (kRowStride apart), then with kXs its 8 NT activation rows (XStaged).
template <class F, int NT, bool kXs>
constexpr int kStageBytes = 16 * F::kRowStride + (kXs ? 8 * NT * kq::kBlock : 0);
// Reduction buffers [kKqWarps][NT * 4][32] f32: two (alternate units, one barrier a unit), or one with staged
// activations (a second barrier a unit), whose stages would otherwise leave room for one block an SM.
template <bool kXs>
constexpr int kRedBuffers = kXs ? 1 : 2;
// The warps' stages, then (kTma) one mbarrier a stage, then the reduction buffers. With kTma the stages'
// activation parts come first, each on a 1024-byte boundary (the TMA's 128-byte swizzle), then their weight
// parts: the same bytes, two regions.
template <class F, int NT, int S, bool kXs, bool kTma = false>
constexpr int kSmemBytes = (kKqWarps * S) * kStageBytes<F, NT, kXs> + (kTma ? kKqWarps * S * 8 : 0) +
                           (kKqWarps * NT * 4 * 32 * 4) * kRedBuffers<kXs>;

// The kernel's dynamic shared memory (declared once for every instantiation, so that the weight prefetch
// before the chained-launch wait can address it too).
extern __shared__ __align__(1024) uint8_t kq_mma_smem[];

// Where warp `warp`'s stage st and barriers lie in kq_mma_smem (kSmemBytes' layout): without kTma, stage st is
// its weight rows then its activation rows; with kTma, every stage's activation part comes first (1024-byte
// aligned for the swizzle), then the weight parts.
template <class F, int NT, int kStages, bool kXs, bool kTma>
struct KqMmaSmem {
  static constexpr int kStage = kStageBytes<F, NT, kXs>;
  static constexpr int kXBytes = 8 * NT * kq::kBlock;  // kTma: a stage's activation part
  static constexpr int kWBytes = 16 * F::kRowStride;   // its weight part
  __device__ __forceinline__ static uint8_t* w_stage(int warp, int st) {
    if constexpr (kTma) return kq_mma_smem + kKqWarps * kStages * kXBytes + (warp * kStages + st) * kWBytes;
    return kq_mma_smem + (warp * kStages + st) * kStage;
  }
  __device__ __forceinline__ static uint8_t* x_stage(int warp, int st) {
    if constexpr (kTma) return kq_mma_smem + (warp * kStages + st) * kXBytes;
    return kq_mma_smem + (warp * kStages + st) * kStage + 16 * F::kRowStride;
  }
  __device__ __forceinline__ static uint64_t* bars(int warp) {
    return reinterpret_cast<uint64_t*>(kq_mma_smem + kKqWarps * kStages * kStage) + warp * kStages;
  }
  __device__ __forceinline__ static float* red() {
    return reinterpret_cast<float*>(kq_mma_smem + kKqWarps * kStages * kStage + (kTma ? kKqWarps * kStages * 8 : 0));
  }
};

// Before the chained-launch wait (kTma): lane 0 of each warp readies its stage barriers and starts the TMA copy
// of its first block's weight rows (weights never depend on the kernel before), counting that stage's
// activation bytes too, which the first issue() copies after the wait. So the weights' DRAM latency passes
// under the previous kernel, as the one-row lane kernel's first stage does (prefetch_weights_smem).
// A no-op without kTma.
template <class L, class F, bool kTma>
__device__ __forceinline__ void prefetch_weights_tma(const CUtensorMap* tw, int warp, int my_blocks, int first_tile) {
  if constexpr (!kTma) return;
  if ((threadIdx.x & 31) == 0) {
    if ((smem_addr(kq_mma_smem) & 1023) != 0) __trap();  // the swizzle's lines would not be the rows' halves
    uint64_t* bars = L::bars(warp);
#pragma unroll
    for (int st = 0; st < 2; ++st) mbar_init(bars + st, 1);
    mbar_init_fence();
    fence_proxy_async_smem();  // as before each later copy (the TMA guide's order after an mbarrier init)
    if (my_blocks > 0 && first_tile >= 0) {
      mbar_arrive_expect_tx(bars, L::kWBytes + L::kXBytes);
      tma_load_2d(L::w_stage(warp, 0), tw, (warp * F::kBlockBytes) & ~15, first_tile * 16, bars);
    }
  }
  __syncwarp();
}

// A unit of work is 16 output rows (a weight tile) times one group of 8 NT activation rows; unit u is tile
// u / n_groups, group u % n_groups, so the groups of one tile run side by side and all but the first read
// its bytes from L2. (One block taking every group of 64 rows held 32 accumulators and the operands of
// several n-tiles in flight: more than 128 registers, spilled.)
// The kernel is persistent: block x takes units x, x + gridDim.x, ..., and each warp's copies run ahead
// across unit boundaries, so DRAM keeps streaming while the warps finish a unit and meet in its reduction.
// (One unit a block measured no faster than the register-fed kernel before it: with two weight blocks per
// warp at n_in 4096, every wave loaded, then computed, then reduced.)
// kTma (Hopper; with kXs): lane 0 stages a block with two TMA copies, the 16 weight rows as one box of tw
// (kRowStride bytes of each row from the 16-byte boundary at or below the block: the stage's layout) and the
// 8 NT activation rows as one box of tx (XTma), both counted on the stage's mbarrier; tw and tx are unused
// otherwise.
// Two blocks an SM up to 16 activation rows a unit; one for 32 (calls of 17-64 rows), whose stages and
// accumulators would not fit twice.
template <class F, int NT, int kStages, bool kXs, bool kTma = false>
__global__ void __launch_bounds__(kKqWarps * 32, NT >= 4 ? 1 : 2)
    kq_mma_kernel(const __grid_constant__ CUtensorMap tw, const __grid_constant__ CUtensorMap tx,
                  const uint8_t* __restrict__ w,  // [n_out, row_bytes] GGUF blocks
                  int64_t row_bytes, int64_t n_out, int n_blocks,
                  const int8_t* __restrict__ xq,   // [rows, n_in] codes
                  const KxBlock* __restrict__ kx,  // [rows, n_blocks]
                  int64_t n_in, int rows, int n_groups, int n_units, float* __restrict__ out, int64_t out_stride,
                  int accumulate,
                  int tail_subs,  // 32-element sub-blocks of a row's last block (8 if whole)
                  int release) {  // let the next chained kernel launch right after the wait (kq_release_early)
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int my_blocks = warp < n_blocks ? (n_blocks - warp + kKqWarps - 1) / kKqWarps : 0;
  const int first_tile = static_cast<int>(blockIdx.x) < n_units ? static_cast<int>(blockIdx.x) / n_groups : -1;
  prefetch_weights_tma<KqMmaSmem<F, NT, kStages, kXs, kTma>, F, kTma>(&tw, warp, my_blocks, first_tile);
  chain_in_late();
  if (release) chain_release();
  static_assert(!kTma || kXs, "the TMA path stages the activations");
  static_assert(!kTma || kStages == 2, "prefetch_weights_tma readies two stages");
  using L = KqMmaSmem<F, NT, kStages, kXs, kTma>;
  constexpr int kStage = L::kStage;
  constexpr int kXBytes = L::kXBytes;
  constexpr int kWBytes = L::kWBytes;
  uint8_t* stages = kq_mma_smem + warp * (kStages * kStage);
  uint64_t* bars = L::bars(warp);
  float* red = L::red();
  // Stage s of this warp: its weight rows and its activation rows.
  auto w_stage = [&](int st) -> uint8_t* { return L::w_stage(warp, st); };
  auto x_stage = [&](int st) -> uint8_t* { return L::x_stage(warp, st); };
  // Rows past n_out re-read the last row of the matrix (their results are never written).
  auto row_ptr = [&](int tile, int r) {
    const int64_t o = static_cast<int64_t>(tile) * 16 + r;
    return w + (o < n_out ? o : n_out - 1) * row_bytes;
  };

  // The copy cursor: the next (unit, block) this warp stages. Lane l copies chunks l & 1, (l & 1) + 2, ...
  // of row l >> 1, so each copy instruction reads 32 contiguous bytes of every row; with kXs, lane l copies
  // chunk l & 15 of activation rows (l >> 4) + 2k. What depends on the unit only (its weight rows, its first
  // activation row) is set when the cursor enters it: a copy is then address arithmetic and the copies
  // themselves (a division and the 64-bit row products at every copy were 180 of the 636 instructions of
  // a 16-row Q4_K block step; without them ~550). Measured no faster (H100, 16-64 rows within noise): the
  // warps wait on their stages' copies, not on issue (docs/performance.md).
  int copy_unit = blockIdx.x;
  int copy_i = 0, copy_n = 0;  // block index within the unit; items issued so far
  const uint8_t* copy_w = nullptr;  // this lane's weight row of the unit's tile, at the warp's first block
  const int8_t* copy_x = nullptr;   // kXs: this lane's activation chunk (lane & 15) of row copy_x_row
  int copy_x_row = 0;               // kXs: the unit's activation row for k = 0 (first + (lane >> 4))
  bool copy_x_whole = false;        // kXs: all 8 NT rows of the unit lie inside the call (warp-uniform)
  int copy_tile = 0, copy_first = 0;  // kTma: the unit's weight tile and first activation row
  auto enter_unit = [&]() {
    if (copy_unit >= n_units) return;
    const int tile = copy_unit / n_groups;
    copy_w = row_ptr(tile, lane >> 1) + static_cast<int64_t>(warp) * F::kBlockBytes;
    const int first = (copy_unit - tile * n_groups) * 8 * NT;
    copy_tile = tile;
    copy_first = first;
    copy_x_row = first + (lane >> 4);
    copy_x_whole = first + 8 * NT <= rows;
    copy_x = xq + static_cast<int64_t>(min(copy_x_row, rows - 1)) * n_in + 16 * (lane & 15);
  };
  enter_unit();
  auto issue = [&]() {
    if constexpr (kTma) {
      if (my_blocks > 0 && copy_unit < n_units) {
        if (lane == 0) {
          const int st = copy_n % kStages;
          const int b = warp + kKqWarps * copy_i;
          if (copy_n > 0) {            // the first block's weights went out before the wait (prefetch_weights_tma)
            fence_proxy_async_smem();  // the lanes' reads of this stage (ordered by the __syncwarp) come first
            mbar_arrive_expect_tx(bars + st, kWBytes + kXBytes);
            // A box's rows must start 16-byte aligned in global memory (Q6_K's 210-byte blocks do not): the
            // box starts at the boundary at or below the block, which then sits (b * 210) & 15 bytes in.
            tma_load_2d(w_stage(st), &tw, (b * F::kBlockBytes) & ~15, copy_tile * 16, bars + st);
          }
          tma_load_3d(x_stage(st), &tx, 0, 2 * b, copy_first, bars + st);
        }
        ++copy_n;
        if (++copy_i == my_blocks) {
          copy_i = 0;
          copy_unit += gridDim.x;
          enter_unit();
        }
      }
      return;
    }
    if (my_blocks > 0 && copy_unit < n_units) {
      const uint8_t* src = copy_w + static_cast<int64_t>(kKqWarps * F::kBlockBytes) * copy_i;
      src = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(src) & ~uintptr_t{15}) + 16 * (lane & 1);
      uint8_t* stage = stages + (copy_n % kStages) * kStage;
      uint8_t* dst = stage + (lane >> 1) * F::kRowStride + 16 * (lane & 1);
#pragma unroll
      for (int k = 0; k < (F::kChunks + 1) / 2; ++k) {
        if (2 * k + (lane & 1) < F::kChunks) cp_async16(dst + 32 * k, src + 32 * k);
      }
      if constexpr (kXs) {  // the block's 256 codes of the unit's 8 NT activation rows: 16 chunks a row
        const int c = lane & 15;
        const int64_t b_at = static_cast<int64_t>(warp + kKqWarps * copy_i) * kq::kBlock;
        const bool inside = b_at + 16 * c < n_in;  // else zero-filled, from any valid address
        uint8_t* xs = stage + 16 * F::kRowStride;
        if (copy_x_whole) {  // rows copy_x_row + 2k, a fixed stride apart
          const int8_t* from = copy_x + (inside ? b_at : 0);
#pragma unroll
          for (int k = 0; k < 4 * NT; ++k) {
            const int r = (lane >> 4) + 2 * k;  // the chunk's row in the stage
            cp_async16(xs + r * kq::kBlock + (XStaged::chunk_at(r, c) << 4), from + 2 * k * n_in, inside);
          }
        } else {  // the last group of rows: rows past the call's re-read its last
          const int8_t* from = xq + (inside ? b_at + 16 * c : 0);
#pragma unroll
          for (int k = 0; k < 4 * NT; ++k) {
            const int r = (lane >> 4) + 2 * k;
            const int src_row = min(copy_x_row + 2 * k, rows - 1);
            cp_async16(xs + r * kq::kBlock + (XStaged::chunk_at(r, c) << 4), from + src_row * n_in, inside);
          }
        }
      }
      ++copy_n;
      if (++copy_i == my_blocks) {
        copy_i = 0;
        copy_unit += gridDim.x;
        enter_unit();
      }
    }
    cp_async_commit();  // possibly empty: the group count stays uniform
  };
#pragma unroll
  for (int k = 0; k < kStages - 1; ++k) issue();

  int item = 0;  // items computed so far (stage item % kStages)
  int parity = 0;
  for (int unit = blockIdx.x; unit < n_units; unit += gridDim.x, parity ^= 1) {
    const int tile = unit / n_groups, first = (unit % n_groups) * 8 * NT;
    const int8_t* xq_u = xq + first * n_in;
    const KxBlock* kx_u = kx + first * n_blocks;
    const int rows_u = rows - first;
    // Where rows g and g + 8 start inside their staged chunks (0 for 16-byte-aligned blocks).
    const uintptr_t row_lo0 = reinterpret_cast<uintptr_t>(row_ptr(tile, g)) & 15;
    const uintptr_t row_lo1 = reinterpret_cast<uintptr_t>(row_ptr(tile, g + 8)) & 15;
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
    }
    for (int i = 0; i < my_blocks; ++i, ++item) {
      const int b = warp + kKqWarps * i;
      // The C columns' activation metadata (columns 2t, 2t + 1; rows past the call's read its last), from
      // L1 / L2: loaded first, so that their latency passes under the wait for the stage and the next copy's
      // issue (loaded right before the arithmetic, their first use was where the warps waited most after
      // the stage itself: ncu, H100; the move measured within noise: the wait for the stage is the larger).
      ColMeta col[NT][2];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        col[nt][0] = load_meta(kx_u + static_cast<int64_t>(min(nt * 8 + 2 * t, rows_u - 1)) * n_blocks + b);
        col[nt][1] = load_meta(kx_u + static_cast<int64_t>(min(nt * 8 + 2 * t + 1, rows_u - 1)) * n_blocks + b);
      }
      if constexpr (kTma) {
        mbar_wait(bars + item % kStages, (item / kStages) & 1);
      } else {
        cp_async_wait<kStages - 2>();
      }
      __syncwarp();  // every lane's copies of this block have landed, and every lane is done with block i - 1
      // The next copy goes out before this block's arithmetic, into the stage block i - 1 used, so that it
      // overlaps the arithmetic (issued after it, as before, a warp of two stages had no copy in flight
      // while it computed: the MMAs and the next block's DRAM latency took turns).
      issue();
      const uint8_t* st = w_stage(item % kStages);
      const uintptr_t boff = static_cast<uintptr_t>(b) * F::kBlockBytes;
      const uint8_t* s0 = st + g * F::kRowStride;
      const uint8_t* s1 = st + (g + 8) * F::kRowStride;
      // Where the block starts in its staged rows (the TMA box starts at the 16-byte boundary below the block;
      // the weight rows are 16-byte aligned there).
      const int at0 = static_cast<int>((kTma ? boff : row_lo0 + boff) & 15);
      const int at1 = static_cast<int>((kTma ? boff : row_lo1 + boff) & 15);
      const typename F::Hdr h0 = F::load_hdr(s0, at0, t), h1 = F::load_hdr(s1, at1, t);
      // B rows (column g of each n-tile).
      std::conditional_t<kTma, XTma, std::conditional_t<kXs, XStaged, XGlobal<NT>>> xb;
      if constexpr (kXs) {
        xb.rows = x_stage(item % kStages);
        xb.g = g;
      } else {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int brow = min(nt * 8 + g, rows_u - 1);
          xb.p[nt] = xq_u + static_cast<int64_t>(brow) * n_in + static_cast<int64_t>(b) * kq::kBlock;
        }
      }
      float v[NT][4];
      F::template block_values<NT>(h0, h1, s0, at0, s1, at1, xb, col, t, b == n_blocks - 1 ? tail_subs : 8, v);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] = kq::fadd(acc[nt][e], v[nt][e]);
      }
    }

    // The streams meet in the canonical tree ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) (kq_canon.h):
    // every warp leaves its stream in this unit's buffer, then warp w combines C slots w, w + 8, ... The
    // buffers alternate, so the next unit's stores never meet this unit's reads and one barrier suffices
    // (with one buffer, a second barrier keeps them apart).
    float* rb = red + (kRedBuffers<kXs> == 2 ? parity : 0) * (kKqWarps * NT * 4 * 32);
#pragma unroll
    for (int k = 0; k < NT * 4; ++k) rb[(warp * NT * 4 + k) * 32 + lane] = acc[k >> 2][k & 3];
    __syncthreads();
    for (int k = warp; k < NT * 4; k += kKqWarps) {
      float s[kKqWarps];
#pragma unroll
      for (int ws = 0; ws < kKqWarps; ++ws) s[ws] = rb[(ws * NT * 4 + k) * 32 + lane];
      const float y = kq::combine_streams(s);
      const int64_t o = static_cast<int64_t>(tile) * 16 + g + 8 * ((k & 3) >> 1);
      const int n = (k >> 2) * 8 + 2 * t + (k & 1);
      if (o < n_out && n < rows_u) {
        float* dst = out + static_cast<int64_t>(first + n) * out_stride + o;
        *dst = accumulate ? kq::fadd(*dst, y) : y;
      }
    }
    if constexpr (kRedBuffers<kXs> == 1) __syncthreads();
  }
}

// Resident blocks of one instantiation per SM on a device (for the persistent grid), after the shared-memory
// opt-in it needs above 48 KB (neither is a stream operation, so both are allowed while a graph is being
// captured; a shape also runs eagerly before capture).
template <class F, int NT, int S, bool kXs, bool kTma>
Result<int64_t> persistent_blocks(int device) {
  static std::atomic<int64_t> cache[64] = {};
  return once_per_device(cache, device, [&]() -> Result<int64_t> {
    constexpr int kSmem = kSmemBytes<F, NT, S, kXs, kTma>;
    SAKER_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kq_mma_kernel<F, NT, S, kXs, kTma>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    return resident_blocks(kq_mma_kernel<F, NT, S, kXs, kTma>, kKqWarps * 32, kSmem, device);
  });
}

// Formats whose activation codes are staged (the K-quants; the formats of width-invariant contexts read them
// through L1, not measured staged).
template <class F>
constexpr bool kStagedXFormat =
    std::is_same_v<F, KqMinFmt<false>> || std::is_same_v<F, KqMinFmt<true>> || std::is_same_v<F, KqQ6Fmt>;

// Whether the K-quants stage their activation codes with the weights (XStaged, two stages) where the device's
// shared memory allows; SAKER_CUDA_MATMUL=kql1 keeps them on L1 / L2 reads (XGlobal, three stages), to compare.
// Same bits either way. H100, 16 rows: Q6_K matmuls 19-23% faster, Q4_K 0-10%, an 8B Q4_K_M 16-row verify step
// 3-4% (docs/performance.md); three stages of both left one block an SM and measured slower. At 3-4 rows the
// staged copies are half padding and the L1 path's third stage hides more DRAM latency: an 8B Q4_K_M 4-row
// verify step took 4.59-4.65 ms on L1 against 5.00 staged (8 rows: 5.26-5.35 against 5.10-5.13), so calls of
// up to kL1MaxRows rows keep the L1 path where the stages are copied by cp.async. With TMA stages (below) a
// copy is one instruction, and 4 rows measured 3.87-3.92 ms staged against 4.66-4.70 on L1 (H100).
constexpr int64_t kL1MaxRows = 4;
bool kq_stage_activations() {
  static const bool staged = !cuda_matmul_is("kql1");
  return staged;
}

// The K-quants' calls of more than 16 rows take units of 32 activation rows (NT = 4, one block an SM: 176-183
// registers with TMA stages), so each A fragment built from the weights serves twice the rows. H100, 8B Q4_K_M
// verify steps after 512 tokens: 32 rows 8.02 / 7.71 ms against 8.80 / 8.78 with units of 16, 64 rows 16.09 /
// 16.61 against 17.74 / 17.98 (docs/performance.md). SAKER_CUDA_MATMUL=kqnt2 keeps units of 16, as do devices
// without TMA stages (not measured there). Same bits.
bool kq_nt4() {
  static const bool nt4 = !cuda_matmul_is("kqnt2");
  return nt4;
}

// Whether calls of up to 16 rows let the next chained kernel launch as soon as they pass their wait, as the
// other kernels do (SAKER_CUDA_MATMUL=kqearly, to measure), instead of as their blocks exit. Late was measured
// for 64 rows, where the waiting blocks of the next kernel fit beside the one-block-an-SM kernel and slowed
// it ~10% (chain_in_late); two blocks of units of 16 rows fill an H100 SM's registers, so nothing can wait
// beside them, and launching early would only take the next launch's latency off the step. Same bits.
bool kq_release_early() {
  static const bool early = cuda_matmul_is("kqearly");
  return early;
}

// Whether the staged K-quant kernel fills its stages with TMA copies (Hopper: lane 0 issues two copies a
// stage, where cp.async took thirteen 16-byte copies a lane); SAKER_CUDA_MATMUL=kqcp keeps cp.async, to
// compare. Same bits. H100, 8B Q4_K_M verify steps after 512 tokens: 8 rows 4.16 ms against 4.89, 16 rows
// 5.36 against 6.07, 64 rows 18.35 against 21.3 (docs/performance.md).
bool kq_tma() {
  static const bool tma = !cuda_matmul_is("kqcp");
  return tma;
}

// The TMA maps of one call (kTma): the weights as [n_out][row_bytes] bytes in boxes of 16 rows x kRowStride
// bytes, the activation codes as [rows][n_in / 128][128] in boxes of 8 NT rows x two 128-byte halves, swizzled
// (XTma). Fails (the caller then keeps cp.async) where the weights' rows are not 16-byte aligned (Q6_K rows of a
// multiple of 2,048 elements are).
template <class F, int NT>
Status kq_tensor_maps(const DeviceMatrix& w, int64_t row_bytes, const int8_t* xq, int64_t rows, CUtensorMap& tw,
                      CUtensorMap& tx) {
  ByteTensor wt;
  wt.base = w.data;
  wt.dims[0] = static_cast<uint64_t>(row_bytes);
  wt.dims[1] = static_cast<uint64_t>(w.n_out);
  wt.strides[0] = static_cast<uint64_t>(row_bytes);
  wt.box[0] = F::kRowStride;
  wt.box[1] = 16;
  SAKER_ASSIGN_OR_RETURN(tw, encode_tensor_map(wt));
  ByteTensor xt;
  xt.base = xq;
  xt.rank = 3;
  xt.dims[0] = 128;
  xt.dims[1] = static_cast<uint64_t>(w.n_in / 128);
  xt.dims[2] = static_cast<uint64_t>(rows);
  xt.strides[0] = 128;
  xt.strides[1] = static_cast<uint64_t>(w.n_in);
  xt.box[0] = 128;
  xt.box[1] = 2;
  xt.box[2] = 8 * NT;
  xt.swizzle_128b = true;
  SAKER_ASSIGN_OR_RETURN(tx, encode_tensor_map(xt));
  return Status{};
}

// Shared memory a block may opt in to on a device.
Result<int64_t> smem_optin(int device) {
  static std::atomic<int64_t> cache[64] = {};
  return once_per_device(cache, device, [&]() -> Result<int64_t> {
    int bytes = 0;
    SAKER_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return static_cast<int64_t>(bytes);
  });
}

template <class F>
Status launch_kq_for(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                     int64_t out_stride, bool accumulate, cudaStream_t stream) {
  const auto* wp = static_cast<const uint8_t*>(w.data);
  const int64_t rb = matrix_row_bytes(w);
  const int n_blocks = static_cast<int>((w.n_in + kq::kBlock - 1) / kq::kBlock);
  const int tail_subs = w.n_in % kq::kBlock == 0 ? 8 : static_cast<int>(w.n_in % kq::kBlock / kq::kSub);
  int device = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  SAKER_ASSIGN_OR_RETURN(const int64_t optin, smem_optin(device));
  const bool tma_stages = kq_tma_stages_on(device);
  // tw, tx: the TMA maps (kTma), else unused.
  auto launch = [&](auto n_tiles, auto stages, auto staged_x, auto tma, const CUtensorMap& tw,
                    const CUtensorMap& tx) -> Status {
    constexpr int NT = decltype(n_tiles)::value, S = decltype(stages)::value;
    constexpr bool kXs = decltype(staged_x)::value, kTma = decltype(tma)::value;
    const int n_groups = static_cast<int>((rows + 8 * NT - 1) / (8 * NT));
    const int64_t n_units = (w.n_out + 15) / 16 * n_groups;
    if (n_units > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
    SAKER_ASSIGN_OR_RETURN(const int64_t resident, (persistent_blocks<F, NT, S, kXs, kTma>(device)));
    const int64_t grid = n_units < resident ? n_units : resident;
    launch_chained(kq_mma_kernel<F, NT, S, kXs, kTma>, static_cast<unsigned>(grid), kKqWarps * 32,
                   kSmemBytes<F, NT, S, kXs, kTma>, stream, tw, tx, wp, rb, w.n_out, n_blocks, xq, kx, w.n_in,
                   static_cast<int>(rows), n_groups, static_cast<int>(n_units), out, out_stride, accumulate ? 1 : 0,
                   tail_subs, NT <= 2 && kq_release_early() ? 1 : 0);
    SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status{};
  };
  auto with_stages = [&](auto n_tiles) -> Status {
    constexpr int NT = decltype(n_tiles)::value;
    CUtensorMap tw{}, tx{};
    using Two = std::integral_constant<int, 2>;
    if constexpr (kStagedXFormat<F>) {
      const bool tma_ok = tma_stages && (reinterpret_cast<uintptr_t>(wp) & 15) == 0 && rb % 16 == 0 &&
                          (reinterpret_cast<uintptr_t>(xq) & 15) == 0 && kSmemBytes<F, NT, 2, true, true> <= optin;
      if ((rows > kL1MaxRows || tma_ok) && kq_stage_activations() && kSmemBytes<F, NT, 2, true> <= optin) {
        // The maps are encoded on the host at each launch (a graph keeps them); where that fails, cp.async.
        if (tma_ok && kq_tensor_maps<F, NT>(w, rb, xq, rows, tw, tx).ok()) {
          return launch(n_tiles, Two{}, std::true_type{}, std::true_type{}, tw, tx);
        }
        return launch(n_tiles, Two{}, std::true_type{}, std::false_type{}, tw, tx);
      }
    }
    if (kSmemBytes<F, NT, kMaxStages, false> <= optin) {
      return launch(n_tiles, std::integral_constant<int, kMaxStages>{}, std::false_type{}, std::false_type{}, tw, tx);
    }
    if (kSmemBytes<F, NT, 2, false> <= optin) {
      return launch(n_tiles, Two{}, std::false_type{}, std::false_type{}, tw, tx);
    }
    return make_error(StatusCode::kUnsupported, "cuda matmul: the K-quant kernel needs " +
                                                    std::to_string(kSmemBytes<F, NT, 2, false>) +
                                                    " bytes of shared memory a block, the device allows " +
                                                    std::to_string(optin));
  };
  if (rows <= 8) return with_stages(std::integral_constant<int, 1>{});
  if constexpr (kStagedXFormat<F>) {
    // Where measured: the TMA stages (the cp.async stages and the L1 path keep units of 16).
    if (rows > 16 && kq_nt4() && tma_stages) return with_stages(std::integral_constant<int, 4>{});
  }
  return with_stages(std::integral_constant<int, 2>{});
}

}  // namespace

bool kq_tma_stages_on(int device) { return kq_tma() && hopper_code_on(device); }

Status launch_kq_mma(const DeviceMatrix& w, const int8_t* xq, const kq::KxBlock* kx, int64_t rows, float* out,
                     int64_t out_stride, bool accumulate, cudaStream_t stream) {
  switch (w.type) {
    case DType::kQ4_K:
      return launch_kq_for<KqMinFmt<false>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_K:
      return launch_kq_for<KqMinFmt<true>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ6_K: return launch_kq_for<KqQ6Fmt>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kIQ4_XS: return launch_kq_for<KqIq4XsFmt>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ8_0: return launch_kq_for<Q32Fmt<DType::kQ8_0>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_0: return launch_kq_for<Q32Fmt<DType::kQ4_0>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ4_1: return launch_kq_for<Q32Fmt<DType::kQ4_1>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_0: return launch_kq_for<Q32Fmt<DType::kQ5_0>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kQ5_1: return launch_kq_for<Q32Fmt<DType::kQ5_1>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    case DType::kIQ4_NL:
      return launch_kq_for<Q32Fmt<DType::kIQ4_NL>>(w, xq, kx, rows, out, out_stride, accumulate, stream);
    default: return make_error(StatusCode::kUnsupported, "cuda matmul: no int8 tensor-core kernel for this dtype");
  }
}

}  // namespace saker::cuda::detail
