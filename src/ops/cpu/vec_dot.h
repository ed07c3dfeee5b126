#pragma once
// Dot products of one weight row (in its stored format) with a few activation rows: the inner loop of the
// CPU matmul (and of cpu::attention, where the "weight" is a key row). Float formats (F32, F16, BF16) take f32
// activations; block formats take activations quantised by quantize_act_row in the style act_quant_for(dtype) names,
// and multiply integer codes. Each kernel sums in a fixed order that depends only on n, so a row's result is the same
// whatever else is in the batch and whichever thread computes it.
//
// The AVX2 kernels live in vec_dot_avx2.cpp, compiled for AVX2+FMA+F16C by function attributes and only
// called after a runtime CPU check, so the library still runs on x86-64 machines without AVX2.
#include <cstdint>

#include "core/dtype.h"
#include "ops/cpu/act_quant.h"

namespace saker::cpu {

// A kernel multiplies one weight row (n elements) with n_rows activation rows at once, out[r] = w . x[r],
// 1 <= n_rows <= kMaxDotRows: the weight is decoded once and reused for every row. Each row's result is
// bit-identical for every n_rows (the per-row sequence of operations does not change).
inline constexpr int kMaxDotRows = 4;
using FloatDotFn = void (*)(const void* w, const float* const* x, int n_rows, int64_t n, float* out);
using QuantDotFn = void (*)(const void* w, const ActBlock* const* x, int n_rows, int64_t n, float* out);

// True when this CPU runs the AVX2 kernels (x86-64 with AVX2, FMA and F16C).
bool have_avx2();

// The AVX2 kernel for a weight dtype, or null (other dtypes, or a build without x86 kernels).
FloatDotFn avx2_float_dot(DType type);
QuantDotFn avx2_quant_dot(DType type);

// Portable f32 dot product with eight partial sums (what the generic path uses on dequantised rows).
float dot_f32_generic(const float* w, const float* x, int64_t n);

}  // namespace saker::cpu
