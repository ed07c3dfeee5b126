// The K-quant verify / batch matmul on Hopper's warpgroup MMA (Q4_K and Q5_K weights, 2-64 activation rows),
// in the canonical order of kq_canon.h, so its bits equal the one-row kernels' and matmul_kq_mma.cu's:
//   - a block of one warpgroup (128 threads) owns a tile of 64 output rows x NC activation rows (a column
//     group) and a span of the eight canonical streams; with kSplit > 1 blocks the streams of a tile are split
//     over a cluster of kSplit blocks (8 / kSplit streams each), which meet through distributed shared memory;
//   - one thread issues TMA copies kStages - 1 weight blocks ahead: a stage holds the tile's 64 GGUF rows of
//     one 256-element block (box of 64 x 144 bytes), the column group's codes of that block ([2][NC][128],
//     128-byte swizzle: the layout warpgroup MMA reads as its B operand) and the columns' KxBlocks;
//   - per sub-block of 32 elements each warp builds A fragments of its 16 rows from the staged codes (the
//     scale's two digits and the min broadcast, as matmul_kq_mma.cu's digit_values), and three wgmma m64nNCk32
//     accumulate sum lo_j S_j, sum hi_j S_j and sum m_j Q_j over the block, exact in int32;
//   - the block's value (kq_value_min) joins its stream; a block walks its streams one after the other (stream
//     s: blocks s, s + 8, ...) and folds finished streams into the canonical tree as a binary counter, the
//     pending partial sums in shared memory.
// Why: the mma.sync kernel reads its activation fragments from shared memory before every MMA and owns 16
// rows a warp, so at 16-64 rows it is latency-bound (docs/performance.md); here B never passes through
// registers, a block's 64 rows share each staged activation byte, and the MMAs run while the warps unpack
// the next sub-block's codes.
// Opt-in (SAKER_CUDA_MATMUL=kqwg*, below): exact, but measured slower than matmul_kq_mma.cu at 2-64 rows on an
// H100 (a block's sub-blocks wait on their MMAs one at a time; docs/performance.md, stop 47).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/env.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/matmul_internal.cuh"
#include "ops/cuda/resident_blocks.h"
#include "ops/cuda/tensor_map.h"
#include "ops/cuda/tma.cuh"
#include "ops/cuda/wgmma.cuh"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

constexpr int kTileRows = 64;  // weight rows of a tile: the MMA's M
constexpr int kThreads = 128;  // one warpgroup
constexpr int kMaxSlots = 3;   // pending partial sums of a span of eight streams

// Q4_K (144-byte blocks) or Q5_K (176: 32 bytes of fifth bits before the nibbles).
template <bool k5Bit>
struct WgFmt {
  static constexpr int kBlockBytes = k5Bit ? 176 : 144;
  static constexpr int kQs = k5Bit ? 48 : 16;  // the nibbles' offset
  // A scale's two digits: code x digit fits a byte (Q4_K 15 x 15 and 15 x 3; Q5_K 31 x 7).
  static constexpr int kDigitBits = k5Bit ? 3 : 4;
  static constexpr uint32_t kDigitMask = k5Bit ? 0x07070707u : 0x0F0F0F0Fu;
};

// The dynamic shared memory of one block: stages (activation codes first, each on a 1024-byte boundary for
// the swizzle, then the weight rows, then the KxBlocks), the stage barriers, the stream partials and the
// cluster's exchange buffer ([element][thread] floats, so a thread's accesses are consecutive across a warp).
template <bool k5Bit, int NC, int kStages_>
struct WgSmem {
  static constexpr int kStages = kStages_;
  static constexpr int kBlockBytes = WgFmt<k5Bit>::kBlockBytes;
  static constexpr int kElems = NC / 2;  // accumulator elements a thread holds
  static constexpr int kXBytes = 2 * NC * 128;
  static constexpr int kWBytes = kTileRows * WgFmt<k5Bit>::kBlockBytes;
  static constexpr int kKBytes = NC * 32;  // whole KxBlocks
  static constexpr int kX = 0;
  static constexpr int kW = kX + kStages * kXBytes;
  static constexpr int kK = kW + kStages * kWBytes;
  static constexpr int kBars = kK + kStages * kKBytes;
  static constexpr int kSlots = kBars + kStages * 8;
  static constexpr int kExchange = kSlots + kMaxSlots * kElems * kThreads * 4;
  static constexpr int kBytes = kExchange + kElems * kThreads * 4;
  static_assert(kXBytes % 1024 == 0 && kWBytes % 128 == 0 && kKBytes % 128 == 0, "TMA destinations stay aligned");
};

extern __shared__ __align__(1024) uint8_t kq_wg_smem[];

// Every block of the cluster arrives; their earlier shared-memory writes are visible to the others after it.
__device__ __forceinline__ void cluster_sync() {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
// A float of block `rank`'s shared memory at the address p has in this block.
__device__ __forceinline__ float load_peer(const float* p, uint32_t rank) {
  float v = 0.0f;
#ifdef SAKER_WGMMA_DEVICE
  uint32_t remote = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
#endif
  return v;
}

// Thread 0's copy of block b's 64 weight rows of the tile into stage st, announcing the whole stage's bytes
// (weights, activation codes, KxBlocks) on its barrier.
template <class L>
__device__ __forceinline__ void copy_stage_weights(const CUtensorMap* tw, int st, int b, int tile) {
  uint64_t* bar = reinterpret_cast<uint64_t*>(kq_wg_smem + L::kBars) + st;
  mbar_arrive_expect_tx(bar, L::kXBytes + L::kWBytes + L::kKBytes);
  tma_load_2d(kq_wg_smem + L::kW + st * L::kWBytes, tw, b * L::kBlockBytes, tile * kTileRows, bar);
}

// Thread 0 readies the stage barriers and starts the weight copies of the first kStages - 1 blocks (weights
// never depend on the kernel before), each barrier counting its stage's activation bytes too, which go out
// after the chained-launch wait; the barrier before the wait orders the initialisation before every thread's
// first wait on a stage.
template <class L>
__device__ __forceinline__ void prefetch_weights_wg_tma(const CUtensorMap* tw, int tile, int s_lo, int span,
                                                        int n_blocks) {
  if (threadIdx.x == 0) {
    uint64_t* bars = reinterpret_cast<uint64_t*>(kq_wg_smem + L::kBars);
    for (int st = 0; st < L::kStages; ++st) mbar_init(bars + st, 1);
    mbar_init_fence();
    fence_proxy_async_smem();
    for (int st = 0; st + 1 < L::kStages; ++st) {
      const int b = kq::span_block(st, s_lo, span, n_blocks);
      if (b < 0) break;
      copy_stage_weights<L>(tw, st, b, tile);
    }
  }
  __syncthreads();
}

// Grid: kSplit x n_groups x n_tiles blocks in clusters of kSplit along x (block x = (tile * n_groups + group) *
// kSplit + rank). tw: the weights as [n_out][row_bytes] bytes, boxes of 64 rows x one block; tx: the codes as
// [n_in / 128][rows][128], boxes of 2 x NC x 128, swizzled; tk: the KxBlocks as [rows][n_blocks * 32] bytes,
// boxes of NC x 32. kMinMma: the min term sum_j m_j Q_j by a third MMA per sub-block (A: the min broadcast over
// the sub-block's k), else by four __dp2a per element from the staged KxBlocks' qsums (the same integer): the
// tensor core or the ALU, whichever binds (three MMAs a sub-block at 64 columns take longer than the block's
// weight bytes at the copy rate).
template <bool k5Bit, int NC, int kStages, bool kMinMma>
__global__ void __launch_bounds__(kThreads, 1)
    kq_wg_kernel(const __grid_constant__ CUtensorMap tw, const __grid_constant__ CUtensorMap tx,
                 const __grid_constant__ CUtensorMap tk, int64_t n_out, int n_blocks, int rows, int n_groups,
                 int split, float* __restrict__ out, int64_t out_stride, int accumulate) {
  const int unit = static_cast<int>(blockIdx.x) / split;
  const int rank = static_cast<int>(blockIdx.x) - unit * split;  // the rank in the cluster (clusters along x)
  const int tile = unit / n_groups, group = unit - tile * n_groups;
  const int span = kq::kStreams / split, s_lo = rank * span;
  prefetch_weights_wg_tma<WgSmem<k5Bit, NC, kStages>>(&tw, tile, s_lo, span, n_blocks);
  chain_in_late();
  using L = WgSmem<k5Bit, NC, kStages>;
  using F = WgFmt<k5Bit>;
  constexpr int E = L::kElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  uint64_t* bars = reinterpret_cast<uint64_t*>(kq_wg_smem + L::kBars);
  float* slots = reinterpret_cast<float*>(kq_wg_smem + L::kSlots);
  float* exchange = reinterpret_cast<float*>(kq_wg_smem + L::kExchange);
  const int col0 = group * NC;
  // Thread 0's copies of block k (in this block's order) into stage k % kStages; the weights of the first
  // kStages - 1 went out before the wait.
  auto issue = [&](int k, bool weights) {
    const int b = kq::span_block(k, s_lo, span, n_blocks);
    if (b < 0) return;
    const int st = k % kStages;
    uint64_t* bar = bars + st;
    if (weights) {
      fence_proxy_async_smem();  // every thread's reads of this stage (ordered by the barrier before) come first
      copy_stage_weights<L>(&tw, st, b, tile);
    }
    tma_load_3d(kq_wg_smem + L::kX + st * L::kXBytes, &tx, 0, col0, 2 * b, bar);
    tma_load_2d(kq_wg_smem + L::kK + st * L::kKBytes, &tk, b * 32, col0, bar);
  };
  if (tid == 0) {
    for (int k = 0; k + 1 < kStages; ++k) issue(k, false);
  }

  // This thread's rows of the tile (r0 and r0 + 8) and the columns of its accumulator elements: element
  // e = 4i + q sits at row q >> 1 ? r1 : r0, column 8i + 2t + (q & 1).
  const int r0 = 16 * warp + g, r1 = r0 + 8;
  float fin[E];  // the span's sum of streams, in the canonical tree
  int item = 0;
  for (int leaf = 0; leaf < span; ++leaf) {
    const int s = s_lo + leaf;
    float cur[E];
#pragma unroll
    for (int e = 0; e < E; ++e) cur[e] = 0.0f;
    for (int b = s; b < n_blocks; b += kq::kStreams, ++item) {
      if (tid == 0) issue(item + kStages - 1, true);  // into the stage item - 1 used: all threads left it
      const int st = item % kStages;
      mbar_wait(bars + st, (item / kStages) & 1);
      const uint8_t* ws = kq_wg_smem + L::kW + st * L::kWBytes;
      const uint8_t* xs = kq_wg_smem + L::kX + st * L::kXBytes;
      const uint8_t* ks = kq_wg_smem + L::kK + st * L::kKBytes;
      const uint8_t* w0 = ws + r0 * F::kBlockBytes;
      const uint8_t* w1 = ws + r1 * F::kBlockBytes;
      // Row headers: f16 d, f16 dmin, then the 6-bit scales and mins four at a time.
      const uint4 h0 = *reinterpret_cast<const uint4*>(w0);
      const uint4 h1 = *reinterpret_cast<const uint4*>(w1);
      const kq_f16::ScaleWords s0w = kq_f16::unpack_scales(h0.y, h0.z, h0.w);
      const kq_f16::ScaleWords s1w = kq_f16::unpack_scales(h1.y, h1.z, h1.w);
      const uint32_t(&sc0)[2] = s0w.sc;
      const uint32_t(&mn0)[2] = s0w.mn;
      const uint32_t(&sc1)[2] = s1w.sc;
      const uint32_t(&mn1)[2] = s1w.mn;
      // Q5_K: the fifth bits of this lane's elements (bytes 4t and 16 + 4t of qh; bit j for sub-block j).
      uint32_t qh0[2] = {0, 0}, qh1[2] = {0, 0};
      if constexpr (k5Bit) {
        qh0[0] = *reinterpret_cast<const uint32_t*>(w0 + 16 + 4 * t);
        qh0[1] = *reinterpret_cast<const uint32_t*>(w0 + 32 + 4 * t);
        qh1[0] = *reinterpret_cast<const uint32_t*>(w1 + 16 + 4 * t);
        qh1[1] = *reinterpret_cast<const uint32_t*>(w1 + 32 + 4 * t);
      }
      constexpr int kKeep = kMinMma ? 12 : 8;
      int lo[E], hi[E], mn[E];
      uint32_t keep[kKeep];  // the previous sub-block's A fragments, live until its MMAs finish
#pragma unroll
      for (int i = 0; i < kKeep; ++i) keep[i] = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int c = j >> 1, h = j & 1;
        // Lane t's k indices of the sub-block are its elements 4t .. 4t+3 (k 4t + i) and 16 + 4t .. (k 16 + 4t
        // + i): B's k index is the code's byte in the staged row, so A must agree.
        const uint32_t qa0 = *reinterpret_cast<const uint32_t*>(w0 + F::kQs + 32 * c + 4 * t);
        const uint32_t qb0 = *reinterpret_cast<const uint32_t*>(w0 + F::kQs + 32 * c + 16 + 4 * t);
        const uint32_t qa1 = *reinterpret_cast<const uint32_t*>(w1 + F::kQs + 32 * c + 4 * t);
        const uint32_t qb1 = *reinterpret_cast<const uint32_t*>(w1 + F::kQs + 32 * c + 16 + 4 * t);
        auto codes = [&](uint32_t raw, uint32_t hbits) {
          uint32_t v = h ? (raw >> 4) & 0x0F0F0F0Fu : raw & 0x0F0F0F0Fu;
          if constexpr (k5Bit) v |= ((hbits >> j) & 0x01010101u) << 4;
          return v;
        };
        const uint32_t ca0 = codes(qa0, qh0[0]), cb0 = codes(qb0, qh0[1]);
        const uint32_t ca1 = codes(qa1, qh1[0]), cb1 = codes(qb1, qh1[1]);
        const uint32_t sel = 0x4440u | (j & 3);  // byte j & 3, zero-extended
        const uint32_t s0 = __byte_perm(sc0[j >> 2], 0, sel), s1 = __byte_perm(sc1[j >> 2], 0, sel);
        const uint32_t l0 = s0 & 0xFFu & F::kDigitMask, l1 = s1 & F::kDigitMask & 0xFFu;
        const uint32_t u0 = (s0 >> F::kDigitBits) & 0xFFu, u1 = (s1 >> F::kDigitBits) & 0xFFu;
        const uint32_t bsel = 0x1111u * (j & 3);  // byte j & 3 into all four bytes
        const uint32_t m0 = __byte_perm(mn0[j >> 2], 0, bsel), m1 = __byte_perm(mn1[j >> 2], 0, bsel);
        // A fragments (k32): reg0 row g k 4t.., reg1 row g+8 k 4t.., reg2 row g k 16+4t.., reg3 row g+8.
        uint32_t a_lo[4] = {ca0 * l0, ca1 * l1, cb0 * l0, cb1 * l1};
        uint32_t a_hi[4] = {ca0 * u0, ca1 * u1, cb0 * u0, cb1 * u1};
        uint32_t a_mn[4] = {m0, m1, m0, m1};
        // B: the NC columns' 32 codes of sub-block j: half j / 4 of the staged rows, bytes 32 (j % 4) on.
        const uint64_t desc = wgmma_desc_sw128(xs + (j >> 2) * (NC * 128) + (j & 3) * 32);
        wgmma_fence();
        wgmma_u8s8(lo, a_lo, desc, j > 0);
        wgmma_u8s8(hi, a_hi, desc, j > 0);
        if constexpr (kMinMma) wgmma_u8s8(mn, a_mn, desc, j > 0);
        wgmma_commit();
        wgmma_wait<1>(keep);  // the previous sub-block's MMAs are done: its fragments may be overwritten
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          keep[i] = a_lo[i];
          keep[4 + i] = a_hi[i];
          if constexpr (kMinMma) keep[8 + i] = a_mn[i];
        }
      }
      wgmma_wait<0>(keep);
      wgmma_fence_operands(lo);
      wgmma_fence_operands(hi);
      if constexpr (kMinMma) wgmma_fence_operands(mn);
      // The block's canonical value per element (kq_canon.h: T = (sum sc_j S_j) << 3, M = (sum m_j Q_j) << 3).
      const float dw0 = __half2float(__ushort_as_half(static_cast<unsigned short>(h0.x & 0xFFFF)));
      const float dm0 = __half2float(__ushort_as_half(static_cast<unsigned short>(h0.x >> 16)));
      const float dw1 = __half2float(__ushort_as_half(static_cast<unsigned short>(h1.x & 0xFFFF)));
      const float dm1 = __half2float(__ushort_as_half(static_cast<unsigned short>(h1.x >> 16)));
#pragma unroll
      for (int i = 0; i < NC / 8; ++i) {
        const KxBlock* ka = reinterpret_cast<const KxBlock*>(ks) + 8 * i + 2 * t;
        const float d8a = ka[0].d8, d8b = ka[1].d8;
        if constexpr (!kMinMma) {
          // M << 3 = sum_j m_j qsum_j (the qsums carry the << 3), two sub-blocks a __dp2a.
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int* qs = reinterpret_cast<const int*>(ka[q & 1].qsum);  // 4-byte aligned: offset 12
            const uint32_t(&m)[2] = q >> 1 ? mn1 : mn0;
            int acc = __dp2a_lo(qs[0], static_cast<int>(m[0]), 0);
            acc = __dp2a_hi(qs[1], static_cast<int>(m[0]), acc);
            acc = __dp2a_lo(qs[2], static_cast<int>(m[1]), acc);
            mn[4 * i + q] = __dp2a_hi(qs[3], static_cast<int>(m[1]), acc) >> kq::kMaxShift;  // exact: a multiple of 8
          }
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int e = 4 * i + q;
          const int T = ((hi[e] << F::kDigitBits) + lo[e]) << kq::kMaxShift;
          const float v = kq::kq_value_min(q & 1 ? d8b : d8a, q >> 1 ? dw1 : dw0, q >> 1 ? dm1 : dm0, T,
                                           mn[e] << kq::kMaxShift);
          cur[e] = kq::fadd(cur[e], v);
        }
      }
      __syncthreads();  // every thread is done with this stage before thread 0 copies into it again
    }
    // The stream joins the span's subtree (kq_canon.h), pending partial sums in shared memory.
#pragma unroll
    for (int e = 0; e < E; ++e) {
      kq::fold_stream(
          leaf, span, cur[e], [&](int level) -> float& { return slots[(level * E + e) * kThreads + tid]; }, &fin[e]);
    }
  }

  // The cluster's spans meet in the same tree: block r holds streams [r span, (r + 1) span), so pairs of
  // neighbours, then pairs of pairs. Block r finishes the elements e with e % split == r.
  if (split > 1) {
#pragma unroll
    for (int e = 0; e < E; ++e) exchange[e * kThreads + tid] = fin[e];
    cluster_sync();
  }
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (split > 1 && e % split != rank) continue;
    float y = fin[e];
    if (split > 1) {
      float v[kq::kStreams];
      for (int q = 0; q < split; ++q) v[q] = load_peer(exchange + e * kThreads + tid, static_cast<uint32_t>(q));
      y = kq::combine_spans(v, split);
    }
    const int64_t o = static_cast<int64_t>(tile) * kTileRows + ((e >> 1) & 1 ? r1 : r0);
    const int col = col0 + 8 * (e >> 2) + 2 * t + (e & 1);
    if (o < n_out && col < rows) {
      float* dst = out + static_cast<int64_t>(col) * out_stride + o;
      *dst = accumulate ? kq::fadd(*dst, y) : y;
    }
  }
  if (split > 1) cluster_sync();  // the peers' buffers stay until every block has read them
}

// SAKER_CUDA_MATMUL=kqwg[c][N]: on; c: the min term on the ALU (kMinMma off); N: 1 / 2 / 4 / 8 fix the cluster
// split (else the smallest that fills the device), 32 takes column groups of at most 32.
struct WgMode {
  bool on = false, cores = false;
  int n = 0;
};
const WgMode& wg_mode() {
  static const WgMode mode = [] {
    WgMode m;
    const char* v = debug_env().cuda_matmul;
    if (v == nullptr || std::strncmp(v, "kqwg", 4) != 0) return m;
    m.on = true;
    v += 4;
    if (*v == 'c') {
      m.cores = true;
      ++v;
    }
    m.n = std::atoi(v);
    return m;
  }();
  return mode;
}

template <bool k5Bit, int NC, int kStages, bool kMinMma>
Result<int64_t> wg_resident(int device) {
  static std::atomic<int64_t> cache[64] = {};
  constexpr auto kernel = kq_wg_kernel<k5Bit, NC, kStages, kMinMma>;
  return once_per_device(cache, device, [&]() -> Result<int64_t> {
    constexpr int kSmem = WgSmem<k5Bit, NC, kStages>::kBytes;
    SAKER_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    return resident_blocks(kernel, kThreads, kSmem, device);
  });
}

template <bool k5Bit, int NC, int kStages, bool kMinMma>
Status launch_wg(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                 int64_t out_stride, bool accumulate, cudaStream_t stream, int device) {
  using L = WgSmem<k5Bit, NC, kStages>;
  const int64_t rb = matrix_row_bytes(w);
  const int n_blocks = static_cast<int>(w.n_in / kq::kBlock);
  ByteTensor wt;
  wt.base = w.data;
  wt.dims[0] = static_cast<uint64_t>(rb);
  wt.dims[1] = static_cast<uint64_t>(w.n_out);
  wt.strides[0] = static_cast<uint64_t>(rb);
  wt.box[0] = WgFmt<k5Bit>::kBlockBytes;
  wt.box[1] = kTileRows;
  SAKER_ASSIGN_OR_RETURN(const CUtensorMap tw, encode_tensor_map(wt));
  ByteTensor xt;  // [n_in / 128][rows][128]: a box is both halves of a block for NC rows
  xt.base = xq;
  xt.rank = 3;
  xt.dims[0] = 128;
  xt.dims[1] = static_cast<uint64_t>(rows);
  xt.dims[2] = static_cast<uint64_t>(w.n_in / 128);
  xt.strides[0] = static_cast<uint64_t>(w.n_in);
  xt.strides[1] = 128;
  xt.box[0] = 128;
  xt.box[1] = NC;
  xt.box[2] = 2;
  xt.swizzle_128b = true;
  SAKER_ASSIGN_OR_RETURN(const CUtensorMap tx, encode_tensor_map(xt));
  ByteTensor kt;
  kt.base = kx;
  kt.dims[0] = static_cast<uint64_t>(n_blocks) * sizeof(KxBlock);
  kt.dims[1] = static_cast<uint64_t>(rows);
  kt.strides[0] = static_cast<uint64_t>(n_blocks) * sizeof(KxBlock);
  kt.box[0] = 32;
  kt.box[1] = NC;
  SAKER_ASSIGN_OR_RETURN(const CUtensorMap tk, encode_tensor_map(kt));

  const int n_groups = static_cast<int>((rows + NC - 1) / NC);
  const int64_t units = (w.n_out + kTileRows - 1) / kTileRows * n_groups;
  SAKER_ASSIGN_OR_RETURN(const int64_t resident, (wg_resident<k5Bit, NC, kStages, kMinMma>(device)));
  int split = wg_mode().n;
  if (split != 1 && split != 2 && split != 4 && split != 8) {
    // The smallest split that gives every resident block slot a block (one wave), at most eight.
    split = 1;
    while (split < 8 && units * split < resident) split *= 2;
  }
  if (units * split > 0x7FFFFFFF) return make_error(StatusCode::kInvalidArgument, "cuda matmul: n_out too large");
  launch_chained_cluster(kq_wg_kernel<k5Bit, NC, kStages, kMinMma>, static_cast<unsigned>(units * split), kThreads,
                         L::kBytes, stream, static_cast<unsigned>(split), tw, tx, tk, w.n_out, n_blocks,
                         static_cast<int>(rows), n_groups, split, out, out_stride, accumulate ? 1 : 0);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status{};
}

// Column groups of 16 up to 16 rows, 32 up to 32, else 64 (two of 32 with kqwg32).
template <bool k5Bit, bool kMinMma>
Status launch_wg_cols(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                      int64_t out_stride, bool accumulate, cudaStream_t stream, int device) {
  if (rows <= 16) {
    return launch_wg<k5Bit, 16, 4, kMinMma>(w, xq, kx, rows, out, out_stride, accumulate, stream, device);
  }
  if (rows <= 32 || wg_mode().n == 32) {
    return launch_wg<k5Bit, 32, 4, kMinMma>(w, xq, kx, rows, out, out_stride, accumulate, stream, device);
  }
  return launch_wg<k5Bit, 64, 3, kMinMma>(w, xq, kx, rows, out, out_stride, accumulate, stream, device);
}

template <bool k5Bit>
Status launch_wg_for(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                     int64_t out_stride, bool accumulate, cudaStream_t stream, int device) {
  if (wg_mode().cores) return launch_wg_cols<k5Bit, false>(w, xq, kx, rows, out, out_stride, accumulate, stream, device);
  return launch_wg_cols<k5Bit, true>(w, xq, kx, rows, out, out_stride, accumulate, stream, device);
}

}  // namespace

bool kq_wgmma_selected() { return wg_mode().on; }

Status launch_kq_wgmma(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, int64_t rows, float* out,
                       int64_t out_stride, bool accumulate, cudaStream_t stream) {
  if ((w.type != DType::kQ4_K && w.type != DType::kQ5_K) || rows < 1 || rows > kKqMaxRows ||
      w.n_in % kq::kBlock != 0) {
    return make_error(StatusCode::kUnsupported, "cuda matmul: no warpgroup-MMA kernel for this call");
  }
  int device = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (!hopper_code_on(device) || (reinterpret_cast<uintptr_t>(w.data) & 15) != 0 ||
      (reinterpret_cast<uintptr_t>(xq) & 15) != 0 || (reinterpret_cast<uintptr_t>(kx) & 15) != 0) {
    return make_error(StatusCode::kUnsupported, "cuda matmul: the warpgroup-MMA kernel needs sm_90a and aligned data");
  }
  return w.type == DType::kQ4_K ? launch_wg_for<false>(w, xq, kx, rows, out, out_stride, accumulate, stream, device)
                                : launch_wg_for<true>(w, xq, kx, rows, out, out_stride, accumulate, stream, device);
}

}  // namespace saker::cuda::detail
