#include "core/dtype.h"

#include <array>
#include <cctype>
#include <limits>
#include <string>

namespace saker {
namespace {

struct Entry {
  uint32_t id;
  DTypeTraits traits;
};

// Block sizes and byte sizes follow ggml's block structs.
constexpr std::array kTable = {
    Entry{0, {"f32", 1, 4, false}},        Entry{1, {"f16", 1, 2, false}},
    Entry{2, {"q4_0", 32, 18, true}},      Entry{3, {"q4_1", 32, 20, true}},
    Entry{6, {"q5_0", 32, 22, true}},      Entry{7, {"q5_1", 32, 24, true}},
    Entry{8, {"q8_0", 32, 34, true}},      Entry{9, {"q8_1", 32, 36, true}},
    Entry{10, {"q2_K", 256, 84, true}},    Entry{11, {"q3_K", 256, 110, true}},
    Entry{12, {"q4_K", 256, 144, true}},   Entry{13, {"q5_K", 256, 176, true}},
    Entry{14, {"q6_K", 256, 210, true}},   Entry{15, {"q8_K", 256, 292, true}},
    Entry{16, {"iq2_xxs", 256, 66, true}}, Entry{17, {"iq2_xs", 256, 74, true}},
    Entry{18, {"iq3_xxs", 256, 98, true}}, Entry{19, {"iq1_s", 256, 50, true}},
    Entry{20, {"iq4_nl", 32, 18, true}},   Entry{21, {"iq3_s", 256, 110, true}},
    Entry{22, {"iq2_s", 256, 82, true}},   Entry{23, {"iq4_xs", 256, 136, true}},
    Entry{24, {"i8", 1, 1, false}},        Entry{25, {"i16", 1, 2, false}},
    Entry{26, {"i32", 1, 4, false}},       Entry{27, {"i64", 1, 8, false}},
    Entry{28, {"f64", 1, 8, false}},       Entry{29, {"iq1_m", 256, 56, true}},
    Entry{30, {"bf16", 1, 2, false}},      Entry{34, {"tq1_0", 256, 54, true}},
    Entry{35, {"tq2_0", 256, 66, true}},   Entry{39, {"mxfp4", 32, 17, true}},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t id) {
  for (const auto& e : kTable) {
    if (e.id == id) return e.traits;
  }
  return std::nullopt;
}

const DTypeTraits& traits(DType type) {
  for (const auto& e : kTable) {
    if (e.id == static_cast<uint32_t>(type)) return e.traits;
  }
  static const DTypeTraits kInvalid{"invalid", 1, 0, false};
  return kInvalid;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& e : kTable) {
    if (iequals(e.traits.name, name)) return static_cast<DType>(e.id);
  }
  return std::nullopt;
}

std::optional<uint64_t> row_bytes(DType type, int64_t n_elements) {
  const DTypeTraits& t = traits(type);
  if (t.block_bytes == 0 || n_elements < 0 || n_elements % t.block_elements != 0) return std::nullopt;
  const uint64_t blocks = static_cast<uint64_t>(n_elements / t.block_elements);
  if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(t.block_bytes)) return std::nullopt;
  return blocks * static_cast<uint64_t>(t.block_bytes);
}

}  // namespace saker
