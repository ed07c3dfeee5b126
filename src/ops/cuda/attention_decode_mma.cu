// Tensor-core flash-decoding over fixed key slices (AttentionKernel::kVerifyFixed): decode rows and
// speculative verify rows give each query vector the same bits at every width.
//
// One block = one KV head g, one slice of split_keys absolute key slots (tiles of 64 keys at absolute
// multiples of 64), and a pass of up to 64 query vectors of one sequence: rows_per_tile tokens x the GQA
// group, vector m = token row m / group, head g * group + m % group, in MT m-tiles of 16 (1, 2 or 4: the
// launch's widest pass). Per tile the eight warps share the work so that a one-row decode keeps them all
// busy and every query vector goes through the same operations whatever else is in the pass:
//   - scores: warp w computes S = Q K^T for keys 8w..8w+7 of the tile for every m-tile (mma.sync
//     m16n8k16, f16 in, f32 accumulate, the k-chain over head_dim in order);
//   - softmax: the tile's row maximum from the warps' maxima (exact), p = exp(s - m) rounded to f16 into
//     shared memory, the row sum from the warps' partial sums in a fixed tree; every warp keeps the
//     running (m, l) of its rows in registers, computed identically;
//   - P V: warp w accumulates output column pairs w, w + 8, ... (16 columns each) over the tile's keys.
// An mma output element reads only its own row of A, so a vector's result does not depend on the row it
// occupies, on the other rows or on MT; the float steps around the mma are spelled with explicit
// round-to-nearest intrinsics so that no instantiation contracts them differently. Output: the normalised
// rows (one slice) or (m, l, sums) partials for the combine kernel, exactly as the split-K kernels write
// them. K/V tiles stream through two cp.async stages: the next tile's loads are issued once every warp is
// past the previous one (right after the tile's top barrier, so they fly while its scores and values are computed).
// Draft-tree rows read their keys through the logical view of plain decoding (PassTail, attention_tiles.cuh), so a
// verified tree node gets a one-row decode's bits.
#include <atomic>
#include <cfloat>
#include <cstdint>
#include <cstring>

#include "core/env.h"
#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/attention_tiles.cuh"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/resident_blocks.h"
#include "ops/cuda/slice_grid.h"

namespace saker::cuda::detail {
namespace {

using namespace attn_tile;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kKeys = 64;                  // keys per tile
constexpr int kWarpKeys = kKeys / kWarps;  // one n-tile of 8 keys per warp
constexpr int kMaxRows = 64;               // query vectors per pass
constexpr int kStages = 2;                 // K/V tiles in flight

// K/V rows in shared memory. Head sizes of whole 8-chunk groups (64, 128, 256) store a row's 16-byte chunks
// unpadded, chunk c of row r at c ^ (r & 7) within its group of eight, so the eight rows an ldmatrix reads hit
// eight distinct bank groups; the others pad each row by one chunk. At D = 128 the padding took 4 KB of a
// one-m-tile block's 77 KB: without it three blocks fit a SM's 228 KB instead of two.
// (load_kv's Rows for this kernel.)
template <int D>
struct KvRows {
  static constexpr bool kSwizzle = D % 64 == 0;
  static constexpr int kStride = kSwizzle ? D : D + 8;  // halves per row
  // Halves from a buffer's start to row r, column col (a multiple of 8: a 16-byte chunk's first half).
  __device__ __forceinline__ static int at(int r, int col) {
    if constexpr (kSwizzle) return r * kStride + (((col >> 3) ^ (r & 7)) << 3);
    return r * kStride + col;
  }
};

template <int D, int MT>
struct Geo {
  static constexpr int kRows = MT * 16;
  static constexpr int kStride = D + 8;  // halves per Q smem row: conflict-free ldmatrix
  static constexpr int kQ = kRows * kStride;
  static constexpr int kKv = kKeys * KvRows<D>::kStride;
  static constexpr int kPStride = kKeys + 8;  // halves per P row
  static constexpr int kP = kRows * kPStride;
  static constexpr int kPairs = D / 16;  // output column pairs (two n-tiles of 8)
  static constexpr int kWarpPairs = (kPairs + kWarps - 1) / kWarps;
  static constexpr size_t kHalves = kQ + 2 * kStages * kKv + kP;  // Q, (K, V) per stage, P
  static constexpr size_t kSmem = sizeof(__half) * kHalves + sizeof(float) * 2 * kWarps * kRows;
};

template <int D, int MT>
__global__ void __launch_bounds__(kThreads, MT == 1 && D <= 128 ? 3 : 0) decode_mma_kernel(const SplitAttentionArgs a) {
  chain_in();
  using G = Geo<D, MT>;
  constexpr int R = G::kRows;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* qs = reinterpret_cast<__half*>(smem);
  __half* kv = qs + G::kQ;                 // stage i: K at kv + 2i kKv, V after it
  __half* ps = kv + 2 * kStages * G::kKv;  // [R, kPStride] f16 probabilities of the tile
  float* red_max = reinterpret_cast<float*>(smem + sizeof(__half) * G::kHalves);  // [kWarps, R]
  float* red_sum = red_max + kWarps * R;                                          // [kWarps, R]
  __shared__ RowInfo rows[kMaxRows];
  __shared__ int32_t pass_seq, pass_rows, pass_lo, pass_hi;
  __shared__ int32_t plain_lo, plain_hi;  // keys every row of the pass sees by its plain range alone
  __shared__ PassTail tail;  // a tree row's chain (exact trees, attention_tiles.cuh)
  __shared__ bool tile_has_tree;

  const int32_t g = blockIdx.y, group = a.group;
  const int32_t t0 = blockIdx.z * a.rows_per_tile, n_tokens = a.layout.n_tokens;
  const int32_t n_here = min(a.rows_per_tile, n_tokens - t0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gid = lane >> 2, tig = lane & 3;

  // The block takes slices blockIdx.x, + gridDim.x, ... (the launch sizes the grid so that the blocks stay
  // resident and their copies stream from slice to slice). A pass's rows are the same for all of them, so it
  // gathers its rows and queries once, unless its tile holds draft-tree rows, whose passes depend on the
  // slice (gather_pass_rows): then it runs its slices one at a time, each with its own passes. With one slice a
  // block both ways run the same slice with the same passes, and the check is skipped: with it everywhere, a
  // 16-row verify step after 512 keys (one slice a block) measured 1.7% slower than before (8B Q4_K_M, H100),
  // most likely its serial reads before the first barrier (not re-measured without them).
  if (threadIdx.x == 0) {
    bool any = false;
    if (gridDim.x < a.n_splits) {
      for (int r = 0; r < n_here; ++r) {
        any = any || a.packed[a.layout.seq_mask + a.packed[a.layout.token_seq + t0 + r]] ==
                         static_cast<int32_t>(AttentionMask::kTree);
      }
    }
    tile_has_tree = any;
  }
  __syncthreads();
  const bool per_slice = tile_has_tree;
  for (int32_t s_first = blockIdx.x; s_first < a.n_splits; s_first = per_slice ? s_first + gridDim.x : a.n_splits) {
    const int32_t s_end = per_slice ? s_first + 1 : a.n_splits;  // this round's slices: s_first, + gridDim.x, ...
    uint64_t todo = n_here >= 64 ? ~0ull : ((1ull << n_here) - 1);
    while (todo != 0) {
      if (threadIdx.x == 0) {
        gather_pass_rows(a, t0, n_here, todo, 0, rows, pass_seq, pass_rows, pass_lo, pass_hi, s_first, &tail);
        int32_t lo = INT32_MIN, hi = INT32_MAX;
        for (int r = 0; r < pass_rows; ++r) lo = max(lo, rows[r].lo), hi = min(hi, min(rows[r].hi, rows[r].tree_start));
        plain_lo = lo;
        plain_hi = hi;
      }
      __syncthreads();
      const int32_t seq = pass_seq, nq = pass_rows * group, n_mt = (nq + 15) / 16;
      for (int r = 0; r < pass_rows; ++r) todo &= ~(1ull << (rows[r].token - t0));

      // Query vectors of the pass -> f16 smem (zeros past nq).
      for (int c = threadIdx.x; c < n_mt * 16 * (D / 4); c += kThreads) {
        const int m = c / (D / 4), d = (c % (D / 4)) * 4;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (m < nq) {
          const int64_t h = g * group + m % group;
          v = *reinterpret_cast<const float4*>(a.q + rows[m / group].token * a.q_stride + h * D + d);
        }
        *reinterpret_cast<uint2*>(qs + m * G::kStride + d) = make_uint2(pack_half2(v.x, v.y), pack_half2(v.z, v.w));
      }
      // The copy cursor: the next tile to load among the round's slices (each in whole tiles at absolute
      // positions, keys below the pass's range loading as zeros), so the copies run ahead across a slice's end as
      // across its tiles. One cp.async group a tile (empty groups keep the count).
      int32_t copy_split = s_first, copy_k0 = 0, copy_ke = 0;
      attn_fixed_slice(pass_lo, pass_hi, a.split_keys, kKeys, copy_split, &copy_k0, &copy_ke);
      const KvCursor cursor(a, seq, &tail);  // after the pass's rows (and tail) are gathered: the barrier above
      auto settle = [&]() {  // past the current slice's end: the next slice with keys, if any
        while (copy_k0 >= copy_ke && copy_split < s_end) {
          copy_split += gridDim.x;
          if (copy_split < s_end)
            attn_fixed_slice(pass_lo, pass_hi, a.split_keys, kKeys, copy_split, &copy_k0, &copy_ke);
        }
      };
      settle();
      auto issue = [&](int stage) {
        if (copy_split < s_end) {
          __half* st = kv + 2 * stage * G::kKv;
          load_kv_cursor<D, kKeys, kThreads, KvRows<D>>(a, cursor, g, copy_k0, pass_lo, copy_ke, st, st + G::kKv,
                                                        &tail);
          copy_k0 += kKeys;
          settle();
        }
        cp_async_commit();
      };
#pragma unroll
      for (int st = 0; st < kStages - 1; ++st) issue(st);

      // This thread's rows: vector mt * 16 + gid (half 0) and + 8 (half 1) of every m-tile (their RowInfo
      // stays in shared memory: registers go to the accumulators).
      // By value: a reference to either shared memory or a local default made every read of it a generic load
      // and gave the kernel a stack frame (Nsight Compute: 54,008 local-memory requests at 32,768 keys).
      auto row_of = [&](int mt, int h) -> RowInfo {
        const int m = mt * 16 + gid + 8 * h;
        return m < nq ? rows[m / group] : RowInfo{-1, 0, 0, INT32_MAX};
      };
      int it = 0;  // tiles computed so far in this pass (stage it % kStages)
      for (int32_t split_i = s_first; split_i < s_end; split_i += gridDim.x) {
        int32_t kb, ke;
        attn_fixed_slice(pass_lo, pass_hi, a.split_keys, kKeys, split_i, &kb, &ke);
        float m_run[MT][2], l_run[MT][2];
        float o[MT][G::kWarpPairs][2][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            m_run[mt][h] = -INFINITY;
            l_run[mt][h] = 0.0f;
          }
#pragma unroll
          for (int p = 0; p < G::kWarpPairs; ++p) {
#pragma unroll
            for (int n = 0; n < 2; ++n) o[mt][p][n][0] = o[mt][p][n][1] = o[mt][p][n][2] = o[mt][p][n][3] = 0.0f;
          }
        }

        for (int32_t k0 = kb; k0 < ke; k0 += kKeys, ++it) {
          // Tile `it` is group `it`; kStages - 2 groups were committed after it. The barrier also tells every
          // thread that the others are done with tile it - 1 (its stage, P and the partial maxima).
          cp_async_wait<kStages - 2>();
          __syncthreads();
          // Tile it + kStages - 1 (of this slice or the next) into the stage tile it - 1 used (everyone is past it:
          // the barrier above), in flight while this tile's scores and values are computed.
          issue((it + kStages - 1) % kStages);
          const __half* ks = kv + 2 * (it % kStages) * G::kKv;
          const __half* vs = ks + G::kKv;

          // Scores of this warp's 8 keys for every m-tile.
          float s[MT][4];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) s[mt][0] = s[mt][1] = s[mt][2] = s[mt][3] = 0.0f;
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t kb2[2];
            // Matrices: keys 8w + 0-7 x d kk*16 + 0-7, then + 8-15.
            ldmatrix_x2(kb2, ks + KvRows<D>::at(warp * kWarpKeys + (lane & 7), kk * 16 + ((lane >> 3) & 1) * 8));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
              if (mt < n_mt) {
                uint32_t qa[4];
                ldmatrix_x4(
                    qa, qs + (mt * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * G::kStride + kk * 16 + (lane >> 4) * 8);
                mma16816(s[mt], qa, kb2[0], kb2[1]);
              }
            }
          }
          // Scale, cap, mask; this warp's row maxima. A tile inside every row's plain range masks only the
          // keys past the slice and the m-tile's unused rows: the same decisions as row_sees, without its loads.
          const bool plain = k0 >= plain_lo && k0 + kKeys <= plain_hi;
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            if (mt >= n_mt) continue;
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              float x = __fmul_rn(s[mt][e], a.scale);
              if (a.soft_cap > 0.0f) x = __fmul_rn(a.soft_cap, tanhf(__fdiv_rn(x, a.soft_cap)));
              const int32_t key = k0 + warp * kWarpKeys + tig * 2 + (e & 1);
              const bool seen = plain ? mt * 16 + gid + 8 * (e >> 1) < nq : row_sees(a, row_of(mt, e >> 1), key);
              if (key >= ke || !seen) x = -INFINITY;
              s[mt][e] = x;
              mx[e >> 1] = fmaxf(mx[e >> 1], x);
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
              mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
              if (tig == 0) red_max[warp * R + mt * 16 + gid + 8 * h] = mx[h];
            }
          }
          __syncthreads();

          // Probabilities against the new running maxima (f16 into ps), this warp's partial row sums.
          float fac[MT][2];
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            if (mt >= n_mt) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int m = mt * 16 + gid + 8 * h;
              float tile_max = red_max[m];
#pragma unroll
              for (int w = 1; w < kWarps; ++w) tile_max = fmaxf(tile_max, red_max[w * R + m]);
              const float m_new = fmaxf(m_run[mt][h], tile_max);
              fac[mt][h] = m_new == -INFINITY ? 1.0f : exp2f(__fmul_rn(__fsub_rn(m_run[mt][h], m_new), kLog2e));
              const float b = m_new == -INFINITY ? 0.0f : __fmul_rn(m_new, kLog2e);
              m_run[mt][h] = m_new;
              // exp2(-inf) = 0 for masked keys.
              const float p0 = exp2f(__fsub_rn(__fmul_rn(s[mt][2 * h], kLog2e), b));
              const float p1 = exp2f(__fsub_rn(__fmul_rn(s[mt][2 * h + 1], kLog2e), b));
              *reinterpret_cast<uint32_t*>(ps + m * G::kPStride + warp * kWarpKeys + tig * 2) = pack_half2(p0, p1);
              float sum = __fadd_rn(p0, p1);
              sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
              sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 2));
              if (tig == 0) red_sum[warp * R + m] = sum;
            }
          }
          __syncthreads();

          // Running sums (the warps' partial sums in a fixed tree) and the rescaled output, then O += P V over
          // this warp's column pairs.
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            if (mt >= n_mt) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int m = mt * 16 + gid + 8 * h;
              const float* rs = red_sum + m;
              const float tile_sum =
                  __fadd_rn(__fadd_rn(__fadd_rn(rs[0], rs[R]), __fadd_rn(rs[2 * R], rs[3 * R])),
                            __fadd_rn(__fadd_rn(rs[4 * R], rs[5 * R]), __fadd_rn(rs[6 * R], rs[7 * R])));
              l_run[mt][h] = __fadd_rn(__fmul_rn(l_run[mt][h], fac[mt][h]), tile_sum);
            }
#pragma unroll
            for (int p = 0; p < G::kWarpPairs; ++p) {
#pragma unroll
              for (int n = 0; n < 2; ++n) {
                o[mt][p][n][0] = __fmul_rn(o[mt][p][n][0], fac[mt][0]);
                o[mt][p][n][1] = __fmul_rn(o[mt][p][n][1], fac[mt][0]);
                o[mt][p][n][2] = __fmul_rn(o[mt][p][n][2], fac[mt][1]);
                o[mt][p][n][3] = __fmul_rn(o[mt][p][n][3], fac[mt][1]);
              }
            }
          }
#pragma unroll
          for (int kk = 0; kk < kKeys / 16; ++kk) {
#pragma unroll
            for (int p = 0; p < G::kWarpPairs; ++p) {
              const int pair = warp + kWarps * p;
              if (pair >= G::kPairs) break;
              uint32_t vb[4];
              // Transposed matrices: keys kk*16 + 0-7 / 8-15 x columns pair*16 + 0-7, then + 8-15.
              ldmatrix_x4_trans(
                  vb, vs + KvRows<D>::at(kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7), pair * 16 + (lane >> 4) * 8));
#pragma unroll
              for (int mt = 0; mt < MT; ++mt) {
                if (mt < n_mt) {
                  uint32_t pa[4];
                  ldmatrix_x4(pa, ps + (mt * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * G::kPStride + kk * 16 +
                                      (lane >> 4) * 8);
                  mma16816(o[mt][p][0], pa, vb[0], vb[1]);
                  mma16816(o[mt][p][1], pa, vb[2], vb[3]);
                }
              }
            }
          }
        }
        // Results of the slice (registers and the pass's rows only: the next slice's tiles may already load).
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (mt >= n_mt) continue;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int m = mt * 16 + gid + 8 * h;
            const RowInfo r = row_of(mt, h);
            if (r.token < 0) continue;
            const int64_t hd = g * group + m % group;
            const int64_t i = static_cast<int64_t>(r.token) * a.n_head + hd;
            const int64_t pi = static_cast<int64_t>(split_i) * n_tokens * a.n_head + i;    // partial index
            const float inv = l_run[mt][h] > 0.0f ? __fdiv_rn(1.0f, l_run[mt][h]) : 0.0f;  // no key -> zeros
#pragma unroll
            for (int p = 0; p < G::kWarpPairs; ++p) {
              const int pair = warp + kWarps * p;
              if (pair >= G::kPairs) break;
#pragma unroll
              for (int n = 0; n < 2; ++n) {
                const int d = pair * 16 + n * 8 + tig * 2;
                const float x = o[mt][p][n][2 * h], y = o[mt][p][n][2 * h + 1];
                if (a.n_splits == 1) {
                  *reinterpret_cast<float2*>(a.out + i * D + d) = make_float2(__fmul_rn(x, inv), __fmul_rn(y, inv));
                } else if (kb < ke) {  // an empty slice writes only (m, l): the combine skips its sums
                  *reinterpret_cast<float2*>(a.part_acc + pi * D + d) = make_float2(x, y);
                }
              }
            }
            if (a.n_splits > 1 && warp == 0 && tig == 0) {
              a.part_ml[pi] = kb < ke ? make_float2(m_run[mt][h], l_run[mt][h]) : make_float2(-INFINITY, 0.0f);
            }
          }
        }
      }  // slices
      cp_async_wait<0>();
      __syncthreads();  // no stage, row or query is read past this point by any thread (the next pass rewrites them)
    }                   // passes
  }                     // rounds
}

// Blocks along the slices (best_slice_grid, slice_grid.h). One block a slice (the grid's old shape) left most
// of a block's life without K/V in flight at long contexts: 32,768 keys were 256 slices of 128 keys, each a
// short block. SAKER_CUDA_ATTENTION=oneslice keeps one block a slice (to compare; same bits).
int32_t slice_grid_x(int32_t n_splits, int64_t blocks_a_slice, int64_t resident) {
  const char* env = debug_env().cuda_attention;
  if (env != nullptr && std::strstr(env, "oneslice") != nullptr) return n_splits;
  return best_slice_grid(n_splits, blocks_a_slice, resident);
}

template <int D, int MT>
Status launch(const SplitAttentionArgs& a, cudaStream_t stream) {
  static std::atomic<uint64_t> smem_set{0};
  static std::atomic<int64_t> resident_cache[64] = {};
  using G = Geo<D, MT>;
  SAKER_RETURN_IF_ERROR(allow_dynamic_smem(decode_mma_kernel<D, MT>, G::kSmem, &smem_set));
  int dev = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  SAKER_ASSIGN_OR_RETURN(const int64_t resident, once_per_device(resident_cache, dev, [&] {
                           return resident_blocks(decode_mma_kernel<D, MT>, kThreads, G::kSmem, dev);
                         }));
  const int64_t n_tiles = (a.layout.n_tokens + a.rows_per_tile - 1) / a.rows_per_tile;
  return launch_on_split_grid(decode_mma_kernel<D, MT>, kThreads, G::kSmem, G::kSmem, &smem_set, a, stream,
                              slice_grid_x(a.n_splits, a.n_head_kv * n_tiles, resident));
}

}  // namespace

Status launch_decode_mma_attention(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.rows_per_tile < 1 || a.rows_per_tile * a.group > kMaxRows || (a.q_stride & 3) != 0 ||
      (reinterpret_cast<uintptr_t>(a.q) & 15) != 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: bad rows_per_tile or q alignment for decode-mma");
  }
  if (a.split_keys <= 0 || a.split_keys % kKeys != 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda attention: decode-mma needs fixed slices of whole 64-key tiles");
  }
  // The m-tiles of the widest pass: a one-row decode carries no registers for 64 vectors.
  const int32_t vectors = a.rows_per_tile * a.group;
  return dispatch_head_dim(a.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    if (vectors <= 16) return launch<D, 1>(a, stream);
    if (vectors <= 32) return launch<D, 2>(a, stream);
    return launch<D, 4>(a, stream);
  });
}

}  // namespace saker::cuda::detail
