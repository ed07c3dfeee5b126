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
#include "ops/cuda/attention_tiles.cuh"
#include "ops/cuda/chained_launch.cuh"
#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = kWarps * 16;  // query rows per block
constexpr int kKeys = 64;           // keys per tile

template <int D>
struct Geo {
  static constexpr int kStride = D + 8;  // halves per smem row: 16-byte aligned rows, conflict-free ldmatrix
  static constexpr int kQ = kRows * kStride;
  static constexpr int kKv = kKeys * kStride;
  static constexpr size_t kSmem = sizeof(__half) * (kQ + 4 * kKv);  // Q, then K0, V0, K1, V1
};

using namespace attn_tile;
static_assert(Geo<128>::kKv == MmaTile<128, kKeys>::kKv && Geo<80>::kStride == MmaTile<80, kKeys>::kStride, "one tile geometry");

template <int D>
__global__ void __launch_bounds__(kThreads) verify_attention_kernel(const SplitAttentionArgs a) {
  chain_in();
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

  uint64_t todo = n_here >= 64 ? ~0ull : ((1ull << n_here) - 1);
  while (todo != 0) {
    if (threadIdx.x == 0) gather_pass_rows(a, t0, n_here, todo, 0, rows, pass_seq, pass_rows, pass_lo, pass_hi);
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
    if (kb < ke) load_kv<D, kKeys, kThreads>(a, seq, g, kb, pass_lo, ke, kv, kv + G::kKv);
    cp_async_commit();
    __syncthreads();

    const int m0 = warp * 16 + gid, m1 = m0 + 8;
    const RowInfo none{-1, 0, 0, INT32_MAX};
    const RowInfo r0 = m0 < nq ? rows[m0 / group] : none, r1 = m1 < nq ? rows[m1 / group] : none;
    const bool warp_active = warp * 16 < nq;
    float o[D / 8][4];
    float m0v, m1v, l0, l1;
    mma_key_loop<D, kKeys, kThreads>(a, seq, g, kb, pass_lo, ke, qs, warp * 16, kv, warp_active, r0, r1, o, m0v, m1v, l0, l1);
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
  static std::atomic<uint64_t> smem_set{0};
  return launch_on_split_grid(verify_attention_kernel<D>, kThreads, Geo<D>::kSmem, Geo<D>::kSmem, &smem_set, a, stream);
}

}  // namespace

Status launch_verify_attention(const SplitAttentionArgs& a, cudaStream_t stream) {
  if (a.rows_per_tile < 1 || a.rows_per_tile * a.group > kRows || (a.q_stride & 3) != 0 ||
      (reinterpret_cast<uintptr_t>(a.q) & 15) != 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: bad rows_per_tile or q alignment for verify");
  }
  return dispatch_head_dim(a.head_dim, [&](auto d) { return launch<decltype(d)::value>(a, stream); });
}

}  // namespace saker::cuda::detail
