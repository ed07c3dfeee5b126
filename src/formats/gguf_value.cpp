// GgufValue / GgufArray helpers: constructors and display.
#include <fmt/format.h>

#include "formats/gguf.h"

namespace saker {

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return "?";
}

size_t GgufArray::size() const {
  switch (elem_type) {
    case GgufType::kString: return strings.size();
    case GgufType::kArray: return arrays.size();
    case GgufType::kF32:
    case GgufType::kF64: return floats.size();
    case GgufType::kU8:
    case GgufType::kU16:
    case GgufType::kU32:
    case GgufType::kU64: return uints.size();
    default: return ints.size();
  }
}

GgufValue GgufValue::from_string(std::string s) {
  GgufValue v;
  v.type = GgufType::kString;
  v.str = std::move(s);
  return v;
}
GgufValue GgufValue::from_u32(uint32_t x) {
  GgufValue v;
  v.type = GgufType::kU32;
  v.u = x;
  return v;
}
GgufValue GgufValue::from_i32(int32_t x) {
  GgufValue v;
  v.type = GgufType::kI32;
  v.i = x;
  return v;
}
GgufValue GgufValue::from_u64(uint64_t x) {
  GgufValue v;
  v.type = GgufType::kU64;
  v.u = x;
  return v;
}
GgufValue GgufValue::from_f32(float x) {
  GgufValue v;
  v.type = GgufType::kF32;
  v.f = x;
  return v;
}
GgufValue GgufValue::from_bool(bool x) {
  GgufValue v;
  v.type = GgufType::kBool;
  v.i = x ? 1 : 0;
  return v;
}
GgufValue GgufValue::from_strings(std::vector<std::string> s) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.array = std::make_shared<GgufArray>();
  v.array->elem_type = GgufType::kString;
  v.array->strings = std::move(s);
  return v;
}
GgufValue GgufValue::from_f32s(const std::vector<float>& s) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.array = std::make_shared<GgufArray>();
  v.array->elem_type = GgufType::kF32;
  v.array->floats.assign(s.begin(), s.end());
  return v;
}
GgufValue GgufValue::from_i32s(const std::vector<int32_t>& s) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.array = std::make_shared<GgufArray>();
  v.array->elem_type = GgufType::kI32;
  v.array->ints.assign(s.begin(), s.end());
  return v;
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16: case GgufType::kU32:
    case GgufType::kI32: case GgufType::kU64: case GgufType::kI64: return true;
    default: return false;
  }
}

namespace {
std::string quote(const std::string& s, size_t max_chars) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const char c = s[i];
    if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  if (s.size() > max_chars) out += fmt::format("...\" ({} bytes)", s.size());
  else out += "\"";
  return out;
}
}  // namespace

std::string GgufValue::to_display_string(size_t max_items) const {
  switch (type) {
    case GgufType::kString: return quote(str, 120);
    case GgufType::kBool: return i ? "true" : "false";
    case GgufType::kF32:
    case GgufType::kF64: return fmt::format("{:g}", f);
    case GgufType::kArray: {
      const GgufArray& a = *array;
      std::string out = fmt::format("{}[{}] [", gguf_type_name(a.elem_type), a.size());
      const size_t n = std::min(max_items, a.size());
      for (size_t k = 0; k < n; ++k) {
        if (k) out += ", ";
        switch (a.elem_type) {
          case GgufType::kString: out += quote(a.strings[k], 40); break;
          case GgufType::kArray: out += a.arrays[k].to_display_string(2); break;
          case GgufType::kF32: case GgufType::kF64: out += fmt::format("{:g}", a.floats[k]); break;
          case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64:
            out += fmt::format("{}", a.uints[k]);
            break;
          default: out += fmt::format("{}", a.ints[k]);
        }
      }
      if (a.size() > n) out += ", ...";
      return out + "]";
    }
    default:
      if (type == GgufType::kU8 || type == GgufType::kU16 || type == GgufType::kU32 || type == GgufType::kU64) {
        return fmt::format("{}", u);
      }
      return fmt::format("{}", i);
  }
}

}  // namespace saker
