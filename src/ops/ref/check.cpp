#include "ops/ref/check.h"

namespace saker::ref {

Status check_packed_rows(const TensorView& t, const char* op, const char* name) {
  if (t.device != Device::kCpu) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} is on {}, expected a host tensor", op, name,
                      device_name(t.device));
  }
  if (t.n_dims < 1 || t.n_dims > kMaxDims) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} has {} dimensions, expected 1 to {}", op, name,
                      t.n_dims, kMaxDims);
  }
  for (int i = 0; i < t.n_dims; ++i) {
    if (t.shape[i] < 0) {
      return make_error(StatusCode::kInvalidArgument, "{}: {} {} has a negative dimension", op, name,
                        t.shape_string());
    }
  }
  const DTypeTraits& tr = traits(t.dtype);
  const int64_t n_cols = t.dim(-1);
  if (n_cols % tr.block_elements != 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: {} {} has rows of {} elements, not a whole number of {}-element blocks", op, name,
                      t.shape_string(), n_cols, tr.block_elements);
  }
  // Block types store a 0 innermost stride; plain types must be packed elements.
  const int64_t inner = t.stride_bytes[t.n_dims - 1];
  if (!tr.quantized && inner != tr.block_bytes && n_cols > 1) {
    return make_error(StatusCode::kInvalidArgument,
                      "{}: {} {} has an innermost stride of {} bytes, expected {} (packed rows)", op, name,
                      t.shape_string(), inner, tr.block_bytes);
  }
  if (t.data == nullptr && t.n_elements() > 0) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} has no data", op, name);
  }
  return {};
}

Status check_f32_rows(const TensorView& t, const char* op, const char* name, int64_t n_cols) {
  if (t.dtype != DType::kF32) {
    return make_error(StatusCode::kUnsupported, "{}: {} is {}, expected f32", op, name, t.shape_string());
  }
  SAKER_RETURN_IF_ERROR(check_packed_rows(t, op, name));
  if (n_cols >= 0 && t.dim(-1) != n_cols) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} {} has rows of {} elements, expected {}", op, name,
                      t.shape_string(), t.dim(-1), n_cols);
  }
  return {};
}

Status check_same_rows(const TensorView& a, const TensorView& b, const char* op, const char* name_a,
                       const char* name_b) {
  if (a.n_rows() != b.n_rows()) {
    return make_error(StatusCode::kInvalidArgument, "{}: {} {} has {} rows but {} {} has {}", op, name_a,
                      a.shape_string(), a.n_rows(), name_b, b.shape_string(), b.n_rows());
  }
  return {};
}

}  // namespace saker::ref
