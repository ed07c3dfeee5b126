#include "ops/ref/kv_cache.h"

#include <cstring>

#include "core/half.h"
#include "ops/ref/check.h"

namespace saker::ref {

bool is_kv_cache_dtype(DType type) { return type == DType::kF32 || type == DType::kF16 || type == DType::kBF16; }

Status check_kv_cache(const TensorView& cache, const char* op, const char* name) {
  if (!is_kv_cache_dtype(cache.dtype)) {
    return make_error(StatusCode::kUnsupported, "{}: {} {} must be f32, f16 or bf16", op, name, cache.shape_string());
  }
  SAKER_RETURN_IF_ERROR(check_packed_rows(cache, op, name));
  if (cache.n_dims != 4) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} {} must be [n_blocks, block_size, n_head_kv, head_dim]",
                      op, name, cache.shape_string());
  }
  return {};
}

void load_kv_row(DType type, const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  switch (type) {
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      break;
    default:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  }
}

void store_kv_row(DType type, const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  switch (type) {
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
      break;
    default:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  }
}

}  // namespace saker::ref
