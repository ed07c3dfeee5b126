// Tensor-core attention for speculative verify: a few to 64 query rows of one sequence at a long context.
//
// The same tile machinery as the tiled prefill kernel (mma.sync m16n8k16, f16 in, f32 accumulate, K/V
// tiles of 64 keys double-buffered with cp.async, online softmax in registers), with two changes for the
// verify shape: the 64 rows of a block's M dimension are the query vectors of one KV head's GQA group
// (rows_per_tile tokens x group heads, vector m = token row m / group, head g * group + m % group), so K/V
// are read once per KV head and not once per query head; and the key range is split over the grid's
// first dimension like split-K, each block writing (m, l, unnormalised sums) partials for the combine
// kernel (or the output directly when n_splits == 1).
#include <cfloat>

#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = kWarps * 16;  // query rows per block
constexpr int kKeys = 64;           // keys per tile
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct Geo {
  static constexpr int kStride = D + 8;  // halves per smem row: 16-byte aligned rows, conflict-free ldmatrix
  static constexpr int kQ = kRows * kStride;
  static constexpr int kKv = kKeys * kStride;
  static constexpr size_t kSmem = sizeof(__half) * (kQ + 4 * kKv);  // Q, then K0, V0, K1, V1
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
};

struct RowInfo {
  int32_t token;       // batch index, -1 for an unused row
  int32_t lo, hi;      // exact visible range outside a tree
  int32_t tree_start;  // INT32_MAX outside a tree
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  // src-size 0 zero-fills the destination without reading (keys past the range).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a (16x16 f16, row) * b (16x8 f16, col), f32 accumulate.
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

__device__ __forceinline__ bool row_sees(const SplitAttentionArgs& a, const RowInfo& r, int32_t s) {
  if (r.token < 0 || s >= r.hi) return false;
  if (s < r.tree_start) return s >= r.lo;
  return attn_key_visible(a.packed, a.layout, r.token, s, a.window);
}

// Issues the cp.async copies of keys [k0, k0 + kKeys) (zero past kend) into one K/V buffer pair.
template <int D>
__device__ __forceinline__ void load_kv(const SplitAttentionArgs& a, int32_t seq, int32_t g, int32_t k0, int32_t kend,
                                        __half* ks, __half* vs) {
  using G = Geo<D>;
  for (int c = threadIdx.x; c < kKeys * G::kChunks; c += kThreads) {
    const int j = c / G::kChunks, chunk = c % G::kChunks;
    const int32_t s = k0 + j;
    const bool valid = s < kend;
    const int64_t off =
        valid ? (attn_cache_row(a.packed, a.layout, seq, s, a.block_size) * a.n_head_kv + g) * D + chunk * 8 : 0;
    cp_async16(ks + j * G::kStride + chunk * 8, a.k_cache + off, valid);
    cp_async16(vs + j * G::kStride + chunk * 8, a.v_cache + off, valid);
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads) verify_attention_kernel(const SplitAttentionArgs a) {
  using G = Geo<D>;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* qs = reinterpret_cast<__half*>(smem);
  __half* kv = qs + G::kQ;  // K0, V0, K1, V1
  __shared__ RowInfo rows[kRows];
  __shared__ int32_t pass_seq, pass_rows, pass_lo, pass_hi;

  const int32_t split = blockIdx.x, g = blockIdx.y, group = a.group;
  const int32_t t0 = blockIdx.z * a.rows_per_tile, n_tokens = a.layout.n_tokens;
  const int32_t n_here = min(a.rows_per_tile, n_tokens - t0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gid = lane >> 2, tig = lane & 3;
  const int32_t* p = a.packed;

  uint64_t todo = n_here >= 64 ? ~0ull : ((1ull << n_here) - 1);
  while (todo != 0) {
    if (threadIdx.x == 0) {
      const int leader = __ffsll(static_cast<long long>(todo)) - 1;
      const int32_t seq = p[a.layout.token_seq + t0 + leader];
      int32_t n = 0, lo = INT32_MAX, hi = 0;
      for (int r = leader; r < n_here; ++r) {
        const int32_t t = t0 + r;
        if (!((todo >> r) & 1) || p[a.layout.token_seq + t] != seq) continue;
        RowInfo info;
        info.token = t;
        attn_key_range(p, a.layout, t, a.window, &info.lo, &info.hi);
        lo = min(lo, info.lo);
        hi = max(hi, info.hi);
        const bool tree = p[a.layout.seq_mask + seq] == static_cast<int32_t>(AttentionMask::kTree);
        info.tree_start = tree ? p[a.layout.seq_tree_start + seq] : INT32_MAX;
        if (tree && a.window > 0) info.lo = max(0, p[a.layout.token_pos + t] - a.window + 1);
        rows[n++] = info;
      }
      pass_seq = seq;
      pass_rows = n;
      pass_lo = lo;
      pass_hi = hi;
    }
    __syncthreads();
    const int32_t seq = pass_seq, n_rows = pass_rows, nq = n_rows * group;
    for (int r = 0; r < n_rows; ++r) todo &= ~(1ull << (rows[r].token - t0));
    int32_t kb, ke;
    attn_split_slice(pass_lo, pass_hi, a.n_splits, kKeys, split, &kb, &ke);

    // Query vectors of this pass -> f16 smem (zeros for unused rows): vector m is token row m / group,
    // head g * group + m % group.
    for (int c = threadIdx.x; c < kRows * (D / 4); c += kThreads) {
      const int m = c / (D / 4), d = (c % (D / 4)) * 4;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (m < nq) {
        const int64_t h = g * group + m % group;
        v = *reinterpret_cast<const float4*>(a.q + rows[m / group].token * a.q_stride + h * D + d);
      }
      *reinterpret_cast<uint2*>(qs + m * G::kStride + d) = make_uint2(pack_half2(v.x, v.y), pack_half2(v.z, v.w));
    }
    if (kb < ke) load_kv<D>(a, seq, g, kb, ke, kv, kv + G::kKv);
    cp_async_commit();
    __syncthreads();

    const int m0 = warp * 16 + gid, m1 = m0 + 8;
    const RowInfo none{-1, 0, 0, INT32_MAX};
    const RowInfo r0 = m0 < nq ? rows[m0 / group] : none, r1 = m1 < nq ? rows[m1 / group] : none;
    const bool warp_active = warp * 16 < nq;
    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m0v = -INFINITY, m1v = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    int buf = 0;
    for (int32_t k0 = kb; k0 < ke; k0 += kKeys, buf ^= 1) {
      // Prefetch the next tile into the other buffer, then wait for this one.
      if (k0 + kKeys < ke) load_kv<D>(a, seq, g, k0 + kKeys, ke, kv + (buf ^ 1) * 2 * G::kKv, kv + (buf ^ 1) * 2 * G::kKv + G::kKv);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
      const __half* ks = kv + buf * 2 * G::kKv;
      const __half* vs = ks + G::kKv;

      // A warp whose rows all end before this tile (causal diagonal) skips it.
      const bool any = warp_active && __any_sync(0xffffffffu, (r0.token >= 0 && k0 < r0.hi) || (r1.token >= 0 && k0 < r1.hi));
      if (any) {
        float s[kKeys / 8][4];
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          uint32_t qa[4];
          // Matrices: rows 0-7 / 8-15 of the warp's 16 x cols kk*16 + 0-7 / 8-15.
          ldmatrix_x4(qa, qs + (warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * G::kStride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
          for (int n = 0; n < kKeys / 8; n += 2) {
            uint32_t kb4[4];
            // Matrices: keys n*8 + 0-7 (d lo, d hi), keys n*8 + 8-15 (d lo, d hi).
            ldmatrix_x4(kb4, ks + (n * 8 + (lane >> 4) * 8 + (lane & 7)) * G::kStride + kk * 16 + ((lane >> 3) & 1) * 8);
            mma16816(s[n], qa, kb4[0], kb4[1]);
            mma16816(s[n + 1], qa, kb4[2], kb4[3]);
          }
        }
        // Scale, cap, mask.
        const bool full_tile = __all_sync(0xffffffffu, k0 + kKeys <= ke && r0.token >= 0 && r1.token >= 0 &&
                                                           r0.tree_start == INT32_MAX && r1.tree_start == INT32_MAX &&
                                                           k0 >= r0.lo && k0 + kKeys <= r0.hi && k0 >= r1.lo &&
                                                           k0 + kKeys <= r1.hi);
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float x = s[n][e] * a.scale;
            if (a.soft_cap > 0.0f) x = a.soft_cap * tanhf(x / a.soft_cap);
            if (!full_tile) {
              const int32_t key = k0 + n * 8 + tig * 2 + (e & 1);
              if (key >= ke || !row_sees(a, e < 2 ? r0 : r1, key)) x = -INFINITY;
            }
            s[n][e] = x;
          }
        }
        // Online softmax on the two rows this thread holds (a quad of lanes shares a row).
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n) {
          mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
          mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float mn0 = fmaxf(m0v, mx0), mn1 = fmaxf(m1v, mx1);
        const float f0 = mn0 == -INFINITY ? 1.0f : exp2f((m0v - mn0) * kLog2e);
        const float f1 = mn1 == -INFINITY ? 1.0f : exp2f((m1v - mn1) * kLog2e);
        const float b0 = mn0 == -INFINITY ? 0.0f : mn0 * kLog2e, b1 = mn1 == -INFINITY ? 0.0f : mn1 * kLog2e;
        m0v = mn0;
        m1v = mn1;
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int n = 0; n < kKeys / 8; ++n) {
          s[n][0] = exp2f(s[n][0] * kLog2e - b0);  // exp2(-inf) = 0 for masked keys
          s[n][1] = exp2f(s[n][1] * kLog2e - b0);
          s[n][2] = exp2f(s[n][2] * kLog2e - b1);
          s[n][3] = exp2f(s[n][3] * kLog2e - b1);
          sum0 += s[n][0] + s[n][1];
          sum1 += s[n][2] + s[n][3];
        }
        l0 = l0 * f0 + sum0;  // per-thread partial; the quad is summed at the end
        l1 = l1 * f1 + sum1;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[n][0] *= f0;
          o[n][1] *= f0;
          o[n][2] *= f1;
          o[n][3] *= f1;
        }
        // O += P V: P's k16 step kk is S tiles 2kk (cols 0-7) and 2kk+1 (cols 8-15).
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk) {
          uint32_t pa[4];
          pa[0] = pack_half2(s[2 * kk][0], s[2 * kk][1]);
          pa[1] = pack_half2(s[2 * kk][2], s[2 * kk][3]);
          pa[2] = pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
          pa[3] = pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
          for (int n = 0; n < D / 8; n += 2) {
            uint32_t vb[4];
            // Transposed matrices: keys kk*16 + 0-7 / 8-15 x d n*8 + 0-7, then d n*8 + 8-15.
            ldmatrix_x4_trans(vb, vs + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * G::kStride + n * 8 + (lane >> 4) * 8);
            mma16816(o[n], pa, vb[0], vb[1]);
            mma16816(o[n + 1], pa, vb[2], vb[3]);
          }
        }
      }
      __syncthreads();  // everyone is done with this buffer before it is refilled
    }
    cp_async_wait<0>();

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;  // no key -> zeros
    const int64_t h0 = g * group + m0 % group, h1 = g * group + m1 % group;
    const int64_t i0 = static_cast<int64_t>(r0.token) * a.n_head + h0, i1 = static_cast<int64_t>(r1.token) * a.n_head + h1;
    const int64_t p0 = static_cast<int64_t>(split) * n_tokens * a.n_head + i0;  // partial index (r0.token >= 0)
    const int64_t p1 = static_cast<int64_t>(split) * n_tokens * a.n_head + i1;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int d = n * 8 + tig * 2;
      if (a.n_splits == 1) {
        if (r0.token >= 0) *reinterpret_cast<float2*>(a.out + i0 * D + d) = make_float2(o[n][0] * inv0, o[n][1] * inv0);
        if (r1.token >= 0) *reinterpret_cast<float2*>(a.out + i1 * D + d) = make_float2(o[n][2] * inv1, o[n][3] * inv1);
      } else if (kb < ke) {  // an empty slice writes only (m, l): the combine skips its sums
        if (r0.token >= 0) *reinterpret_cast<float2*>(a.part_acc + p0 * D + d) = make_float2(o[n][0], o[n][1]);
        if (r1.token >= 0) *reinterpret_cast<float2*>(a.part_acc + p1 * D + d) = make_float2(o[n][2], o[n][3]);
      }
    }
    if (a.n_splits > 1 && tig == 0) {
      // m stays -inf for a row that saw no key of the slice (or skipped every tile), with l = 0.
      if (r0.token >= 0) a.part_ml[p0] = kb < ke ? make_float2(m0v, l0) : make_float2(-INFINITY, 0.0f);
      if (r1.token >= 0) a.part_ml[p1] = kb < ke ? make_float2(m1v, l1) : make_float2(-INFINITY, 0.0f);
    }
    __syncthreads();  // rows and qs are rewritten by the next pass
  }
}

template <int D>
Status launch(const SplitAttentionArgs& a, cudaStream_t stream) {
  const int32_t n_tiles = (a.layout.n_tokens + a.rows_per_tile - 1) / a.rows_per_tile;
  static std::atomic<uint64_t> smem_set{0};
  SAKER_RETURN_IF_ERROR(allow_dynamic_smem(verify_attention_kernel<D>, Geo<D>::kSmem, &smem_set));
  const dim3 grid(static_cast<unsigned>(a.n_splits), static_cast<unsigned>(a.n_head_kv), static_cast<unsigned>(n_tiles));
  verify_attention_kernel<D><<<grid, kThreads, Geo<D>::kSmem, stream>>>(a);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return launch_split_combine(a, stream);
}

}  // namespace

Status launch_verify_attention(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.rows_per_tile < 1 || a.rows_per_tile * a.group > kRows || (a.q_stride & 3) != 0 ||
      (reinterpret_cast<uintptr_t>(a.q) & 15) != 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: bad rows_per_tile or q alignment for verify");
  }
  switch (a.head_dim) {
    case 32: return launch<32>(a, stream);
    case 64: return launch<64>(a, stream);
    case 80: return launch<80>(a, stream);
    case 96: return launch<96>(a, stream);
    case 128: return launch<128>(a, stream);
    case 256: return launch<256>(a, stream);
    default: return make_error(StatusCode::kInvalidArgument, "cuda attention: head_dim must be 32, 64, 80, 96, 128 or 256");
  }
}

}  // namespace saker::cuda::detail
