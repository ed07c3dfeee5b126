// Decode attention ("flash-decoding") tuned for few query rows per sequence.
//
// One block of 128 threads handles one KV head, a tile of consecutive query tokens (rows_per_tile * group
// <= kDecodeMaxQueries query vectors) and one slice of the key range. A round loads decode_key_tile(D)
// keys of K and of V into shared memory with cp.async in two commit groups, so the block has its whole
// slice (about 64 KB) in flight at once and the scores start as soon as K has landed while V is still
// arriving. The launch plan picks n_splits from the capacity max_ctx so that a slice is usually a single
// round; splits past the real length find an empty slice and only write (m, l) = (-inf, 0).
//
// Arithmetic is f32 on CUDA cores (q pre-scaled in shared memory, one key per thread for the scores, pairs
// of output elements per thread for P V). Masks go through the same per-row rule as the split-K kernel.
#include <cfloat>

#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/attention_tiles.cuh"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxQ = kDecodeMaxQueries;
constexpr int kMaxRows = 32;  // token rows per block (<= kMaxQ)

template <int D>
struct Geo {
  static constexpr int kKeys = decode_key_tile(D);
  static constexpr int kStride = D + 8;  // halves per smem row: 16-byte rows, conflict-free uint4 reads
  static constexpr int kChunks = D / 8;  // uint4 per key row
  static constexpr int kPairs = kMaxQ * (D / 2) / kThreads;  // float2 accumulators per thread
  static_assert(kMaxQ * (D / 2) % kThreads == 0, "accumulators must split evenly");
};

using attn_tile::dispatch_head_dim;
using attn_tile::gather_pass_rows;
using attn_tile::row_sees;
using attn_tile::RowInfo;

struct Layout {
  size_t k, v, q, s, off, m, l, fac, rows, total;
};

template <int D>
__host__ __device__ Layout layout_for(int32_t n_queries, int32_t n_rows) {
  using G = Geo<D>;
  Layout s{};
  size_t at = 0;
  auto take = [&at](size_t bytes) {
    const size_t off = at;
    at += (bytes + 15) / 16 * 16;
    return off;
  };
  s.k = take(sizeof(__half) * G::kKeys * G::kStride);
  s.v = take(sizeof(__half) * G::kKeys * G::kStride);
  s.q = take(sizeof(float) * n_queries * D);          // pre-scaled
  s.s = take(sizeof(float) * n_queries * G::kKeys);  // scores, then p
  s.off = take(sizeof(int64_t) * G::kKeys);          // cache element offset of each key's row for head g
  s.m = take(sizeof(float) * n_queries);
  s.l = take(sizeof(float) * n_queries);
  s.fac = take(sizeof(float) * n_queries);
  s.rows = take(sizeof(RowInfo) * n_rows);
  s.total = at;
  return s;
}

template <int D>
__global__ void __launch_bounds__(kThreads) decode_attention_kernel(const SplitAttentionArgs a) {
  chain_in();
  using G = Geo<D>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int32_t split = blockIdx.x, g = blockIdx.y;
  const int32_t t0 = blockIdx.z * a.rows_per_tile;
  const int32_t n_tokens = a.layout.n_tokens, group = a.group;
  const Layout sl = layout_for<D>(a.rows_per_tile * group, a.rows_per_tile);
  __half* ks = reinterpret_cast<__half*>(smem + sl.k);
  __half* vs = reinterpret_cast<__half*>(smem + sl.v);
  float* qs = reinterpret_cast<float*>(smem + sl.q);
  float* ss = reinterpret_cast<float*>(smem + sl.s);
  int64_t* offs = reinterpret_cast<int64_t*>(smem + sl.off);
  float* ms = reinterpret_cast<float*>(smem + sl.m);
  float* ls = reinterpret_cast<float*>(smem + sl.l);
  float* fs = reinterpret_cast<float*>(smem + sl.fac);
  RowInfo* rows = reinterpret_cast<RowInfo*>(smem + sl.rows);
  __shared__ int32_t pass_seq, pass_rows, pass_lo, pass_hi;
  const int32_t* p = a.packed;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  const int32_t n_here = min(a.rows_per_tile, n_tokens - t0);
  uint64_t todo = n_here >= 64 ? ~0ull : ((1ull << n_here) - 1);
  // A tile normally holds tokens of one sequence; otherwise each sequence present is one pass.
  while (todo != 0) {
    if (threadIdx.x == 0) gather_pass_rows(a, t0, n_here, todo, 0, rows, pass_seq, pass_rows, pass_lo, pass_hi);
    __syncthreads();
    const int32_t seq = pass_seq, n_rows = pass_rows, nq = n_rows * group;
    for (int r = 0; r < n_rows; ++r) todo &= ~(1ull << (rows[r].token - t0));

    // This split's slice of the pass's key range, in whole rounds.
    int32_t kb, ke;
    attn_split_slice(pass_lo, pass_hi, a.n_splits, G::kKeys, split, &kb, &ke);

    for (int qi = threadIdx.x; qi < nq; qi += kThreads) {
      ms[qi] = -INFINITY;
      ls[qi] = 0.0f;
    }
    float2 acc[G::kPairs];
#pragma unroll
    for (int i = 0; i < G::kPairs; ++i) acc[i] = make_float2(0.0f, 0.0f);

    for (int32_t k0 = kb; k0 < ke; k0 += G::kKeys) {
      const int32_t n = min(G::kKeys, ke - k0);
      for (int j = threadIdx.x; j < n; j += kThreads) {
        offs[j] = (attn_cache_row(p, a.layout, seq, k0 + j, a.block_size) * a.n_head_kv + g) * D;
      }
      __syncthreads();  // offs ready (and, from the second round on, the previous round is done with smem)
      for (int c = threadIdx.x; c < n * G::kChunks; c += kThreads) {
        const int j = c / G::kChunks, ch = c % G::kChunks;
        cp_async16(ks + j * G::kStride + ch * 8, a.k_cache + offs[j] + ch * 8);
      }
      cp_async_commit();
      for (int c = threadIdx.x; c < n * G::kChunks; c += kThreads) {
        const int j = c / G::kChunks, ch = c % G::kChunks;
        cp_async16(vs + j * G::kStride + ch * 8, a.v_cache + offs[j] + ch * 8);
      }
      cp_async_commit();
      if (k0 == kb) {  // the queries, pre-scaled, while the first round's copies are in flight
        for (int e = threadIdx.x; e < nq * D; e += kThreads) {
          const int qi = e / D, d = e % D;
          const int32_t h = g * group + qi % group;
          qs[e] = a.q[rows[qi / group].token * a.q_stride + static_cast<int64_t>(h) * D + d] * a.scale;
        }
      }
      cp_async_wait<1>();  // this thread's K copies
      __syncthreads();     // everyone's

      // Scores: one key per thread, every query vector of the pass (q broadcast from smem).
      for (int j = threadIdx.x; j < G::kKeys; j += kThreads) {
        float dot[kMaxQ];
#pragma unroll
        for (int qi = 0; qi < kMaxQ; ++qi) dot[qi] = 0.0f;
        if (j < n) {
          const __half* kr = ks + j * G::kStride;
#pragma unroll 2
          for (int c = 0; c < D; c += 8) {
            const uint4 raw = *reinterpret_cast<const uint4*>(kr + c);
            const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
            const float2 k01 = __half22float2(h2[0]), k23 = __half22float2(h2[1]);
            const float2 k45 = __half22float2(h2[2]), k67 = __half22float2(h2[3]);
#pragma unroll
            for (int qi = 0; qi < kMaxQ; ++qi) {
              if (qi < nq) {
                const float4 qa = *reinterpret_cast<const float4*>(qs + qi * D + c);
                const float4 qb = *reinterpret_cast<const float4*>(qs + qi * D + c + 4);
                dot[qi] += qa.x * k01.x + qa.y * k01.y + qa.z * k23.x + qa.w * k23.y + qb.x * k45.x + qb.y * k45.y +
                           qb.z * k67.x + qb.w * k67.y;
              }
            }
          }
        }
#pragma unroll
        for (int qi = 0; qi < kMaxQ; ++qi) {
          if (qi < nq) {
            float x = -INFINITY;
            if (j < n && row_sees(a, rows[qi / group], k0 + j)) {
              x = dot[qi];
              if (a.soft_cap > 0.0f) x = a.soft_cap * tanhf(x / a.soft_cap);
            }
            ss[qi * G::kKeys + j] = x;
          }
        }
      }
      __syncthreads();

      // Online softmax, one warp per query vector.
      attn_tile::smem_online_softmax<G::kKeys, kWarps>(ss, ms, ls, fs, nq, warp, lane);
      cp_async_wait<0>();  // this thread's V copies
      __syncthreads();     // everyone's, and p / fac

      // acc = acc * fac + P V over the n keys of the round; each thread owns pairs of output elements.
#pragma unroll
      for (int i = 0; i < G::kPairs; ++i) {
        const int e = threadIdx.x + i * kThreads;  // pair index over [nq, D / 2]
        if (e < nq * (D / 2)) {
          const int qi = e / (D / 2), d = (e % (D / 2)) * 2;
          const float* prow = ss + qi * G::kKeys;
          const float fac = fs[qi];
          float2 r = make_float2(acc[i].x * fac, acc[i].y * fac);
#pragma unroll 8
          for (int j = 0; j < n; ++j) {
            const float pj = prow[j];
            const float2 v = __half22float2(*reinterpret_cast<const __half2*>(vs + j * G::kStride + d));
            r.x += pj * v.x;
            r.y += pj * v.y;
          }
          acc[i] = r;
        }
      }
      __syncthreads();  // smem is rewritten by the next round
    }

    // Results of the pass. An empty slice writes only (m, l) = (-inf, 0): the combine skips its sums.
#pragma unroll
    for (int i = 0; i < G::kPairs; ++i) {
      const int e = threadIdx.x + i * kThreads;
      if (e < nq * (D / 2)) {
        const int qi = e / (D / 2), d = (e % (D / 2)) * 2;
        const int64_t t = rows[qi / group].token;
        const int64_t h = g * group + qi % group;
        if (a.n_splits == 1) {
          const float l = ls[qi];
          const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a query that sees no key gets zeros
          *reinterpret_cast<float2*>(a.out + (t * a.n_head + h) * D + d) = make_float2(acc[i].x * inv, acc[i].y * inv);
        } else if (kb < ke) {
          const int64_t idx = (static_cast<int64_t>(split) * n_tokens + t) * a.n_head + h;
          *reinterpret_cast<float2*>(a.part_acc + idx * D + d) = acc[i];
        }
      }
    }
    if (a.n_splits > 1) {
      for (int qi = threadIdx.x; qi < nq; qi += kThreads) {
        const int64_t t = rows[qi / group].token, h = g * group + qi % group;
        a.part_ml[(static_cast<int64_t>(split) * n_tokens + t) * a.n_head + h] =
            kb < ke ? make_float2(ms[qi], ls[qi]) : make_float2(-INFINITY, 0.0f);
      }
    }
    __syncthreads();  // rows/qs/ms are rewritten by the next pass
  }
}

template <int D>
Status launch(const SplitAttentionArgs& a, cudaStream_t stream) {
  static std::atomic<uint64_t> smem_set{0};
  return launch_on_split_grid(decode_attention_kernel<D>, kThreads,
                              layout_for<D>(a.rows_per_tile * a.group, a.rows_per_tile).total,
                              layout_for<D>(kMaxQ, kMaxRows).total, &smem_set, a, stream);
}

}  // namespace

Status launch_decode_attention(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.rows_per_tile < 1 || a.rows_per_tile > kMaxRows || a.rows_per_tile * a.group > kMaxQ) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: bad rows_per_tile for the decode kernel");
  }
  return dispatch_head_dim(a.head_dim, [&](auto d) { return launch<decltype(d)::value>(a, stream); });
}

}  // namespace saker::cuda::detail
