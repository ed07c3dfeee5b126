#pragma once
// Reference block codecs: dequantise and quantise rows of GGUF's element types (F32, F16, BF16 and the
// block-quantized Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS).
//
// Dequantisers follow ggml's reference order of operations in F32, so they reproduce llama.cpp's
// dequantisation bit for bit, and they accept any bit pattern (NaN/inf scales decode to NaN/inf, never a
// crash). Quantisers follow the conventions and scale searches of llama.cpp's reference quantisers
// (no importance matrix), so their blocks match llama-quantize's byte for byte on the golden data. Block
// layouts are described in each codec's file and in docs/formats (Quant blocks).
#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace saker {

bool can_dequantize(DType type);
bool can_quantize(DType type);

// One row of n elements; n must be a whole number of blocks of `type`. src holds row_bytes(type, n) bytes.
Status dequantize_row(DType type, const void* src, float* dst, int64_t n);
Status quantize_row(DType type, const float* src, void* dst, int64_t n);

// A whole [n_rows, n_cols] tensor (rows contiguous, row_bytes(type, n_cols) apart), parallel over rows on
// ThreadPool::global().
Status dequantize(DType type, const void* src, float* dst, int64_t n_rows, int64_t n_cols);
Status quantize(DType type, const float* src, void* dst, int64_t n_rows, int64_t n_cols);

}  // namespace saker
