#pragma once
// Activations quantised to 8 bits for the integer dot products of the CPU matmul: each block of 32
// values becomes int8 codes q with one scale d (x ~= d * q), plus d * sum(q) so the "min" terms of affine
// weight formats (Q4_1: x = d*q + m; Q4_K: x = d*sc*q - dmin*m) need no second pass over the codes.
// The scale follows what ggml's CPU backend pairs with each weight format, so saker and llama.cpp see the
// same quantised activations (the integer path's only approximation, ~0.4% relative per element):
//   kQ8_0 (Q8_0, Q4_0, Q5_0, IQ4_NL weights): d = max|x| / 127 over 32 values, kept at f16 precision;
//   kQ8_1 (Q4_1, Q5_1): as kQ8_0, and the block sum d * sum(q) is taken with the f32 d, then kept at f16;
//   kQ8_K (K-quants, IQ4_XS): one f32 scale per 256 values, d = max / -127 for the value of largest magnitude
//          (so that value becomes -127), codes clamped at 127.
// Codes are rounded to nearest, ties to even.
#include <cstdint>

#include "core/dtype.h"

namespace saker::cpu {

inline constexpr int64_t kActBlock = 32;

struct ActBlock {
  float d;    // scale; NaN when the block held a NaN or an inf (so the dot product comes out NaN)
  float sum;  // d * sum(q): the block's sum as the dot products see it
  int8_t q[kActBlock];
};
static_assert(sizeof(ActBlock) == 40);

enum class ActQuant { kQ8_0, kQ8_1, kQ8_K };

// The style ggml's CPU backend pairs with weights of dtype w, and the one the block kernels of vec_dot.h expect
// (the super-block ones sum a super-block's integers before scaling, which needs kQ8_K's one scale a block).
ActQuant act_quant_for(DType w);

// n must be a multiple of kActBlock (of 256 for kQ8_K). dst holds n / kActBlock blocks.
void quantize_act_row(const float* x, ActBlock* dst, int64_t n, ActQuant style = ActQuant::kQ8_0);

}  // namespace saker::cpu
