// Tiled flash attention on tensor cores for prefill (many query rows per sequence).
//
// One block = 4 warps = 64 query rows of one query head; each warp owns 16 rows. The paired variant
// (HPB = 2) runs 8 warps over the same 64 rows of two query heads of one GQA group, so each K/V tile in
// shared memory serves twice the work. Q is converted to f16
// into shared memory once; K/V tiles of 64 keys stream through a double-buffered cp.async pipeline.
// S = Q K^T and O += P V use mma.sync m16n8k16 (f16 in, f32 accumulate); the online softmax runs on the
// S accumulators in registers, and the S accumulators are re-packed as the A operand of P V without a
// trip through shared memory (the C layout of two n8 tiles is the A layout of one k16 step).
//
// The row tile is 64 consecutive batch tokens; tokens of other sequences in the tile are handled by one
// pass per sequence (rows gathered by index), and every mask kind goes through the same per-row rule as
// the split-K kernel, with a tile-level fast path that skips masking where every row sees every key.
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

template <int D, int HPB = 1>
struct Geo {
  static constexpr int kStride = D + 8;  // halves per smem row: 16-byte aligned rows, conflict-free ldmatrix
  static constexpr int kQ = HPB * kRows * kStride;  // the heads' Q tiles one after the other
  static constexpr int kKv = kKeys * kStride;
  static constexpr size_t kSmem = sizeof(__half) * (kQ + 4 * kKv);  // Q, then K0, V0, K1, V1
};

using namespace attn_tile;
static_assert(Geo<128>::kKv == MmaTile<128, kKeys>::kKv && Geo<80>::kStride == MmaTile<80, kKeys>::kStride, "one tile geometry");

// (Asking for two paired blocks per SM caps registers at 128 and spills in the inner loop at head_dim 128.)
template <int D, int HPB>
__global__ void __launch_bounds__(kThreads * HPB) tiled_attention_kernel(const SplitAttentionArgs a) {
  chain_in();
  using G = Geo<D, HPB>;
  constexpr int NT = kThreads * HPB;
  extern __shared__ __align__(16) unsigned char smem[];
  __half* qs = reinterpret_cast<__half*>(smem);
  __half* kv = qs + G::kQ;  // K0, V0, K1, V1
  __shared__ RowInfo rows[kRows];
  __shared__ int32_t pass_seq, pass_rows, pass_lo, pass_hi;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wr = warp % kWarps;  // the warp's 16 rows of the tile: wr * 16 ...
  // Heads fastest: the heads of one row tile share K/V through L2. Warps 0-3 take head blockIdx.x * HPB,
  // warps 4-7 (HPB = 2) the next one, of the same GQA group (the dispatcher checks group % 2 == 0).
  const int32_t h = blockIdx.x * HPB + warp / kWarps;
  const int32_t n_tiles = gridDim.y;
  const int32_t tile = n_tiles - 1 - static_cast<int32_t>(blockIdx.y);  // causal: longest tiles first
  const int32_t g = h / a.group;
  const int32_t t0 = tile * kRows, n_tokens = a.layout.n_tokens;
  const int32_t n_here = min(kRows, n_tokens - t0);
  const int gid = lane >> 2, tig = lane & 3;

  uint64_t todo = n_here >= 64 ? ~0ull : ((1ull << n_here) - 1);
  while (todo != 0) {
    if (threadIdx.x == 0) gather_pass_rows(a, t0, n_here, todo, kRows, rows, pass_seq, pass_rows, pass_lo, pass_hi);
    __syncthreads();
    const int32_t seq = pass_seq, n_rows = pass_rows, kb = pass_lo, ke = pass_hi;
    for (int r = 0; r < n_rows; ++r) todo &= ~(1ull << (rows[r].token - t0));

    // Q rows of this pass -> f16 smem (zeros for unused rows): head hh's tile at rows hh * kRows.
    for (int c = threadIdx.x; c < HPB * kRows * (D / 4); c += NT) {
      const int hh = c / (kRows * (D / 4)), cc = c % (kRows * (D / 4));
      const int r = cc / (D / 4), d = (cc % (D / 4)) * 4;
      const int64_t head = static_cast<int64_t>(blockIdx.x) * HPB + hh;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (r < n_rows) {
        v = *reinterpret_cast<const float4*>(a.q + rows[r].token * a.q_stride + head * D + d);
      }
      *reinterpret_cast<uint2*>(qs + (hh * kRows + r) * G::kStride + d) = make_uint2(pack_half2(v.x, v.y), pack_half2(v.z, v.w));
    }
    if (kb < ke) load_kv<D, kKeys, kThreads * HPB>(a, seq, g, kb, kb, ke, kv, kv + G::kKv);
    cp_async_commit();
    __syncthreads();

    const RowInfo r0 = rows[wr * 16 + gid], r1 = rows[wr * 16 + gid + 8];
    const bool warp_active = wr * 16 < n_rows;
    float o[D / 8][4];
    float m0, m1, l0, l1;
    mma_key_loop<D, kKeys, kThreads * HPB>(a, seq, g, kb, kb, ke, qs, warp * 16, kv, warp_active, r0, r1, o, m0, m1, l0, l1);
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;  // no key -> zeros
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int d = n * 8 + tig * 2;
      if (r0.token >= 0) {
        *reinterpret_cast<float2*>(a.out + (static_cast<int64_t>(r0.token) * a.n_head + h) * D + d) =
            make_float2(o[n][0] * inv0, o[n][1] * inv0);
      }
      if (r1.token >= 0) {
        *reinterpret_cast<float2*>(a.out + (static_cast<int64_t>(r1.token) * a.n_head + h) * D + d) =
            make_float2(o[n][2] * inv1, o[n][3] * inv1);
      }
    }
    __syncthreads();  // rows and qs are rewritten by the next pass
  }
}

template <int D, int HPB>
Status launch(const SplitAttentionArgs& a, cudaStream_t stream) {
  const int32_t n_tiles = (a.layout.n_tokens + kRows - 1) / kRows;
  static std::atomic<uint64_t> smem_set{0};
  SAKER_RETURN_IF_ERROR(allow_dynamic_smem(tiled_attention_kernel<D, HPB>, Geo<D, HPB>::kSmem, &smem_set));
  const dim3 grid(static_cast<unsigned>(a.n_head / HPB), static_cast<unsigned>(n_tiles));
  launch_chained(tiled_attention_kernel<D, HPB>, grid, kThreads * HPB, Geo<D, HPB>::kSmem, stream, a);
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return {};
}

template <int HPB>
Status launch_hpb(const SplitAttentionArgs& a, cudaStream_t stream) {
  // The tile math needs only head_dim % 16 == 0 (k16 steps of QK^T, pairs of n8 tiles of PV).
  return dispatch_head_dim(a.head_dim, [&](auto d) { return launch<decltype(d)::value, HPB>(a, stream); });
}

}  // namespace

Status launch_tiled_attention(const SplitAttentionArgs& a, cudaStream_t stream, bool paired) {
  if (paired) {
    if (a.group % 2 != 0) {
      return make_error(StatusCode::kInvalidArgument, "cuda attention: paired tiles need an even GQA group");
    }
    return launch_hpb<2>(a, stream);
  }
  return launch_hpb<1>(a, stream);
}

}  // namespace saker::cuda::detail
