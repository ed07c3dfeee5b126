#pragma once
// One row of any dtype formats/quant can dequantise -> f32, with F16C / AVX2 conversions for F16 and BF16
// (the codec's portable f16 conversion costs ~2 ns an element, which dominated the BLAS path on F16
// weights and the f16 KV cache reads of cpu::attention). Both conversions are exact, so the values equal
// the codec's (NaN stays NaN; only a signalling NaN's payload may come out quieted).
#include <cstdint>

#include "core/dtype.h"

namespace saker::cpu {

// n elements; n a whole number of blocks of `type`, which must have a dequantiser (checked by the caller).
void to_f32_row(DType type, const void* src, float* dst, int64_t n, bool simd = true);

}  // namespace saker::cpu
