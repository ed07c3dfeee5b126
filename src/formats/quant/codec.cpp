// Dispatch from DType to the block functions, argument checks, and the whole-tensor helpers.
#include "formats/quant/codec.h"

#include <algorithm>
#include <array>

#include "core/thread_pool.h"
#include "formats/quant/quant_internal.h"

namespace saker {
namespace {

struct Codec {
  DType type;
  quant::DequantizeBlocksFn dequantize;
  quant::QuantizeBlocksFn quantize;  // null: decode only
};

constexpr std::array kCodecs = {
    Codec{DType::kF32, quant::dequantize_f32, quant::quantize_f32},
    Codec{DType::kF16, quant::dequantize_f16, quant::quantize_f16},
    Codec{DType::kBF16, quant::dequantize_bf16, quant::quantize_bf16},
    Codec{DType::kQ8_0, quant::dequantize_q8_0, quant::quantize_q8_0},
    Codec{DType::kQ4_0, quant::dequantize_q4_0, quant::quantize_q4_0},
    Codec{DType::kQ4_1, quant::dequantize_q4_1, quant::quantize_q4_1},
    Codec{DType::kQ5_0, quant::dequantize_q5_0, quant::quantize_q5_0},
    Codec{DType::kQ5_1, quant::dequantize_q5_1, quant::quantize_q5_1},
    Codec{DType::kQ4_K, quant::dequantize_q4_k, quant::quantize_q4_k},
    Codec{DType::kQ5_K, quant::dequantize_q5_k, quant::quantize_q5_k},
    Codec{DType::kQ6_K, quant::dequantize_q6_k, quant::quantize_q6_k},
    Codec{DType::kIQ4_NL, quant::dequantize_iq4_nl, quant::quantize_iq4_nl},
    Codec{DType::kIQ4_XS, quant::dequantize_iq4_xs, quant::quantize_iq4_xs},
};

const Codec* find_codec(DType type) {
  for (const Codec& c : kCodecs) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

// Checks n against the block size; on success sets *n_blocks.
Status check_row(DType type, int64_t n, int64_t* n_blocks) {
  const DTypeTraits& t = traits(type);
  if (n < 0 || n % t.block_elements != 0) {
    return make_error(StatusCode::kInvalidArgument,
                      "quant: a {} row of {} elements is not a whole number of {}-element blocks", t.name, n,
                      t.block_elements);
  }
  *n_blocks = n / t.block_elements;
  return {};
}

// Plain types pass element counts to their functions; block types pass block counts.
int64_t units(DType type, int64_t n_blocks) {
  return traits(type).quantized ? n_blocks : n_blocks * traits(type).block_elements;
}

}  // namespace

bool can_dequantize(DType type) { return find_codec(type) != nullptr; }
bool can_quantize(DType type) {
  const Codec* c = find_codec(type);
  return c && c->quantize;
}

Status dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const Codec* c = find_codec(type);
  if (!c) return make_error(StatusCode::kUnsupported, "quant: no dequantiser for type {}", dtype_name(type));
  int64_t n_blocks = 0;
  SAKER_RETURN_IF_ERROR(check_row(type, n, &n_blocks));
  c->dequantize(static_cast<const uint8_t*>(src), dst, units(type, n_blocks));
  return {};
}

Status quantize_row(DType type, const float* src, void* dst, int64_t n) {
  const Codec* c = find_codec(type);
  if (!c || !c->quantize) {
    return make_error(StatusCode::kUnsupported, "quant: no quantiser for type {}", dtype_name(type));
  }
  int64_t n_blocks = 0;
  SAKER_RETURN_IF_ERROR(check_row(type, n, &n_blocks));
  c->quantize(src, static_cast<uint8_t*>(dst), units(type, n_blocks));
  return {};
}

Status dequantize(DType type, const void* src, float* dst, int64_t n_rows, int64_t n_cols) {
  const Codec* c = find_codec(type);
  if (!c) return make_error(StatusCode::kUnsupported, "quant: no dequantiser for type {}", dtype_name(type));
  int64_t n_blocks = 0;
  SAKER_RETURN_IF_ERROR(check_row(type, n_cols, &n_blocks));
  if (n_rows < 0) return make_error(StatusCode::kInvalidArgument, "quant: negative row count {}", n_rows);
  const uint64_t stride = static_cast<uint64_t>(n_blocks * traits(type).block_bytes);
  const auto* bytes = static_cast<const uint8_t*>(src);
  const int64_t u = units(type, n_blocks);
  // Rows of at least ~16K elements per task keep the pool's overhead small.
  const int64_t min_rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n_cols));
  ThreadPool::global().parallel_for(
      n_rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) c->dequantize(bytes + r * stride, dst + r * n_cols, u);
      },
      min_rows);
  return {};
}

Status quantize(DType type, const float* src, void* dst, int64_t n_rows, int64_t n_cols) {
  const Codec* c = find_codec(type);
  if (!c || !c->quantize) {
    return make_error(StatusCode::kUnsupported, "quant: no quantiser for type {}", dtype_name(type));
  }
  int64_t n_blocks = 0;
  SAKER_RETURN_IF_ERROR(check_row(type, n_cols, &n_blocks));
  if (n_rows < 0) return make_error(StatusCode::kInvalidArgument, "quant: negative row count {}", n_rows);
  const uint64_t stride = static_cast<uint64_t>(n_blocks * traits(type).block_bytes);
  auto* bytes = static_cast<uint8_t*>(dst);
  const int64_t u = units(type, n_blocks);
  const int64_t min_rows = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n_cols));
  ThreadPool::global().parallel_for(
      n_rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) c->quantize(src + r * n_cols, bytes + r * stride, u);
      },
      min_rows);
  return {};
}

}  // namespace saker
