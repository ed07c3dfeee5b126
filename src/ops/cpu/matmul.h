#pragma once
// Matrix multiply against a weight in its stored dtype, fast CPU version (checked against ref::matmul):
//   out[t, o] = sum_i x[t, i] * W[o, i]
//
// Three paths, chosen per call:
//   * integer: block-quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K, Q6_K, IQ4_XS)
//     quantise the activations to 8-bit blocks (act_quant.h) and multiply integer codes (AVX2);
//   * float: F32 / F16 / BF16 weights with AVX2 FMA; without AVX2 (or with simd off) every dtype takes a
//     portable path that dequantises one weight row at a time into f32;
//   * BLAS: batches of at least blas_min_tokens rows dequantise weight tiles to f32 and call OpenBLAS
//     sgemm (prefill), when saker was built with OpenBLAS.
// Threads split the output columns (weight rows), so each output element is computed by one thread in a
// fixed order. On the integer and float paths a token row's result is bit-identical whatever else is in
// the batch (verify rows equal one-row decode); the BLAS path rounds differently, so callers that need
// that identity across batch sizes (speculative verification) keep batches under blas_min_tokens or turn
// BLAS off.
#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace saker::cpu {

struct MatmulOptions {
  bool simd = true;              // AVX2 kernels when the CPU has them; false: the portable f32 path
  bool blas = true;              // OpenBLAS for large batches (ignored when built without it)
  // Rows from which BLAS is used; 0 picks by dtype: 16 for F32/F16/BF16 weights, 32 for block-quantized
  // ones, whose integer path keeps up with sgemm plus dequantisation longer (4096 x 4096 weights: the
  // crossover is ~64 rows on the 2-core EPYC CI machine, ~16-32 on the GPU host's Xeon).
  int64_t blas_min_tokens = 0;
};

bool blas_available();  // built with OpenBLAS

Status matmul(const TensorView& x,    // [n_tokens, n_in] f32
              const TensorView& w,    // [n_out, n_in] any dtype formats/quant can dequantise
              const TensorView& out,  // [n_tokens, n_out] f32
              const MatmulOptions& options = {});

}  // namespace saker::cpu
