#pragma once
// The canonical arithmetic of the K-quant decode/verify matmul (Q4_K, Q5_K, Q6_K weights, 1-64 activation
// rows): one definition of every rounding step, so that the tensor-core kernel (matmul_kq_mma.cu) gives a
// row the same bits whatever other rows share the call, and a host oracle (tests/ops) can recompute them.
//
// Activations are quantised per 256-element block (KxBlock): one f32 scale d = max|x| / 127 for the block,
//     x ~= d * q        q = round(x / d), |q| <= 127
// (llama.cpp's q8_K grain), and every weight block's dot product with x is one exact integer sum:
//     Q4_K / Q5_K:  dot = d/8 * (dw * T - dmin * M),   T = (sum_j sc_j * S_j) << 3,  M = sum_j m_j * (Q_j << 3)
//     Q6_K:         dot = d/8 * dw * T,                  T = (sum_i sc_i * S_i) << 3
// where S_j = sum(code * q) over the sub-block (Q6_K: 16-element sub-blocks, codes centred by -32), Q_j =
// sum(q). The blocks keep a per-sub-block shift field (sh[j] = 3 for every j) read by the kernels that fold
// per sub-block. Per-32 shifts that gave quieter sub-blocks up to 3 more bits were dropped: they made the
// integer fold run between every two MMAs of the tensor-core kernel, which, with one shift for the whole
// block, takes each sub-block's scale into its A fragment and lets the tensor core sum the block
// (matmul_kq_mma.cu; docs/performance.md). Integer sums are exact in any order, so only the float steps below
// fix the result: the block value (kq_value_*), then, per output element, eight streams: stream s adds the
// values of blocks s, s + 8, s + 16, ... in order, and the streams are combined as ((s0 + s1) + (s2 + s3)) +
// ((s4 + s5) + (s6 + s7)). Nothing in this order depends on the number of activation rows.
//
// Magnitudes: |S_j| <= 32 * 31 * 127 (Q5_K), times sc <= 63, << 3, eight sub-blocks: < 2^29; Q6_K sixteen
// 16-element sub-blocks with |sc| <= 128: < 2^30. Both fit int32.
//
// The same kernel serves the 32-element formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) and IQ4_XS, in contexts
// that ask for width invariance (q32_layout.h). Their "block" is a group of 256 elements of a weight row (eight
// 32-element blocks, or one IQ4_XS block), against the same activation blocks; a row whose n_in is not a
// multiple of 256 ends in a partial group and a partial activation block of n_sub sub-blocks (the absent ones
// quantise as zeros: qsum 0). A group's value, with each block's own f16 scale d_j (and min m_j):
//     32-element formats:  u = 0; for j < n_sub: u = fma(d_j, S_j << sh_j, u) [then u = fma(m_j, qsum_j, u)];
//                          value = d8 * u
//     IQ4_XS:              value = d8 * (d * T),   T = sum_j ((ls_j - 32) * S_j) << sh_j
// S_j with codes centred as the format stores them (Q4_0 -8, Q5_0 -16, IQ4 table values, Q4_1 / Q5_1 0..31).
// |S_j << 3| < 32 * 128 * 127 * 8 < 2^23, so the int-to-float step is exact; IQ4_XS's T < 2^30.
#include <cmath>
#include <cstdint>

#include "ops/cuda/dequant_blocks.h"
#include "ops/cuda/q8_dot.h"

namespace saker::cuda::kq {

inline constexpr int kBlock = 256;    // elements per quantisation block (= one K-quant weight block)
inline constexpr int kSub = 32;       // elements per activation sub-block
inline constexpr int kMaxShift = 3;   // every sub-block's sh: T and the qsums carry a factor 8
inline constexpr int kStreams = 8;    // block-order streams of the canonical sum

// One activation block's metadata, 32 bytes (two 16-byte loads).
struct alignas(16) KxBlock {
  float d8;         // d / 8: the block scale with the 2^-3 of the shifts folded in (exact)
  uint8_t sh[8];    // 3 - e_j: T's left shift for sub-block j
  int16_t qsum[8];  // (sum of sub-block j's codes) << sh[j]: |sum| <= 32 * 127, << 3 fits int16
  uint32_t pad;
};
static_assert(sizeof(KxBlock) == 32, "KxBlock is two 16-byte loads");

SAKER_HD float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;  // host: ISO C++ mode, so GCC keeps -ffp-contract=off and never fuses these into an FMA
#endif
}
SAKER_HD float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SAKER_HD float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
SAKER_HD float ffma(float a, float b, float c) {  // a * b + c, rounded once (std::fma is exact on the host)
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
SAKER_HD float i2f(int v) {
#if defined(__CUDA_ARCH__)
  return __int2float_rn(v);
#else
  return static_cast<float>(v);
#endif
}

// Code of x in a block of step d, given inv = 1 / d (one division per block, a multiply per element): round to
// nearest, ties away, clamped to +-127.
SAKER_HD float inv_step(float step) { return step == 0.0f ? 0.0f : 1.0f / step; }
SAKER_HD int8_t quantize_code(float x, float inv) { return q8::round_to_code(fmul(x, inv)); }

// The value of one weight block's dot product from its exact integer sums.
SAKER_HD float kq_value_min(float d8, float dw, float dmin, int t_sum, int m_sum) {  // Q4_K, Q5_K
  return fmul(d8, fsub(fmul(dw, i2f(t_sum)), fmul(dmin, i2f(m_sum))));
}
SAKER_HD float kq_value_sym(float d8, float dw, int t_sum) {  // Q6_K
  return fmul(d8, fmul(dw, i2f(t_sum)));
}

// The streams' combination.
SAKER_HD float combine_streams(const float (&s)[kStreams]) {
  return fadd(fadd(fadd(s[0], s[1]), fadd(s[2], s[3])), fadd(fadd(s[4], s[5]), fadd(s[6], s[7])));
}

// The same order for a kernel that owns whole streams (matmul_kq_wgmma.cu): it walks a span of 2^L streams
// [s_lo, s_lo + span) one after the other, and span_block names its k-th weight block (stream s: blocks s,
// s + 8, ... below n_blocks); -1 past the end.
SAKER_HD int span_block(int k, int s_lo, int span, int n_blocks) {
  for (int s = s_lo; s < s_lo + span; ++s) {
    const int count = s < n_blocks ? (n_blocks - s + kStreams - 1) / kStreams : 0;
    if (k < count) return s + kStreams * k;
    k -= count;
  }
  return -1;
}
// Stream `leaf` of the span (its value v) joins the span's part of the tree as a binary counter: a partial sum of
// level l waits in slot(l) (a float&) until its right neighbour of the same level arrives (left + right, as
// combine_streams). After the span's last stream, *sum holds the span's subtree and the result is true.
template <class Slot>
SAKER_HD bool fold_stream(int leaf, int span, float v, Slot&& slot, float* sum) {
  int level = 0;
  for (; (leaf >> level) & 1; ++level) v = fadd(slot(level), v);
  if (leaf + 1 == span) {
    *sum = v;
    return true;
  }
  slot(level) = v;
  return false;
}
// The subtrees of n spans (n a power of two, spans in stream order) in the tree: pairs, then pairs of pairs.
// Overwrites v[0 .. n / 2).
SAKER_HD float combine_spans(float* v, int n) {
  for (; n > 1; n >>= 1) {
    for (int q = 0; q < n / 2; ++q) v[q] = fadd(v[2 * q], v[2 * q + 1]);
  }
  return v[0];
}

// Host quantisation of one 256-element block, as the device kernel does it (tests use it as the oracle). A
// row's last block may hold fewer elements (`valid`, a multiple of 32): its absent sub-blocks count as zeros
// and their codes are not written.
inline void quantize_block_host(const float* x, int8_t* q, KxBlock* kb, int valid = kBlock) {
  float amax = 0.0f;
  for (int i = 0; i < valid; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float inv = inv_step(d);
  kb->d8 = d * 0.125f;
  kb->pad = 0;
  for (int j = 0; j < 8; ++j) {
    int sum = 0;
    for (int i = 0; i < kSub && kSub * j < valid; ++i) {
      q[kSub * j + i] = quantize_code(x[kSub * j + i], inv);
      sum += q[kSub * j + i];
    }
    kb->sh[j] = static_cast<uint8_t>(kMaxShift);
    kb->qsum[j] = static_cast<int16_t>(sum * (1 << kMaxShift));
  }
}

}  // namespace saker::cuda::kq
