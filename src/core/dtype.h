#pragma once
// Element types: the plain floats and ints plus GGUF's block-quantized types. The numeric values are
// ggml's type ids, so a GGUF tensor's type field maps onto DType directly.
#include <cstdint>
#include <optional>
#include <string_view>

namespace saker {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct DTypeTraits {
  std::string_view name;     // ggml's name: "f32", "q4_K", ...
  int64_t block_elements;    // elements per block (1 for plain types)
  int64_t block_bytes;       // bytes per block
  bool quantized;            // a block type with scales
};

// Traits of a known type; nullopt for an id that is not a ggml type.
std::optional<DTypeTraits> dtype_traits(uint32_t ggml_type_id);
const DTypeTraits& traits(DType type);  // type must be valid
inline std::string_view dtype_name(DType type) { return traits(type).name; }
// Parses a name case-insensitively ("q4_k", "Q4_K", "bf16").
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes for n elements of a row; nullopt when n is not a whole number of blocks or overflows.
std::optional<uint64_t> row_bytes(DType type, int64_t n_elements);

}  // namespace saker
