// Decode attention with warps that stream keys on their own ("warp split-K").
//
// One block of 4 warps handles one query token, one KV head (its whole GQA group of at most 8 query heads)
// and one slice of the token's key range. Inside the slice the warps take interleaved chunks of keys and
// never wait for each other: a warp loads the K and V rows of a chunk (kUnroll steps of 32 / (D / 8) keys,
// D / 8 lanes per key, 16 bytes a lane) straight into registers, all of them in flight at once, computes the
// scores with shuffles over the lanes of a key, and keeps its own online softmax (m, l) and accumulator for
// every query head in registers. Only at the end do the four warps merge through shared memory, and the
// block writes the same (m, l, acc) partials as the split-K kernel (combined by its combine kernel), or the
// output itself with one split.
//
// Why it was tried: the split-K and decode kernels stage K/V tiles in shared memory behind block barriers.
// Measured on the H200 it is slower than split-K (ctx 4096: 33.8 vs 27.4 us, 32768: 180.8 vs 115.6;
// attention_cuda_bench), so kAuto does not pick it (SAKER_CUDA_ATTENTION=warp does): a warp runs one chunk
// at a time, page-table lookups, then K/V loads, then compute, with only 4 KB in flight. Prefetching the
// next chunk's rows while computing this one is the next step to measure.
//
// Arithmetic is f32 (q pre-scaled in registers, exp of the f32 score minus the running maximum), as in the
// split-K kernel; masks go through the same per-row rule (row_sees), so any batch and mask is correct.
#include <cfloat>

#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/attention_tiles.cuh"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = 4;  // key steps per chunk: 2 x kUnroll uint4 loads per lane in flight

using attn_tile::gather_pass_rows;
using attn_tile::row_sees;
using attn_tile::RowInfo;

template <int D>
struct WarpGeo {
  static constexpr int kLanesPerKey = D / 8;                  // 16 bytes (8 halves) per lane
  static constexpr int kKeysPerStep = 32 / kLanesPerKey;      // keys a warp covers per load
  static constexpr int kChunkKeys = kKeysPerStep * kUnroll;   // keys per warp chunk
  static_assert(32 % kLanesPerKey == 0, "a key's lanes must tile the warp");
};

__device__ __forceinline__ void unpack8(const uint4& raw, float (&f)[8]) {
  const __half2* h2 = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = __half22float2(h2[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

// NQ: query heads per KV head rounded up to a power of two (the real group is a.group <= NQ).
template <int D, int NQ>
__global__ void __launch_bounds__(kThreads) warp_decode_attention_kernel(const SplitAttentionArgs a) {
  chain_in();
  using G = WarpGeo<D>;
  constexpr int LPK = G::kLanesPerKey;
  __shared__ RowInfo row_s[1];
  __shared__ int32_t pass_seq, pass_rows, pass_lo, pass_hi;
  __shared__ float wm[kWarps][NQ], wl[kWarps][NQ];
  __shared__ __align__(16) float wacc[kWarps][NQ][D];

  const int32_t split = blockIdx.x, g = blockIdx.y, t = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int sub = lane / LPK, part = lane % LPK;  // which key of a step, which 8 dims of it
  const int32_t nq = a.group;

  if (threadIdx.x == 0) gather_pass_rows(a, t, 1, 1ull, 1, row_s, pass_seq, pass_rows, pass_lo, pass_hi);
  __syncthreads();
  const RowInfo row = row_s[0];
  const int32_t seq = pass_seq;
  int32_t kb, ke;
  attn_split_slice(pass_lo, pass_hi, a.n_splits, G::kChunkKeys, split, &kb, &ke);

  // This lane's 8 dims of every query head of the group, pre-scaled.
  float q[NQ][8];
#pragma unroll
  for (int qi = 0; qi < NQ; ++qi) {
    if (qi < nq) {
      const float* src = a.q + static_cast<int64_t>(t) * a.q_stride + static_cast<int64_t>(g * nq + qi) * D + part * 8;
      const float4 x0 = *reinterpret_cast<const float4*>(src);
      const float4 x1 = *reinterpret_cast<const float4*>(src + 4);
      q[qi][0] = x0.x * a.scale; q[qi][1] = x0.y * a.scale; q[qi][2] = x0.z * a.scale; q[qi][3] = x0.w * a.scale;
      q[qi][4] = x1.x * a.scale; q[qi][5] = x1.y * a.scale; q[qi][6] = x1.z * a.scale; q[qi][7] = x1.w * a.scale;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) q[qi][i] = 0.0f;
    }
  }
  float m[NQ], l[NQ], acc[NQ][8];
#pragma unroll
  for (int qi = 0; qi < NQ; ++qi) {
    m[qi] = -INFINITY;
    l[qi] = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[qi][i] = 0.0f;
  }

  const int64_t head_off = static_cast<int64_t>(g) * D + part * 8;
  for (int32_t k0 = kb + warp * G::kChunkKeys; k0 < ke; k0 += kWarps * G::kChunkKeys) {
    // Every load of the chunk first, so they are all in flight together.
    uint4 kr[kUnroll], vr[kUnroll];
    bool vis[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t s = k0 + u * G::kKeysPerStep + sub;
      vis[u] = s < ke;
      if (vis[u]) {
        const int64_t off = attn_cache_row(a.packed, a.layout, seq, s, a.block_size) * a.n_head_kv * D + head_off;
        kr[u] = __ldg(reinterpret_cast<const uint4*>(a.k_cache + off));
        vr[u] = __ldg(reinterpret_cast<const uint4*>(a.v_cache + off));
      } else {
        kr[u] = make_uint4(0, 0, 0, 0);  // V must be finite: p = 0 times garbage could be NaN
        vr[u] = make_uint4(0, 0, 0, 0);
      }
      vis[u] = vis[u] && row_sees(a, row, s);
    }

    // Scores: each lane's 8-dim partial dot, summed over the key's lanes.
    float sc[kUnroll][NQ];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float kf[8];
      unpack8(kr[u], kf);
#pragma unroll
      for (int qi = 0; qi < NQ; ++qi) {
        float d = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) d = fmaf(q[qi][i], kf[i], d);
#pragma unroll
        for (int o = LPK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if (a.soft_cap > 0.0f) d = a.soft_cap * tanhf(d / a.soft_cap);
        sc[u][qi] = vis[u] ? d : -INFINITY;
      }
    }

    // Online softmax per query head over the chunk (warp-uniform m and l), then acc += p V.
#pragma unroll
    for (int qi = 0; qi < NQ; ++qi) {
      if (qi >= nq) break;
      float mx = sc[0][qi];
#pragma unroll
      for (int u = 1; u < kUnroll; ++u) mx = fmaxf(mx, sc[u][qi]);
#pragma unroll
      for (int o = LPK; o < 32; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_new = fmaxf(m[qi], mx);
      if (m_new == -INFINITY) continue;  // nothing visible yet: p = 0 everywhere
      const float fac = expf(m[qi] - m_new);  // m = -inf: 0
      float p[kUnroll], psum = 0.0f;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        p[u] = expf(sc[u][qi] - m_new);
        psum += p[u];
      }
#pragma unroll
      for (int o = LPK; o < 32; o <<= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o);
      l[qi] = l[qi] * fac + psum;
      m[qi] = m_new;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[qi][i] *= fac;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        float vf[8];
        unpack8(vr[u], vf);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[qi][i] = fmaf(p[u], vf[i], acc[qi][i]);
      }
    }
  }

  // The warp's sums over its key lanes (every sub shares m), then the block's merge of its warps.
#pragma unroll
  for (int qi = 0; qi < NQ; ++qi) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int o = LPK; o < 32; o <<= 1) acc[qi][i] += __shfl_xor_sync(0xffffffffu, acc[qi][i], o);
    }
  }
  if (sub == 0) {
#pragma unroll
    for (int qi = 0; qi < NQ; ++qi) {
      *reinterpret_cast<float4*>(&wacc[warp][qi][part * 8]) = make_float4(acc[qi][0], acc[qi][1], acc[qi][2], acc[qi][3]);
      *reinterpret_cast<float4*>(&wacc[warp][qi][part * 8 + 4]) = make_float4(acc[qi][4], acc[qi][5], acc[qi][6], acc[qi][7]);
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int qi = 0; qi < NQ; ++qi) {
      wm[warp][qi] = m[qi];
      wl[warp][qi] = l[qi];
    }
  }
  __syncthreads();

  const int32_t n_tokens = a.layout.n_tokens;
  for (int e = threadIdx.x; e < nq * D; e += kThreads) {
    const int qi = e / D, d = e % D;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, wm[w][qi]);
    float lsum = 0.0f, o = 0.0f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float f = expf(wm[w][qi] - mx);  // a warp that saw nothing: exp(-inf) = 0
        lsum += f * wl[w][qi];
        o += f * wacc[w][qi][d];
      }
    }
    const int64_t h = static_cast<int64_t>(g) * nq + qi;
    if (a.n_splits == 1) {
      a.out[(static_cast<int64_t>(t) * a.n_head + h) * D + d] = lsum > 0.0f ? o / lsum : 0.0f;
    } else {
      const int64_t idx = (static_cast<int64_t>(split) * n_tokens + t) * a.n_head + h;
      a.part_acc[idx * D + d] = o;
      if (d == 0) a.part_ml[idx] = make_float2(mx, lsum);
    }
  }
}

template <int D, int NQ>
Status launch(const SplitAttentionArgs& a, cudaStream_t stream) {
  // One token per block: rows_per_tile is 1 (the plan's), so the split grid's z is n_tokens.
  return launch_on_split_grid(warp_decode_attention_kernel<D, NQ>, kThreads, 0, 0, nullptr, a, stream);
}

template <int D>
Status launch_for_group(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.group <= 1) return launch<D, 1>(a, stream);
  if (a.group <= 2) return launch<D, 2>(a, stream);
  if (a.group <= 4) return launch<D, 4>(a, stream);
  return launch<D, 8>(a, stream);
}

}  // namespace

int32_t warp_decode_slice_keys(int32_t head_dim) { return kWarps * 32 / (head_dim / 8) * kUnroll; }

bool warp_decode_supports(int32_t head_dim, int32_t group, int32_t n_tokens) {
  return (head_dim == 64 || head_dim == 128 || head_dim == 256) && group >= 1 && group <= kWarpDecodeMaxGroup &&
         n_tokens <= 65535;
}

Status launch_warp_decode_attention(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (!warp_decode_supports(a.head_dim, a.group, a.layout.n_tokens) || a.rows_per_tile != 1) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda attention: the warp decode kernel needs head_dim 64/128/256, a GQA group <= 8, one row "
                      "per block and at most 65535 tokens");
  }
  switch (a.head_dim) {
    case 64: return launch_for_group<64>(a, stream);
    case 128: return launch_for_group<128>(a, stream);
    default: return launch_for_group<256>(a, stream);
  }
}

}  // namespace saker::cuda::detail
