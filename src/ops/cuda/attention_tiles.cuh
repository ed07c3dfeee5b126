// Device code shared by the CUDA attention kernels (internal; include only from .cu files).
//
// - RowInfo and the per-pass row gathering of a tile of batch tokens (split-K, flash-decode, prefill, verify);
// - the tensor-core tile machinery of the tiled prefill and verify kernels: cp.async K/V tiles
//   double-buffered in shared memory, S = Q K^T and O += P V with mma.sync m16n8k16 (f16 in, f32
//   accumulate), and the online softmax on the S accumulators in registers.
#pragma once

#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/cp_async.cuh"

namespace saker::cuda::detail::attn_tile {

using detail::cp_async16;
using detail::cp_async_commit;
using detail::cp_async_wait;
using detail::smem_addr;

constexpr float kLog2e = 1.4426950408889634f;

// Host: calls f(std::integral_constant<int, D>{}) for the head dims the kernels are instantiated for.
template <typename F>
Status dispatch_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 80: return f(std::integral_constant<int, 80>{});
    case 96: return f(std::integral_constant<int, 96>{});
    case 128: return f(std::integral_constant<int, 128>{});
    case 256: return f(std::integral_constant<int, 256>{});
    default: return make_error(StatusCode::kInvalidArgument, "cuda attention: head_dim must be 32, 64, 80, 96, 128 or 256");
  }
}

struct RowInfo {
  int32_t token;       // batch index, -1 for an unused row
  int32_t lo, hi;      // exact visible range outside a tree: [lo, hi)
  int32_t tree_start;  // slots >= tree_start go through attn_key_visible (INT32_MAX outside a tree)
};

// Exact trees on fixed slices. A draft tree's node at depth d (position tree_start + d) sees the committed
// prefix and its ancestors, which sit at whatever slots the tree builder gave them; plain decoding of the same
// token sees the same keys at slots tree_start .. tree_start + d in depth order. On fixed slices a key's slot
// decides its tile, its place in the tile and so the rounding, so a node's row reads its keys through the
// logical view plain decoding has: logical slot tree_start + k is the slot of its ancestor at depth k (the
// chain holds exactly one node per depth), and visibility is causal in logical slots. Rows of one tree share
// a pass on slices wholly below tree_start (identical keys); a slice that reaches tree_start is run for one
// row at a time, with that row's chain in PassTail.
constexpr int kMaxTreeTail = 64;  // deeper chains keep the shared-slot reading (exact only on the CPU)
struct PassTail {
  int32_t start;                 // logical slots >= start read slot[s - start]; INT32_MAX: no remap
  int32_t slot[kMaxTreeTail];
};

// The slot of the sequence that holds logical key slot s of the pass.
__device__ __forceinline__ int32_t pass_key_slot(const PassTail* tail, int32_t s) {
  return (tail == nullptr || s < tail->start) ? s : tail->slot[s - tail->start];
}

// The chain of tree token t (slots by depth) into tail; false when deeper than kMaxTreeTail.
__device__ __forceinline__ bool fill_tree_tail(const SplitAttentionArgs& a, int32_t t, int32_t tree_start,
                                               PassTail* tail) {
  return attn_tree_chain(a.packed, a.layout, t, tree_start, tail->slot, kMaxTreeTail) > 0;
}

// Thread 0 only: gathers the pending rows (bits of todo, tile rows from t0) of the lowest pending row's
// sequence into rows[0, n), rows [n, fill_to) as unused, and publishes the pass (sequence, row count,
// union of the rows' key ranges) through the pass_* shared variables. With `tail` (kernels on fixed slices,
// `split` their slice), tree rows take the logical view above.
__device__ __forceinline__ void gather_pass_rows(const SplitAttentionArgs& a, int32_t t0, int32_t n_here, uint64_t todo,
                                                 int fill_to, RowInfo* rows, int32_t& pass_seq, int32_t& pass_rows,
                                                 int32_t& pass_lo, int32_t& pass_hi, int32_t split = 0,
                                                 PassTail* tail = nullptr) {
  const int32_t* p = a.packed;
  const int leader = __ffsll(static_cast<long long>(todo)) - 1;
  const int32_t seq = p[a.layout.token_seq + t0 + leader];
  const bool tree = p[a.layout.seq_mask + seq] == static_cast<int32_t>(AttentionMask::kTree);
  if (tail != nullptr) tail->start = INT32_MAX;
  int32_t n = 0, lo = INT32_MAX, hi = 0;
  if (tree && tail != nullptr && a.split_keys > 0) {
    const int32_t ts = p[a.layout.seq_tree_start + seq];
    const bool prefix_slice = static_cast<int64_t>(split + 1) * a.split_keys <= ts;
    if (prefix_slice || fill_tree_tail(a, t0 + leader, ts, tail)) {
      for (int r = leader; r < n_here; ++r) {
        const int32_t t = t0 + r;
        if (!((todo >> r) & 1) || p[a.layout.token_seq + t] != seq) continue;
        if (!prefix_slice && r != leader) continue;
        const int32_t pos = p[a.layout.token_pos + t];
        const RowInfo info{t, a.window > 0 ? max(0, pos - a.window + 1) : 0, pos + 1, INT32_MAX};
        lo = min(lo, info.lo);
        hi = max(hi, info.hi);
        rows[n++] = info;
      }
      if (!prefix_slice) tail->start = ts;
      for (int r = n; r < fill_to; ++r) rows[r] = RowInfo{-1, 0, 0, INT32_MAX};
      pass_seq = seq;
      pass_rows = n;
      pass_lo = lo;
      pass_hi = hi;
      return;
    }
  }
  for (int r = leader; r < n_here; ++r) {
    const int32_t t = t0 + r;
    if (!((todo >> r) & 1) || p[a.layout.token_seq + t] != seq) continue;
    RowInfo info;
    info.token = t;
    attn_key_range(p, a.layout, t, a.window, &info.lo, &info.hi);
    lo = min(lo, info.lo);
    hi = max(hi, info.hi);
    info.tree_start = tree ? p[a.layout.seq_tree_start + seq] : INT32_MAX;
    if (tree && a.window > 0) info.lo = max(0, p[a.layout.token_pos + t] - a.window + 1);  // prefix rule
    rows[n++] = info;
  }
  for (int r = n; r < fill_to; ++r) rows[r] = RowInfo{-1, 0, 0, INT32_MAX};
  pass_seq = seq;
  pass_rows = n;
  pass_lo = lo;
  pass_hi = hi;
}

// Online softmax over one tile of scores in shared memory, one warp per query vector (kWarps warps):
// row qi of ss (kKeys scores) becomes its probabilities against the new running maximum ms[qi]; fs[qi]
// gets the factor that rescales the vector's earlier sums, and ls[qi] the updated denominator.
template <int kKeys, int kWarps>
__device__ __forceinline__ void smem_online_softmax(float* ss, float* ms, float* ls, float* fs, int32_t nq, int warp,
                                                    int lane) {
  for (int qi = warp; qi < nq; qi += kWarps) {
    float* row = ss + qi * kKeys;
    float mx = -INFINITY;
    for (int j = lane; j < kKeys; j += 32) mx = fmaxf(mx, row[j]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float m_old = ms[qi];
    const float m_new = fmaxf(m_old, mx);
    float sum = 0.0f;
    for (int j = lane; j < kKeys; j += 32) {
      const float pj = m_new == -INFINITY ? 0.0f : expf(row[j] - m_new);
      row[j] = pj;
      sum += pj;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) {
      const float fac = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
      fs[qi] = fac;
      ls[qi] = ls[qi] * fac + sum;
      ms[qi] = m_new;
    }
  }
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
// Two 8x8 matrices; lanes 0-15 give the row addresses.
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
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

// Whether row r (token -1: an unused row of an mma tile) sees key slot s.
__device__ __forceinline__ bool row_sees(const SplitAttentionArgs& a, const RowInfo& r, int32_t s) {
  if (r.token < 0 || s >= r.hi) return false;
  if (s < r.tree_start) return s >= r.lo;
  return attn_key_visible(a.packed, a.layout, r.token, s, a.window);
}

// Shared-memory geometry of the mma tiles: rows of D halves padded to kStride (16-byte aligned rows,
// conflict-free ldmatrix), kKeys keys per K/V tile.
template <int D>
struct PaddedRows {
  static constexpr int kStride = D + 8;
  // Halves from a buffer's start to row r, column col.
  __device__ __forceinline__ static int at(int r, int col) { return r * kStride + col; }
};
template <int D, int kKeys>
struct MmaTile {
  static constexpr int kStride = PaddedRows<D>::kStride;
  static constexpr int kKv = kKeys * kStride;
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
};

// What every K/V copy of a pass shares, looked up once a pass instead of once a 16-byte chunk: the pass
// sequence's block table, the page size as a shift where it is a power of two, the first slot read through a
// tree tail. The offsets equal attn_cache_row(.., pass_key_slot(tail, s), ..)'s.
struct KvCursor {
  const int32_t* table;
  int32_t tail_start;
  __device__ __forceinline__ KvCursor(const SplitAttentionArgs& a, int32_t seq, const PassTail* tail)
      : table(a.packed + a.layout.block_tables + a.packed[a.layout.seq_table + seq]),
        tail_start(tail == nullptr ? INT32_MAX : tail->start) {}
  // Element offset of slot s's row of KV head g in the caches.
  __device__ __forceinline__ int64_t row_offset(const SplitAttentionArgs& a, const PassTail* tail, int32_t s,
                                                int32_t g, int d) const {
    const int32_t ls = s < tail_start ? s : tail->slot[s - tail_start];
    int32_t page, in_page;
    if (a.block_shift >= 0) {
      page = ls >> a.block_shift;
      in_page = ls & (a.block_size - 1);
    } else {
      page = ls / a.block_size;
      in_page = ls - page * a.block_size;
    }
    const int64_t row = static_cast<int64_t>(table[page]) * a.block_size + in_page;
    return (row * a.n_head_kv + g) * d;
  }
};

// Issues the cp.async copies of keys [k0, k0 + kKeys) (zero outside [klo, kend)) into one K/V buffer pair, row
// j's chunk c at Rows::at(j, 8 * c) (PaddedRows: MmaTile's rows); NT threads. Key slots are logical (pass_key_slot)
// where the pass has a tree tail.
template <int D, int kKeys, int NT, class Rows = PaddedRows<D>>
__device__ __forceinline__ void load_kv(const SplitAttentionArgs& a, int32_t seq, int32_t g, int32_t k0, int32_t klo,
                                        int32_t kend, __half* ks, __half* vs, const PassTail* tail = nullptr) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < kKeys * kChunks; c += NT) {
    const int j = c / kChunks, chunk = c % kChunks;
    const int32_t s = k0 + j;
    const bool valid = s >= klo && s < kend;
    const int64_t off =
        valid ? (attn_cache_row(a.packed, a.layout, seq, pass_key_slot(tail, s), a.block_size) * a.n_head_kv + g) * D +
                    chunk * 8
              : 0;
    const int dst = Rows::at(j, chunk * 8);
    cp_async16(ks + dst, a.k_cache + off, valid);
    cp_async16(vs + dst, a.v_cache + off, valid);
  }
}

// load_kv through a pass's KvCursor (the same copies to the same places).
template <int D, int kKeys, int NT, class Rows = PaddedRows<D>>
__device__ __forceinline__ void load_kv_cursor(const SplitAttentionArgs& a, const KvCursor& cur, int32_t g, int32_t k0,
                                               int32_t klo, int32_t kend, __half* ks, __half* vs,
                                               const PassTail* tail) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kRounds = (kKeys * kChunks + NT - 1) / NT;
#pragma unroll
  for (int i = 0; i < kRounds; ++i) {  // unrolled: a thread's page lookups are in flight together
    const int c = threadIdx.x + i * NT;
    if (kKeys * kChunks % NT != 0 && c >= kKeys * kChunks) break;
    const int j = c / kChunks, chunk = c % kChunks;
    const int32_t s = k0 + j;
    const bool valid = s >= klo && s < kend;
    const int64_t off = valid ? cur.row_offset(a, tail, s, g, D) + chunk * 8 : 0;
    const int dst = Rows::at(j, chunk * 8);
    cp_async16(ks + dst, a.k_cache + off, valid);
    cp_async16(vs + dst, a.v_cache + off, valid);
  }
}

// The key loop of one pass for one warp's 16 query rows (q_row: the rows' first row in qs; r0 / r1: the
// rows of this thread, gid and gid + 8): streams the K/V tiles of [kb, ke) (keys below klo load as zeros)
// through the two buffer pairs
// at kv (K0, V0, K1, V1; the first tile's copies already issued and committed by the caller), and leaves
// O (unnormalised), the running maxima m0 / m1 and the quad-summed l0 / l1 of the thread's two rows.
template <int D, int kKeys, int NT>
__device__ __forceinline__ void mma_key_loop(const SplitAttentionArgs& a, int32_t seq, int32_t g, int32_t kb,
                                             int32_t klo, int32_t ke, const __half* qs, int q_row, __half* kv, bool warp_active,
                                             const RowInfo& r0, const RowInfo& r1, float (&o)[D / 8][4], float& m0,
                                             float& m1, float& l0, float& l1) {
  using G = MmaTile<D, kKeys>;
  const int lane = threadIdx.x & 31;
  const int tig = lane & 3;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

  int buf = 0;
  for (int32_t k0 = kb; k0 < ke; k0 += kKeys, buf ^= 1) {
    // Prefetch the next tile into the other buffer, then wait for this one.
    if (k0 + kKeys < ke) load_kv<D, kKeys, NT>(a, seq, g, k0 + kKeys, klo, ke, kv + (buf ^ 1) * 2 * G::kKv, kv + (buf ^ 1) * 2 * G::kKv + G::kKv);
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
        ldmatrix_x4(qa, qs + (q_row + ((lane >> 3) & 1) * 8 + (lane & 7)) * G::kStride + kk * 16 + (lane >> 4) * 8);
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
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      const float f0 = mn0 == -INFINITY ? 1.0f : exp2f((m0 - mn0) * kLog2e);
      const float f1 = mn1 == -INFINITY ? 1.0f : exp2f((m1 - mn1) * kLog2e);
      const float b0 = mn0 == -INFINITY ? 0.0f : mn0 * kLog2e, b1 = mn1 == -INFINITY ? 0.0f : mn1 * kLog2e;
      m0 = mn0;
      m1 = mn1;
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
}

}  // namespace saker::cuda::detail::attn_tile
