#include "ops/ref/kv_write.h"

#include "ops/ref/check.h"
#include "ops/ref/kv_cache.h"

namespace saker::ref {

namespace {

// new: [n_tokens, n_head_kv, dim] f32 against cache [n_blocks, block_size, n_head_kv, dim].
Status check_pair(const TensorView& rows, const TensorView& cache, int64_t n_tokens, const char* op,
                  const char* rows_name, const char* cache_name) {
  SAKER_RETURN_IF_ERROR(check_kv_cache(cache, op, cache_name));
  SAKER_RETURN_IF_ERROR(check_f32_rows(rows, op, rows_name, cache.dim(3)));
  if (rows.n_dims != 3 || rows.dim(0) != n_tokens || rows.dim(1) != cache.dim(2)) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} {} must be [{} tokens, {} kv heads, {}] to match {} {}",
                      op, rows_name, rows.shape_string(), n_tokens, cache.dim(2), cache.dim(3), cache_name,
                      cache.shape_string());
  }
  return {};
}

}  // namespace

Status kv_write(const TensorView& k, const TensorView& v, const TensorView& k_cache, const TensorView& v_cache,
                const AttentionBatch& batch) {
  constexpr const char* kOp = "ref::kv_write";
  const int64_t n_tokens = batch.n_tokens();
  SAKER_RETURN_IF_ERROR(check_pair(k, k_cache, n_tokens, kOp, "k", "k_cache"));
  SAKER_RETURN_IF_ERROR(check_pair(v, v_cache, n_tokens, kOp, "v", "v_cache"));
  if (k_cache.dim(0) != v_cache.dim(0) || k_cache.dim(1) != v_cache.dim(1)) {
    return make_error(StatusCode::kInvalidArgument, "{}: k_cache {} and v_cache {} have different block geometry",
                      kOp, k_cache.shape_string(), v_cache.shape_string());
  }
  const int64_t block_size = k_cache.dim(1), n_head_kv = k_cache.dim(2);
  SAKER_RETURN_IF_ERROR(batch.validate(k_cache.dim(0), block_size).with_context(kOp));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const AttentionSequence& seq = batch.sequences[batch.token_seq[t]];
    const int32_t slot = batch.token_slot[t];
    for (int64_t h = 0; h < n_head_kv; ++h) {
      store_kv_row(k_cache.dtype, static_cast<const float*>(k.row(t * n_head_kv + h)),
                   const_cast<void*>(kv_row(k_cache, seq, block_size, slot, h)), k_cache.dim(3));
      store_kv_row(v_cache.dtype, static_cast<const float*>(v.row(t * n_head_kv + h)),
                   const_cast<void*>(kv_row(v_cache, seq, block_size, slot, h)), v_cache.dim(3));
    }
  }
  return {};
}

}  // namespace saker::ref
