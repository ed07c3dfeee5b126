#pragma once
// Access to one layer's paged KV cache [n_blocks, block_size, n_head_kv, head_dim] (f32, f16 or bf16) for the
// CPU ops: argument checks, the address of a (slot, kv head) row through a sequence's block table, and row
// conversion to and from f32.
#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "ops/attention_batch.h"

namespace saker::ref {

bool is_kv_cache_dtype(DType type);  // f32, f16, bf16

// A host 4-D cache of a KV dtype with packed head rows.
Status check_kv_cache(const TensorView& cache, const char* op, const char* name);

// Pointer to the head_dim elements of `kv_head` at logical slot `slot` of `seq`; the batch must be valid.
inline const void* kv_row(const TensorView& cache, const AttentionSequence& seq, int64_t block_size, int32_t slot,
                          int64_t kv_head) {
  const int64_t block = seq.block_table[slot / block_size];
  return static_cast<const char*>(cache.data) + block * cache.stride_bytes[0] + (slot % block_size) * cache.stride_bytes[1] +
         kv_head * cache.stride_bytes[2];
}

void load_kv_row(DType type, const void* src, float* dst, int64_t n);   // cache row -> f32
void store_kv_row(DType type, const float* src, void* dst, int64_t n);  // f32 -> cache row (round to nearest even)

}  // namespace saker::ref
