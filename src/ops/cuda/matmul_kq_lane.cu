// The one-row K-quant matmul with a lane per weight block (Q4_K, Q6_K): each lane sums a whole 256-element
// block's integers by itself, so a block costs no shuffles and its scales are decoded once, not by eight lanes.
//
// Why: the dp4a kernel (matmul_kq_dp4a.cu) splits a block over eight lanes and needs ~600 thread
// instructions a block (the header loaded and decoded by every lane, three shuffle levels of two sums, the
// block value formed eight times), so at one row it issues about two warp instructions a cycle an SM and moves
// half of the DRAM rate (Nsight Compute, H100: its stalls are the loads' latency with too few warps, and its
// instruction issue is near what the schedulers give). Here a Q4_K block costs ~300 instructions, a Q6_K one
// ~450 (its 210-byte blocks sit at 2-byte aligned slots: words are read aligned and funnel-shifted).
//
// Layout: a warp takes R = 32 / G weight rows at a time (a row group), G = 16 or 8 lanes a row, and walks the row's
// blocks G at a time (an item: lane j of row r holds block G i + j). An item's blocks (R rows x G blocks,
// 4,608 bytes of Q4_K) are copied by the whole warp with coalesced 16-byte cp.async into the warp's stage of shared
// memory (slot r G + j at 144 bytes a slot: a lane's 16-byte reads of its slot hit distinct bank groups), a
// stage ahead of the arithmetic; the activation row (codes, each block's qsums and d8) is staged once a
// thread block, each 256-code block padded to 272 bytes so that eight consecutive blocks' reads cover the 32
// banks. The first stage goes out before the chained-launch wait (weights never depend on the kernel before).
//
// Bits: the same canonical arithmetic as every K-quant kernel (kq_canon.h). A block's integer sums are exact
// in any order; its value is kq_value_min (Q6_K: kq_value_sym); block b belongs to stream b mod 8, and since
// G is a multiple of 8, lane j's blocks all lie in stream j mod 8: after each item, lane s < 8 of a row adds
// the item's stream-s values (lanes s, s + 8, ... of the row) to its stream in block order, and at the row's
// end the streams are combined by the canonical tree (xor 1, 2, 4; float addition commutes exactly). So a
// row's result equals the tensor-core kernel's at any width. Measured: docs/performance.md, stop 42.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <type_traits>

#include "core/env.h"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cp_async.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"
#include "ops/cuda/kq_f16_layout.h"
#include "ops/cuda/resident_blocks.h"

namespace saker::cuda::detail {
namespace {

using kq::KxBlock;

constexpr int kXStride = 272;  // a staged activation block: 256 codes, then 16 bytes (Q4_K: its 8 qsums)
static_assert(kq::kBlock == 256, "one weight block against one activation block");

// The formats: block bytes, and whether the staged activation row carries each 16-element sub-block's code
// sum (Q6_K's codes are offset by 32: its dot is sum(code q) - 32 sum(q) a sub-block).
struct LaneQ4K {
  static constexpr int kBlockBytes = 144;  // d, dmin (f16), 12 bytes of 6-bit scales, 128 of codes
  static constexpr bool kSums16 = false;
};
struct LaneQ6K {
  static constexpr int kBlockBytes = 210;  // ql[128], qh[64], 16 int8 scales, d (f16)
  static constexpr bool kSums16 = true;
};
template <class F>
constexpr int kStageBytes = 32 * F::kBlockBytes;  // one item: 32 blocks
template <class F>
constexpr int kItemChunks = kStageBytes<F> / 16;  // its 16-byte pieces (a run of G blocks is 16-byte aligned)
template <class F>
constexpr int kChunks = (kItemChunks<F> + 31) / 32;  // pieces a lane copies

// Shared memory of a thread block: the activation row (codes and the 16-byte meta, each block's d8, Q6_K's
// sub-block sums), then each warp's stages.
SAKER_HD constexpr size_t lane_codes_bytes(int n_blocks) {  // codes and meta, then d8; Q6_K's sums after
  return (static_cast<size_t>(n_blocks) * (kXStride + 4) + 15) / 16 * 16;
}
template <class F>
SAKER_HD constexpr size_t lane_x_bytes(int n_blocks) {
  return lane_codes_bytes(n_blocks) + (F::kSums16 ? static_cast<size_t>(n_blocks) * 32 : 0);
}
template <class F>
SAKER_HD constexpr size_t lane_smem_bytes(int n_blocks, int warps, int stages) {
  // + 16: a Q6_K lane's last aligned word may lie past its slot (A2Words).
  return lane_x_bytes<F>(n_blocks) + static_cast<size_t>(warps) * stages * kStageBytes<F> + 16;
}

// a (four unsigned bytes) . b (four signed bytes) + c: the high nibbles taken in place (16 x code) need the
// unsigned reading of their bytes.
__device__ __forceinline__ int dp4a_us(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ int byte_at(uint32_t w, int k) { return static_cast<int>(__byte_perm(w, 0, 0x4440 | k)); }

// The value of one Q4_K block (its 144 bytes at blk in shared memory) against one staged activation block.
__device__ __forceinline__ float q4k_block_value(const uint8_t* blk, const uint8_t* xb, float d8) {
  const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
  // Eight 6-bit scales and mins as bytes (kq_canon.h, llama.cpp's get_scale_min_k4): sub-blocks 0-3 in the
  // low six bits of words 1 and 2, 4-7 from word 3's nibbles and the top two bits of words 1 and 2.
  const kq_f16::ScaleWords words = kq_f16::unpack_scales(hdr.y, hdr.z, hdr.w);
  const uint32_t sc_lo = words.sc[0], m_lo = words.mn[0], sc_hi = words.sc[1], m_hi = words.mn[1];
  int a = 0;  // sum of sc_j * S_j over the low-nibble sub-blocks (j even)
  int b = 0;  // sum of sc_j * 16 S_j over the high-nibble ones (their codes read in place, times 16)
#pragma unroll
  for (int p = 0; p < 4; ++p) {  // sub-blocks 2p (low nibbles of qs[32p ..]) and 2p + 1 (high nibbles)
    int s_lo = 0, s_hi16 = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 q = *reinterpret_cast<const uint4*>(blk + 16 + 16 * (2 * p + h));
      const uint4 xl = *reinterpret_cast<const uint4*>(xb + 16 * (4 * p + h));
      const uint4 xh = *reinterpret_cast<const uint4*>(xb + 16 * (4 * p + 2 + h));
      s_lo = __dp4a(static_cast<int>(q.x & 0x0F0F0F0Fu), static_cast<int>(xl.x), s_lo);
      s_lo = __dp4a(static_cast<int>(q.y & 0x0F0F0F0Fu), static_cast<int>(xl.y), s_lo);
      s_lo = __dp4a(static_cast<int>(q.z & 0x0F0F0F0Fu), static_cast<int>(xl.z), s_lo);
      s_lo = __dp4a(static_cast<int>(q.w & 0x0F0F0F0Fu), static_cast<int>(xl.w), s_lo);
      s_hi16 = dp4a_us(q.x & 0xF0F0F0F0u, xh.x, s_hi16);
      s_hi16 = dp4a_us(q.y & 0xF0F0F0F0u, xh.y, s_hi16);
      s_hi16 = dp4a_us(q.z & 0xF0F0F0F0u, xh.z, s_hi16);
      s_hi16 = dp4a_us(q.w & 0xF0F0F0F0u, xh.w, s_hi16);
    }
    const uint32_t sc = p < 2 ? sc_lo : sc_hi;
    a += byte_at(sc, 2 * (p & 1)) * s_lo;
    b += byte_at(sc, 2 * (p & 1) + 1) * s_hi16;
  }
  // T = sum_j (sc_j S_j) << 3: the high sub-blocks' products carry 16, so >> 1 (exact: even).
  const int t = (a << kq::kMaxShift) + (b >> 1);
  // M = sum_j m_j qsum_j (the qsums already << 3): 16-bit qsums against byte mins, two a dp2a.
  const uint4 qs = *reinterpret_cast<const uint4*>(xb + 256);
  const int m = __dp2a_lo(static_cast<int>(qs.x), static_cast<int>(m_lo),
                          __dp2a_hi(static_cast<int>(qs.y), static_cast<int>(m_lo),
                                    __dp2a_lo(static_cast<int>(qs.z), static_cast<int>(m_hi),
                                              __dp2a_hi(static_cast<int>(qs.w), static_cast<int>(m_hi), 0))));
  const float dw = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x & 0xFFFF)));
  const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(hdr.x >> 16)));
  return kq::kq_value_min(d8, dw, dmin, t, m);
}

// Word k of a run of 32-bit words starting at a 2-byte aligned shared address: the covering aligned words,
// funnel-shifted (by 0 where the run is 4-byte aligned).
struct A2Words {
  const uint32_t* base;
  uint32_t shift;
  __device__ __forceinline__ explicit A2Words(const uint8_t* p)
      // p minus its offset from a word, by pointer arithmetic: a pointer rebuilt from an integer loses its
      // shared-memory space, and every read of it became a generic load (LD instead of LDS in the SASS).
      : base(reinterpret_cast<const uint32_t*>(p - (reinterpret_cast<uintptr_t>(p) & 3))),
        shift(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 2) * 8) {}
  __device__ __forceinline__ uint32_t operator[](int k) const { return __funnelshift_r(base[k], base[k + 1], shift); }
};
__device__ __forceinline__ int sbyte_at(uint32_t w, int k) {
  return static_cast<int>(static_cast<int8_t>(w >> (8 * k)));
}

// The value of one Q6_K block (210 bytes at a 2-byte aligned blk in shared memory) against one staged
// activation block and its sixteen 16-element code sums (x16, int16). Element 128h + 32k + l (l < 32) has code
// (ql[64h + l + 32 (k & 1)] >> 4 (k >> 1)) & 15 | ((qh[32h + l] >> 2k) & 3) << 4, minus 32, and scale
// sc[8h + 2k + l / 16].
__device__ __forceinline__ float q6k_block_value(const uint8_t* blk, const uint8_t* xb, const uint8_t* x16, float d8) {
  const A2Words wd(blk);
  int t_raw = 0;  // sum_i sc_i * sum(code * q) over sub-block i, codes 0..63
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t scw0 = wd[48 + 2 * h], scw1 = wd[49 + 2 * h];  // sc[8h .. 8h + 7]
#pragma unroll
    for (int half = 0; half < 2; ++half) {  // l < 16 (sub-blocks 8h + 2k) and l >= 16 (8h + 2k + 1)
      int s[4] = {0, 0, 0, 0};
#pragma unroll
      for (int v = 0; v < 4; ++v) {  // l = 16 half + 4v .. + 3
        const int u = 4 * half + v;
        const uint32_t a = wd[16 * h + u], b = wd[16 * h + 8 + u], q = wd[32 + 8 * h + u];
        const uint32_t c0 = (a & 0x0F0F0F0Fu) | ((q << 4) & 0x30303030u);
        const uint32_t c1 = (b & 0x0F0F0F0Fu) | ((q << 2) & 0x30303030u);
        const uint32_t c2 = ((a >> 4) & 0x0F0F0F0Fu) | (q & 0x30303030u);
        const uint32_t c3 = ((b >> 4) & 0x0F0F0F0Fu) | ((q >> 2) & 0x30303030u);
        const auto* xw = reinterpret_cast<const uint32_t*>(xb) + 32 * h + u;  // x word of element 128h + 4u
        s[0] = __dp4a(static_cast<int>(c0), static_cast<int>(xw[0]), s[0]);
        s[1] = __dp4a(static_cast<int>(c1), static_cast<int>(xw[8]), s[1]);
        s[2] = __dp4a(static_cast<int>(c2), static_cast<int>(xw[16]), s[2]);
        s[3] = __dp4a(static_cast<int>(c3), static_cast<int>(xw[24]), s[3]);
      }
      // Sub-block 8h + 2k + half: scale byte 2k + half of sc[8h ..], in word k / 2.
#pragma unroll
      for (int k = 0; k < 4; ++k) t_raw += sbyte_at(k < 2 ? scw0 : scw1, (2 * k + half) & 3) * s[k];
    }
  }
  // The offset of 32: minus 32 * sum_i sc_i X_i, X_i the sub-block's code sum (int16 pairs against byte scales).
  const uint4 xa = *reinterpret_cast<const uint4*>(x16), xc = *reinterpret_cast<const uint4*>(x16 + 16);
  const uint32_t sc0 = wd[48], sc1 = wd[49], sc2 = wd[50], sc3 = wd[51];
  int sx = __dp2a_lo(static_cast<int>(xa.x), static_cast<int>(sc0), 0);
  sx = __dp2a_hi(static_cast<int>(xa.y), static_cast<int>(sc0), sx);
  sx = __dp2a_lo(static_cast<int>(xa.z), static_cast<int>(sc1), sx);
  sx = __dp2a_hi(static_cast<int>(xa.w), static_cast<int>(sc1), sx);
  sx = __dp2a_lo(static_cast<int>(xc.x), static_cast<int>(sc2), sx);
  sx = __dp2a_hi(static_cast<int>(xc.y), static_cast<int>(sc2), sx);
  sx = __dp2a_lo(static_cast<int>(xc.z), static_cast<int>(sc3), sx);
  sx = __dp2a_hi(static_cast<int>(xc.w), static_cast<int>(sc3), sx);
  const int t = (t_raw - 32 * sx) << kq::kMaxShift;
  // d by a 2-byte read (blk is 2-byte aligned): a word read would reach up to 6 bytes past the slot, into a
  // stage whose copies may still be in flight (harmless bits, but a race for a checker).
  const float dw = __half2float(*reinterpret_cast<const __half*>(blk + 208));
  return kq::kq_value_sym(d8, dw, t);
}

extern __shared__ __align__(16) uint8_t kq_lane_smem[];

// One warp's weight copies. Its items, in order, are (row group, run i) for its row groups g_begin .. g_end - 1
// (an even share of all of them) and i < iters; item t goes to stage t mod S. Chunk k = lane + 32 q of an
// item's R x G x 9 chunks is row k / (9 G), byte 16 (k % 9G) of that row's run of blocks, and lands at byte
// 16 k of the stage: the same offsets for every item, computed once. Reads weights only, so a kernel may
// start it before its chained-launch wait.
template <class F, int G, int W, int S>
struct LaneWeights {
  static constexpr int kChunksL = kChunks<F>;
  static constexpr int R = 32 / G;  // rows a warp takes at once
  const uint8_t* w;
  int64_t row_bytes, n_out;
  int n_blocks, iters, lane;
  int64_t g_begin, g_end;
  uint8_t* stages;  // this warp's S stages
  int src_off[kChunksL], rem_of[kChunksL], row_of[kChunksL];

  __device__ LaneWeights(const uint8_t* w_, int64_t row_bytes_, int64_t n_out_, int n_blocks_)
      : w(w_), row_bytes(row_bytes_), n_out(n_out_), n_blocks(n_blocks_), iters((n_blocks_ + G - 1) / G) {
    lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int64_t groups = (n_out + R - 1) / R;
    const int64_t n_warps = static_cast<int64_t>(gridDim.x) * W, wid = static_cast<int64_t>(blockIdx.x) * W + warp;
    g_begin = wid * groups / n_warps;
    g_end = (wid + 1) * groups / n_warps;
    stages = kq_lane_smem + lane_x_bytes<F>(n_blocks) + static_cast<size_t>(warp) * S * kStageBytes<F>;
    constexpr int kRunChunks = G * F::kBlockBytes / 16;  // a row's run of G blocks
    static_assert(G * F::kBlockBytes % 16 == 0, "runs of G blocks are 16-byte aligned");
#pragma unroll
    for (int q = 0; q < kChunksL; ++q) {
      const int k = lane + 32 * q;
      row_of[q] = k / kRunChunks;
      rem_of[q] = k - row_of[q] * kRunChunks;
      src_off[q] = row_of[q] * static_cast<int>(row_bytes) + 16 * rem_of[q];
    }
  }
  // Item (grp, i) into `stage`, then one cp.async group (empty past the warp's last item, so that the waits
  // count items).
  __device__ __forceinline__ void issue(int64_t grp, int i, int stage) const {
    if (grp < g_end) {
      const int act = min(G, n_blocks - G * i);
      const int64_t row0 = grp * R;
      const uint8_t* src = w + row0 * row_bytes + static_cast<int64_t>(G) * i * F::kBlockBytes;
      uint8_t* dst = stages + stage * kStageBytes<F> + 16 * lane;
      // A lane's last piece may lie past the item (Q6_K: 420 pieces for 14 x 32 lanes).
      constexpr bool kRagged = kItemChunks<F> % 32 != 0;
      if (act == G && row0 + R <= n_out) {  // every item but a short row's last run and a short last group
#pragma unroll
        for (int q = 0; q < kChunksL; ++q) {
          if (!kRagged || q < kChunksL - 1 || lane + 32 * q < kItemChunks<F>)
            cp_async16(dst + 512 * q, src + src_off[q]);
        }
      } else {
        const int run_chunks = act * F::kBlockBytes / 16;  // act: a multiple of 8 for Q6_K (kq_lane_takes)
#pragma unroll
        for (int q = 0; q < kChunksL; ++q) {
          if (lane + 32 * q < kItemChunks<F> && rem_of[q] < run_chunks && row0 + row_of[q] < n_out) {
            cp_async16(dst + 512 * q, src + src_off[q]);
          }
        }
      }
    }
    cp_async_commit();
  }
};

// The warp's first S - 1 items, issued before the chained-launch wait (weights never depend on the kernel
// before); the main loop issues item S - 1 on.
template <class F, int G, int W, int S>
__device__ __forceinline__ void prefetch_weights_smem(const LaneWeights<F, G, W, S>& lw) {
#pragma unroll
  for (int t = 0; t < S - 1; ++t) lw.issue(lw.g_begin + t / lw.iters, t % lw.iters, t);
}

// G lanes a row, W warps, S stages a warp.
template <class F, int G, int W, int S>
__global__ void __launch_bounds__(W * 32)
    kq_lane_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_out, int n_blocks,
                   const int8_t* __restrict__ xq,   // [n_in] codes of the one activation row
                   const KxBlock* __restrict__ kx,  // [n_blocks]
                   float* __restrict__ out, int accumulate) {
  const auto lw = LaneWeights<F, G, W, S>(w, row_bytes, n_out, n_blocks);
  prefetch_weights_smem(lw);
  chain_in();
  static_assert(G % 8 == 0 && 32 % G == 0, "a row's lanes hold whole streams");
  constexpr int R = 32 / G;
  uint8_t* xs = kq_lane_smem;                                                                      // [n_blocks][272]
  float* d8s = reinterpret_cast<float*>(kq_lane_smem + static_cast<size_t>(n_blocks) * kXStride);  // [n_blocks]
  uint8_t* x16 = kq_lane_smem + lane_codes_bytes(n_blocks);  // Q6_K: [n_blocks][32]
  // The activation row: codes at 272-byte strides, then (Q4_K) each block's qsums (KxBlock bytes 12-27) after
  // its codes, or (Q6_K) its sixteen 16-code sums. A thread loads K pieces before it stores any, so that they
  // are in flight together: stored one by one, each waited for its load, which measured a fifth of the
  // kernel's stall samples (Nsight Compute, one-row Q4_K 12288 x 4096, H100).
  constexpr int K = 32 / W;
  const int n_pieces = n_blocks * 17;
  for (int c0 = threadIdx.x; c0 < n_pieces; c0 += K * W * 32) {
    uint4 v[K];
    float d8v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int c = c0 + k * W * 32, blk = c / 17, piece = c - blk * 17;
      if (c >= n_pieces) continue;
      if (piece < 16) {
        v[k] = __ldg(reinterpret_cast<const uint4*>(xq + static_cast<int64_t>(blk) * kq::kBlock) + piece);
      } else {
        const auto* kw = reinterpret_cast<const uint32_t*>(kx + blk);
        if constexpr (!F::kSums16) v[k] = make_uint4(__ldg(kw + 3), __ldg(kw + 4), __ldg(kw + 5), __ldg(kw + 6));
        d8v[k] = __ldg(&kx[blk].d8);
      }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int c = c0 + k * W * 32, blk = c / 17, piece = c - blk * 17;
      if (c >= n_pieces) continue;
      if (piece < 16) {
        *reinterpret_cast<uint4*>(xs + blk * kXStride + 16 * piece) = v[k];
        if constexpr (F::kSums16) {
          const uint4 q = v[k];
          const int sum =
              __dp4a(static_cast<int>(q.w), 0x01010101,
                     __dp4a(static_cast<int>(q.z), 0x01010101,
                            __dp4a(static_cast<int>(q.y), 0x01010101, __dp4a(static_cast<int>(q.x), 0x01010101, 0))));
          reinterpret_cast<int16_t*>(x16 + blk * 32)[piece] = static_cast<int16_t>(sum);
        }
      } else {
        if constexpr (!F::kSums16) *reinterpret_cast<uint4*>(xs + blk * kXStride + 256) = v[k];
        d8s[blk] = d8v[k];
      }
    }
  }
  __syncthreads();

  const int lane = lw.lane, r = lane / G, j = lane % G, iters = lw.iters;
  // The copy cursor: item S - 1 (row group, run, stage), walked without divisions.
  int64_t issue_grp = lw.g_begin + (S - 1) / iters;
  int issue_i = (S - 1) % iters, issue_stage = S - 1;
  float acc = 0.0f;  // lanes j < 8: stream j of row r
  int i = 0, stage = 0;
  for (int64_t grp = lw.g_begin; grp < lw.g_end;) {
    lw.issue(issue_grp, issue_i, issue_stage);
    if (++issue_i == iters) issue_i = 0, ++issue_grp;
    if (++issue_stage == S) issue_stage = 0;
    cp_async_wait<S - 1>();
    __syncwarp();
    const int act = min(G, n_blocks - G * i);
    const int b = min(G * i + j, n_blocks - 1);  // lanes past the row's end read a real block, then drop it
    const uint8_t* blk = lw.stages + stage * kStageBytes<F> + lane * F::kBlockBytes;
    float v;
    if constexpr (F::kSums16) {
      v = q6k_block_value(blk, xs + b * kXStride, x16 + b * 32, d8s[b]);
    } else {
      v = q4k_block_value(blk, xs + b * kXStride, d8s[b]);
    }
#pragma unroll
    for (int q = 0; q < G / 8; ++q) {
      const float vq = __shfl_sync(0xFFFFFFFFu, v, (lane + 8 * q) & 31);
      if (8 * q + j < act) acc = kq::fadd(acc, vq);
    }
    __syncwarp();  // every lane is past this stage before a later item's copies overwrite it
    if (++stage == S) stage = 0;
    if (++i == iters) {  // the row group's last item: combine each row's streams
      acc = kq::fadd(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 1));
      acc = kq::fadd(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 2));
      acc = kq::fadd(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, 4));
      const int64_t o = grp * R + r;
      if (j == 0 && o < n_out) out[o] = accumulate ? kq::fadd(out[o], acc) : acc;
      acc = 0.0f;
      i = 0;
      ++grp;
    }
  }
}

// Lanes a row for a row of n_blocks blocks: 16 where they leave no lane idle over the row's items (n_blocks a
// multiple of 16, as 4,096 and 12,288 inputs), else 8, which idles at most 7 a row. 32 would idle no fewer than
// 8 ever does, so it is not built.
int lanes_per_row(int n_blocks) { return n_blocks % 16 == 0 ? 16 : 8; }

template <class F, int G, int W, int S>
Status launch_lane(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, float* out, bool accumulate,
                   cudaStream_t stream) {
  const int n_blocks = static_cast<int>(w.n_in / kq::kBlock);
  const size_t smem = lane_smem_bytes<F>(n_blocks, W, S);
  auto* kernel = kq_lane_kernel<F, G, W, S>;
  int device = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  // The smem limit is raised to the most this instantiation may ask for once; the resident count depends on
  // the call's smem (its row length), so it is counted once per (device, smem).
  static std::atomic<int64_t> raised[64];
  SAKER_ASSIGN_OR_RETURN(
      const int64_t ok, once_per_device(raised, device, [&]() -> Result<int64_t> {
        int max_optin = 0;
        SAKER_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        SAKER_CUDA_RETURN_IF_ERROR(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_optin));
        return int64_t{max_optin};
      }));
  if (static_cast<int64_t>(smem) > ok)
    return make_error(StatusCode::kUnsupported, "cuda matmul: row too long for kq_lane");
  static std::atomic<uint64_t> resident_cache[64][8];
  SAKER_ASSIGN_OR_RETURN(const int64_t resident,
                         once_per_device_key(resident_cache, device, static_cast<uint32_t>(smem),
                                             [&] { return resident_blocks(kernel, W * 32, smem, device); }));
  constexpr int R = 32 / G;
  const int64_t groups = (w.n_out + R - 1) / R;
  const int64_t wanted = (groups + W - 1) / W;
  const int64_t grid = wanted < resident ? wanted : resident;
  launch_chained(kernel, static_cast<unsigned>(grid), W * 32, smem, stream, static_cast<const uint8_t*>(w.data),
                 matrix_row_bytes(w), w.n_out, n_blocks, xq, kx, out, accumulate ? 1 : 0);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status{};
}

template <class F, int W, int S>
Status launch_lane_for(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, float* out, bool accumulate,
                       cudaStream_t stream) {
  if (lanes_per_row(static_cast<int>(w.n_in / kq::kBlock)) == 16) {
    return launch_lane<F, 16, W, S>(w, xq, kx, out, accumulate, stream);
  }
  return launch_lane<F, 8, W, S>(w, xq, kx, out, accumulate, stream);
}

}  // namespace

bool kq_lane_takes(const DeviceMatrix& w, int64_t rows) {
  static const bool off = cuda_matmul_is("kqdp4a");
  if (rows != 1 || off || w.n_in % kq::kBlock != 0) return false;
  // Rows up to 102,400 inputs: their staged activation row (276-308 bytes a block) leaves room for the stages.
  const int64_t n_blocks = w.n_in / kq::kBlock;
  if (n_blocks > 400) return false;
  // Q6_K: runs of blocks and rows 16-byte aligned (rows of a multiple of 8 blocks), for the 16-byte copies.
  return w.type == DType::kQ4_K || (w.type == DType::kQ6_K && n_blocks % 8 == 0);
}

Status launch_kq_lane(const DeviceMatrix& w, const int8_t* xq, const KxBlock* kx, float* out, bool accumulate,
                      cudaStream_t stream) {
  // Q4_K: eight warps a block, two stages each (SAKER_CUDA_MATMUL=kqlane3: four warps with three stages, which
  // measured 3% slower on the 8B step, H100). Q6_K's 6,720-byte stages: four warps a block.
  static const bool three = cuda_matmul_is("kqlane3");
  if (w.type == DType::kQ6_K) return launch_lane_for<LaneQ6K, 4, 2>(w, xq, kx, out, accumulate, stream);
  if (three) return launch_lane_for<LaneQ4K, 4, 3>(w, xq, kx, out, accumulate, stream);
  return launch_lane_for<LaneQ4K, 8, 2>(w, xq, kx, out, accumulate, stream);
}

}  // namespace saker::cuda::detail
