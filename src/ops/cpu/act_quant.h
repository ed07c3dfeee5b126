#pragma once
// Activations quantised to 8 bits for the integer dot products of the CPU matmul: each block of 32
// values becomes int8 codes q with one f32 scale d (x ~= d * q, d = max|x| / 127), plus d * sum(q) so the
// "min" terms of affine weight formats (Q4_K: x = d*sc*q - dmin*m) need no second pass over the codes.
// This is the only approximation the integer path adds on top of the weight format: about 0.4% relative
// error per element, far below the weights' own quantisation error.
#include <cstdint>

namespace saker::cpu {

inline constexpr int64_t kActBlock = 32;

struct ActBlock {
  float d;    // scale; NaN when the block held a NaN or an inf (so the dot product comes out NaN)
  float sum;  // d * sum(q): the block's sum as the dot products see it
  int8_t q[kActBlock];
};
static_assert(sizeof(ActBlock) == 40);

// n must be a multiple of kActBlock. dst holds n / kActBlock blocks.
void quantize_act_row(const float* x, ActBlock* dst, int64_t n);

}  // namespace saker::cpu
