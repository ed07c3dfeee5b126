#pragma once
// Embedding lookup, reference version: out[t, :] = dequantise(table[tokens[t], :]). The table stays in its
// stored dtype (token_embd is often Q4_K or Q6_K); only the looked-up rows are decoded.
#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"

namespace saker::ref {

// A token id outside [0, n_vocab) is an error (kOutOfRange) naming the id and its index.
Status embedding(const TensorView& table,            // [n_vocab, n_embd] any dtype with a dequantiser
                 std::span<const int32_t> tokens,    // [n_tokens]
                 const TensorView& out);             // [n_tokens, n_embd] f32

}  // namespace saker::ref
