// Split-K ("flash-decoding") attention over the paged f16 cache.
//
// One block handles one KV head, a tile of consecutive query tokens and one slice of the key range:
// every query head of the KV head's GQA group and every token of the tile that belongs to the same
// sequence share each K/V tile loaded into shared memory, so a decode step reads K/V once per KV head
// and split. Each block keeps an online softmax (running max m, sum l, unnormalised acc) per query vector;
// with one split it writes the normalised output, otherwise (m, l, acc) partials that the combine kernel
// merges. The key range of a block comes from the sequence lengths in device memory (split i covers the
// i-th of n_splits equal slices of the visible range), so the grid depends only on the layout and the
// launch capacities and a captured graph replays for any lengths.
//
// Arithmetic is f32 on CUDA cores; K/V tiles are double-buffered through registers (the next tile's
// global loads are in flight while the current one is used).
#include <cfloat>

#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/attention_tiles.cuh"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"

namespace saker::cuda::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxQD = 8192;                        // query vectors x head_dim per block
constexpr int kAccPairs = kMaxQD / 2 / kThreads;    // float2 accumulators per thread
constexpr int kMaxRows = 64;                        // token rows per block (a uint64 mask)

template <int D>
struct Tile {
  static constexpr int kKeys = split_key_tile(D);   // keys per tile
  static constexpr int kStride = D + 8;             // halves per smem row: 16-byte rows, conflict-free uint4 reads
  static constexpr int kChunks = D / 8;             // uint4 per key row
  static constexpr int kLoads = kKeys * kChunks / kThreads;  // uint4 per thread for K (and again for V)
  static_assert(kKeys * kChunks % kThreads == 0, "tile must split evenly over the block");
};

using attn_tile::dispatch_head_dim;
using attn_tile::gather_pass_rows;
using attn_tile::row_sees;
using attn_tile::RowInfo;

struct SharedLayout {
  size_t q, k, v, s, m, l, fac, rows, total;
};

template <int D>
__host__ __device__ SharedLayout shared_layout(int32_t n_queries, int32_t n_rows) {
  using T = Tile<D>;
  SharedLayout s{};
  size_t at = 0;
  auto take = [&at](size_t bytes) {
    const size_t off = at;
    at += (bytes + 15) / 16 * 16;
    return off;
  };
  s.q = take(sizeof(float) * n_queries * D);                // [n_queries, D] f32, pre-scaled
  s.k = take(sizeof(__half) * T::kKeys * T::kStride);        // [kKeys, kStride] f16
  s.v = take(sizeof(__half) * T::kKeys * T::kStride);
  s.s = take(sizeof(float) * n_queries * T::kKeys);         // [n_queries, kKeys] scores, then p
  s.m = take(sizeof(float) * n_queries);
  s.l = take(sizeof(float) * n_queries);
  s.fac = take(sizeof(float) * n_queries);
  s.rows = take(sizeof(RowInfo) * n_rows);
  s.total = at;
  return s;
}

// Global -> registers for keys [k0, k0 + kKeys) of `seq` (zeros outside [klo, kend)).
template <int D>
__device__ __forceinline__ void load_tile(const SplitAttentionArgs& a, int32_t seq, int32_t g, int32_t k0, int32_t klo,
                                          int32_t kend, uint4 (&kr)[Tile<D>::kLoads], uint4 (&vr)[Tile<D>::kLoads],
                                          const attn_tile::PassTail* tail) {
  using T = Tile<D>;
#pragma unroll
  for (int i = 0; i < T::kLoads; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int j = c / T::kChunks, chunk = c % T::kChunks;
    const int32_t s = k0 + j;
    if (s >= klo && s < kend) {
      const int64_t row = attn_cache_row(a.packed, a.layout, seq, attn_tile::pass_key_slot(tail, s), a.block_size);
      const int64_t off = (row * a.n_head_kv + g) * D + chunk * 8;
      kr[i] = __ldg(reinterpret_cast<const uint4*>(a.k_cache + off));
      vr[i] = __ldg(reinterpret_cast<const uint4*>(a.v_cache + off));
    } else {
      kr[i] = make_uint4(0, 0, 0, 0);  // V must be finite: p = 0 times garbage could be NaN
      vr[i] = make_uint4(0, 0, 0, 0);
    }
  }
}

template <int D>
__device__ __forceinline__ void store_tile(__half* ks, __half* vs, const uint4 (&kr)[Tile<D>::kLoads],
                                           const uint4 (&vr)[Tile<D>::kLoads]) {
  using T = Tile<D>;
#pragma unroll
  for (int i = 0; i < T::kLoads; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int j = c / T::kChunks, chunk = c % T::kChunks;
    *reinterpret_cast<uint4*>(ks + j * T::kStride + chunk * 8) = kr[i];
    *reinterpret_cast<uint4*>(vs + j * T::kStride + chunk * 8) = vr[i];
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads, 2) split_attention_kernel(const SplitAttentionArgs a) {
  chain_in();
  using T = Tile<D>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int32_t split = blockIdx.x, g = blockIdx.y;
  const int32_t t0 = blockIdx.z * a.rows_per_tile;
  const int32_t n_tokens = a.layout.n_tokens, G = a.group;
  const SharedLayout sl = shared_layout<D>(a.rows_per_tile * G, a.rows_per_tile);
  float* qs = reinterpret_cast<float*>(smem + sl.q);
  __half* ks = reinterpret_cast<__half*>(smem + sl.k);
  __half* vs = reinterpret_cast<__half*>(smem + sl.v);
  float* ss = reinterpret_cast<float*>(smem + sl.s);
  float* ms = reinterpret_cast<float*>(smem + sl.m);
  float* ls = reinterpret_cast<float*>(smem + sl.l);
  float* fs = reinterpret_cast<float*>(smem + sl.fac);
  RowInfo* rows = reinterpret_cast<RowInfo*>(smem + sl.rows);
  __shared__ int32_t pass_seq, pass_rows, pass_lo, pass_hi;
  __shared__ attn_tile::PassTail tail_s;  // fixed slices: a tree row's chain (exact trees, attention_tiles.cuh)
  attn_tile::PassTail* tail = a.split_keys > 0 ? &tail_s : nullptr;

  const int32_t n_here = min(a.rows_per_tile, n_tokens - t0);
  uint64_t todo = n_here >= 64 ? ~0ull : ((1ull << n_here) - 1);
  // A tile normally holds tokens of one sequence; otherwise each sequence present is one pass.
  while (todo != 0) {
    if (threadIdx.x == 0) {
      gather_pass_rows(a, t0, n_here, todo, 0, rows, pass_seq, pass_rows, pass_lo, pass_hi, split, tail);
    }
    __syncthreads();
    const int32_t seq = pass_seq, n_rows = pass_rows, nq = n_rows * G;
    for (int r = 0; r < n_rows; ++r) todo &= ~(1ull << (rows[r].token - t0));

    // Queries of the pass, pre-scaled, and the softmax state.
    for (int e = threadIdx.x; e < nq * D; e += kThreads) {
      const int qi = e / D, d = e % D;
      const int32_t h = g * G + qi % G;
      qs[e] = a.q[rows[qi / G].token * a.q_stride + static_cast<int64_t>(h) * D + d] * a.scale;
    }
    for (int qi = threadIdx.x; qi < nq; qi += kThreads) {
      ms[qi] = -INFINITY;
      ls[qi] = 0.0f;
    }
    float2 acc[kAccPairs];
#pragma unroll
    for (int i = 0; i < kAccPairs; ++i) acc[i] = make_float2(0.0f, 0.0f);

    // This split's slice of the pass's key range, in whole tiles: fixed absolute slices (a query meets its
    // keys in the same tiles whichever rows share the pass) or the range cut into n_splits.
    int32_t kb, ke;
    if (a.split_keys > 0) {
      attn_fixed_slice(pass_lo, pass_hi, a.split_keys, T::kKeys, split, &kb, &ke);
    } else {
      attn_split_slice(pass_lo, pass_hi, a.n_splits, T::kKeys, split, &kb, &ke);
    }

    uint4 kr[T::kLoads], vr[T::kLoads];
    if (kb < ke) load_tile<D>(a, seq, g, kb, pass_lo, ke, kr, vr, tail);
    for (int32_t k0 = kb; k0 < ke; k0 += T::kKeys) {
      store_tile<D>(ks, vs, kr, vr);
      __syncthreads();
      if (k0 + T::kKeys < ke) load_tile<D>(a, seq, g, k0 + T::kKeys, pass_lo, ke, kr, vr, tail);

      // Scores: a warp covers consecutive keys of one query (broadcast q, conflict-free K rows).
      for (int e = threadIdx.x; e < nq * T::kKeys; e += kThreads) {
        const int qi = e / T::kKeys, j = e % T::kKeys;
        const int32_t s = k0 + j;
        float dot = -INFINITY;
        if (s < ke && row_sees(a, rows[qi / G], s)) {
          const float* qv = qs + qi * D;
          const __half* kv = ks + j * T::kStride;
          dot = 0.0f;
#pragma unroll 8
          for (int c = 0; c < D; c += 8) {
            const uint4 raw = *reinterpret_cast<const uint4*>(kv + c);
            const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
            const float4 qa = *reinterpret_cast<const float4*>(qv + c);
            const float4 qb = *reinterpret_cast<const float4*>(qv + c + 4);
            const float2 k01 = __half22float2(h2[0]), k23 = __half22float2(h2[1]);
            const float2 k45 = __half22float2(h2[2]), k67 = __half22float2(h2[3]);
            dot += qa.x * k01.x + qa.y * k01.y + qa.z * k23.x + qa.w * k23.y;
            dot += qb.x * k45.x + qb.y * k45.y + qb.z * k67.x + qb.w * k67.y;
          }
          if (a.soft_cap > 0.0f) dot = a.soft_cap * tanhf(dot / a.soft_cap);
        }
        ss[e] = dot;
      }
      __syncthreads();

      // Online softmax, one warp per query vector.
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
      attn_tile::smem_online_softmax<T::kKeys, kWarps>(ss, ms, ls, fs, nq, warp, lane);
      __syncthreads();

      // acc = acc * fac + P V; each thread owns pairs of output elements.
#pragma unroll
      for (int i = 0; i < kAccPairs; ++i) {
        const int e = threadIdx.x + i * kThreads;  // pair index over [nq, D / 2]
        if (e >= nq * (D / 2)) break;
        const int qi = e / (D / 2), d = (e % (D / 2)) * 2;
        const float* prow = ss + qi * T::kKeys;
        const float fac = fs[qi];
        float2 r = make_float2(acc[i].x * fac, acc[i].y * fac);
#pragma unroll 8
        for (int j = 0; j < T::kKeys; ++j) {
          const float pj = prow[j];
          const float2 v = __half22float2(*reinterpret_cast<const __half2*>(vs + j * T::kStride + d));
          r.x += pj * v.x;
          r.y += pj * v.y;
        }
        acc[i] = r;
      }
      __syncthreads();
    }

    // Results of the pass.
#pragma unroll
    for (int i = 0; i < kAccPairs; ++i) {
      const int e = threadIdx.x + i * kThreads;
      if (e >= nq * (D / 2)) break;
      const int qi = e / (D / 2), d = (e % (D / 2)) * 2;
      const int64_t t = rows[qi / G].token;
      const int64_t h = g * G + qi % G;
      if (a.n_splits == 1) {
        const float l = ls[qi];
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a query that sees no key gets zeros
        *reinterpret_cast<float2*>(a.out + (t * a.n_head + h) * D + d) = make_float2(acc[i].x * inv, acc[i].y * inv);
      } else {
        const int64_t idx = (static_cast<int64_t>(split) * n_tokens + t) * a.n_head + h;
        *reinterpret_cast<float2*>(a.part_acc + idx * D + d) = acc[i];
      }
    }
    if (a.n_splits > 1) {
      for (int qi = threadIdx.x; qi < nq; qi += kThreads) {
        const int64_t t = rows[qi / G].token, h = g * G + qi % G;
        a.part_ml[(static_cast<int64_t>(split) * n_tokens + t) * a.n_head + h] = make_float2(ms[qi], ls[qi]);
      }
    }
    __syncthreads();  // rows/qs/ms are rewritten by the next pass
  }
}

// out[t, h] = sum_i w_i acc_i / sum_i w_i l_i with w_i = exp(m_i - max m): one block of eight warps per
// (token, head). The maximum is exact in any order; the sums follow a fixed assignment (thread t sums the
// weights of splits t, t + 256, ...; warp j the rows of splits j, j + 8, ..., kInFlight loads in flight)
// and a fixed tree over the threads and the warps, so a row's bits depend only on its splits' partials
// (empty splits add exact zeros: more of them, as a longer context capacity brings, change nothing) and a
// lone split gives the bits of the direct write (acc * (1 / l)). Eight warps per row, not one, so that a
// decode row with hundreds of splits (32768 keys) is not one warp's chain of memory latencies.
constexpr int kCombineWarps = 8;
constexpr int kCombineThreads = kCombineWarps * 32;
constexpr int kInFlight = 8;

template <int D>
struct CombineShared {
  float weight_s[kCombineMaxSplits];
  float red_s[kCombineWarps];
  __align__(16) float4 sum_s[kCombineWarps][D / 4];
};

// One row (t * n_head + h) of the combine, by the whole block; ends with the row written and every thread
// past its last read of the shared arrays' sums (the caller's next row may reuse them after a barrier).
template <int D>
__device__ __forceinline__ void combine_row(const float2* __restrict__ part_ml, const float* __restrict__ part_acc,
                                            int32_t n_splits, int64_t n_rows, int64_t row, float* out,
                                            CombineShared<D>& sh) {
  constexpr int kVec = D / 4;             // float4 per row
  constexpr int kPer = (kVec + 31) / 32;  // float4 a lane owns: lane + 32 k below kVec
  float* weight_s = sh.weight_s;
  float* red_s = sh.red_s;
  auto& sum_s = sh.sum_s;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  float m = -INFINITY;
  for (int i = threadIdx.x; i < n_splits; i += kCombineThreads) m = fmaxf(m, part_ml[i * n_rows + row].x);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red_s[warp] = m;
  __syncthreads();
  m = red_s[0];
#pragma unroll
  for (int w = 1; w < kCombineWarps; ++w) m = fmaxf(m, red_s[w]);
  __syncthreads();  // red_s is reused for the denominator

  float l = 0.0f;
  for (int i = threadIdx.x; i < n_splits; i += kCombineThreads) {
    const float2 ml = part_ml[i * n_rows + row];
    // An empty slice (m = -inf) has weight 0 and its sums were never written: it is skipped below.
    const float w = (m == -INFINITY || ml.x == -INFINITY) ? 0.0f : expf(ml.x - m);
    weight_s[i] = w;
    l = fmaf(w, ml.y, l);
  }
  for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
  if (lane == 0) red_s[warp] = l;
  __syncthreads();
  l = ((red_s[0] + red_s[1]) + (red_s[2] + red_s[3])) + ((red_s[4] + red_s[5]) + (red_s[6] + red_s[7]));

  float4 acc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) acc[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float4* src = reinterpret_cast<const float4*>(part_acc);
  for (int i0 = warp; i0 < n_splits; i0 += kCombineWarps * kInFlight) {
    float4 x[kInFlight][kPer];
    float w[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const int i = i0 + j * kCombineWarps;
      w[j] = i < n_splits ? weight_s[i] : 0.0f;
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int c = lane + 32 * k;
        x[j][k] = (w[j] != 0.0f && c < kVec) ? src[(i * n_rows + row) * kVec + c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        acc[k].x = fmaf(w[j], x[j][k].x, acc[k].x);
        acc[k].y = fmaf(w[j], x[j][k].y, acc[k].y);
        acc[k].z = fmaf(w[j], x[j][k].z, acc[k].z);
        acc[k].w = fmaf(w[j], x[j][k].w, acc[k].w);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int c = lane + 32 * k;
    if (c < kVec) sum_s[warp][c] = acc[k];
  }
  __syncthreads();
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a query that sees no key gets zeros
  float* dst = out + row * D;  // out need not be 16-byte aligned: scalar stores
  for (int e = threadIdx.x; e < D; e += kCombineThreads) {
    const float* v = reinterpret_cast<const float*>(&sum_s[0][0]) + e;
    constexpr int S = kVec * 4;  // floats between two warps' sums
    const float total = ((v[0] + v[S]) + (v[2 * S] + v[3 * S])) + ((v[4 * S] + v[5 * S]) + (v[6 * S] + v[7 * S]));
    dst[e] = total * inv;
  }
}

template <int D>
__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(const float2* __restrict__ part_ml, const float* __restrict__ part_acc, int32_t n_splits,
                   int64_t n_rows, float* out) {
  chain_in();
  __shared__ CombineShared<D> sh;
  const int64_t row = blockIdx.x;  // row = t * n_head + h
  if (row >= n_rows) return;       // the whole block leaves: no barrier follows
  combine_row<D>(part_ml, part_acc, n_splits, n_rows, row, out, sh);
}

// The combine that also writes the K-quant matmul's activation blocks of out: block b combines the 256 / D
// rows (heads of one token) of activation block b, one after another exactly as combine_kernel does each, then
// one warp quantises the block from what the block wrote (kq_quantize_warp, as the quantisation kernel).
template <int D>
__global__ void __launch_bounds__(kCombineThreads)
    combine_quantize_kernel(const float2* __restrict__ part_ml, const float* __restrict__ part_acc, int32_t n_splits,
                            int64_t n_rows, float* out, int8_t* __restrict__ xq, kq::KxBlock* __restrict__ kx) {
  chain_in();
  constexpr int kRows = 256 / D;
  __shared__ CombineShared<D> sh;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  if (row0 >= n_rows) return;  // whole block
  for (int r = 0; r < kRows; ++r) {
    if (r > 0) __syncthreads();  // the shared sums of the previous row are read before they are rewritten
    combine_row<D>(part_ml, part_acc, n_splits, n_rows, row0 + r, out, sh);
  }
  __syncthreads();  // the block's rows are written (and visible to the block) before the warp reads them
  if (threadIdx.x < 32) kq_quantize_warp(out + row0 * D, xq + row0 * D, kx + blockIdx.x, threadIdx.x);
}

template <int D>
Status launch(const SplitAttentionArgs& a, cudaStream_t stream) {
  static std::atomic<uint64_t> smem_set{0};
  return launch_on_split_grid(split_attention_kernel<D>, kThreads,
                              shared_layout<D>(a.rows_per_tile * a.group, a.rows_per_tile).total,
                              shared_layout<D>(split_max_queries(D), kMaxRows).total, &smem_set, a, stream);
}

template <int D>
Status combine(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.n_splits > kCombineMaxSplits) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: more key splits than the combine holds");
  }
  const int64_t n_rows = static_cast<int64_t>(a.layout.n_tokens) * a.n_head;
  if constexpr (256 % D == 0) {
    if (combine_quantizes(a)) {
      launch_chained(combine_quantize_kernel<D>, static_cast<unsigned>(n_rows / (256 / D)), kCombineThreads, 0, stream,
                     a.part_ml, a.part_acc, a.n_splits, n_rows, a.out, a.out_xq, static_cast<kq::KxBlock*>(a.out_kx));
      SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
      return {};
    }
  }
  launch_chained(combine_kernel<D>, static_cast<unsigned>(n_rows), kCombineThreads, 0, stream, a.part_ml, a.part_acc,
                 a.n_splits, n_rows, a.out);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

}  // namespace

Status launch_split_combine(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.n_splits <= 1) return {};
  return dispatch_head_dim(a.head_dim, [&](auto d) { return combine<decltype(d)::value>(a, stream); });
}

Status launch_split_attention(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.rows_per_tile < 1 || a.rows_per_tile > kMaxRows || a.rows_per_tile * a.group > split_max_queries(a.head_dim)) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: bad rows_per_tile for the GQA group");
  }
  return dispatch_head_dim(a.head_dim, [&](auto d) { return launch<decltype(d)::value>(a, stream); });
}

}  // namespace saker::cuda::detail
