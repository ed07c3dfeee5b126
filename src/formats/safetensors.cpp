// safetensors reader: validates the JSON header and the data offsets of every tensor; data stays in the mmap.
#include "formats/safetensors.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "formats/byte_reader.h"
#include "formats/json_parse.h"
#include "formats/mapped_file.h"

namespace saker {
namespace {

using nlohmann::json;

constexpr std::array kDTypes = {
    SafetensorsDTypeInfo{"F64", 8, DType::kF64},   SafetensorsDTypeInfo{"F32", 4, DType::kF32},
    SafetensorsDTypeInfo{"F16", 2, DType::kF16},   SafetensorsDTypeInfo{"BF16", 2, DType::kBF16},
    SafetensorsDTypeInfo{"I64", 8, DType::kI64},   SafetensorsDTypeInfo{"I32", 4, DType::kI32},
    SafetensorsDTypeInfo{"I16", 2, DType::kI16},   SafetensorsDTypeInfo{"I8", 1, DType::kI8},
    SafetensorsDTypeInfo{"U64", 8, std::nullopt},  SafetensorsDTypeInfo{"U32", 4, std::nullopt},
    SafetensorsDTypeInfo{"U16", 2, std::nullopt},  SafetensorsDTypeInfo{"U8", 1, std::nullopt},
    SafetensorsDTypeInfo{"BOOL", 1, std::nullopt}, SafetensorsDTypeInfo{"F8_E4M3", 1, std::nullopt},
    SafetensorsDTypeInfo{"F8_E5M2", 1, std::nullopt}, SafetensorsDTypeInfo{"F8_E8M0", 1, std::nullopt},
    SafetensorsDTypeInfo{"C64", 8, std::nullopt},
};

// A non-negative JSON integer that fits in int64 (shape dims and offsets); nullopt otherwise.
std::optional<uint64_t> as_count(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t x = v.get<uint64_t>();
    if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return x;
  }
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x < 0) return std::nullopt;
    return static_cast<uint64_t>(x);
  }
  return std::nullopt;
}

class HeaderParser {
 public:
  HeaderParser(uint64_t header_bytes, uint64_t data_bytes) : n_(header_bytes), data_bytes_(data_bytes) {}

  // A problem inside the JSON header: names the tensor and the header's byte range.
  Status header_error(const std::string& name, const std::string& problem) const {
    return make_error(StatusCode::kCorruptFile, "safetensors: tensor '{}': {} (header at bytes 8..{})", name, problem,
                      8 + n_);
  }

  Result<SafetensorsTensorInfo> tensor(const std::string& name, const json& entry) const {
    if (!entry.is_object()) {
      return header_error(name, fmt::format("entry is {}, expected an object with dtype, shape and data_offsets",
                                            json_brief(entry)));
    }
    SafetensorsTensorInfo t;
    t.name = name;

    const auto dt = entry.find("dtype");
    if (dt == entry.end()) return header_error(name, "no \"dtype\"");
    if (!dt->is_string()) return header_error(name, fmt::format("\"dtype\" is {}, expected a string", json_brief(*dt)));
    t.dtype_name = dt->get<std::string>();
    const auto info = safetensors_dtype(t.dtype_name);
    if (!info) {
      return make_error(StatusCode::kUnsupported, "safetensors: tensor '{}' has unknown dtype \"{}\" (header at bytes 8..{})",
                        name, t.dtype_name, 8 + n_);
    }
    t.dtype = info->dtype;
    t.element_bytes = info->element_bytes;

    const auto sh = entry.find("shape");
    if (sh == entry.end()) return header_error(name, "no \"shape\"");
    if (!sh->is_array()) return header_error(name, fmt::format("\"shape\" is {}, expected an array", json_brief(*sh)));
    // The product of the non-zero dimensions must fit in int64, so that no subset of them overflows either
    // (an empty tensor with absurd other dimensions).
    uint64_t n_elements = 1;
    uint64_t nonzero_product = 1;
    for (const json& d : *sh) {
      const auto dim = as_count(d);
      if (!dim) {
        return header_error(name, fmt::format("shape entry {} is not a non-negative integer", json_brief(d)));
      }
      if (*dim != 0 && nonzero_product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / *dim) {
        return header_error(name, fmt::format("shape {} overflows", sh->dump()));
      }
      if (*dim != 0) nonzero_product *= *dim;
      n_elements *= *dim;
      t.shape.push_back(static_cast<int64_t>(*dim));
    }

    const auto off = entry.find("data_offsets");
    if (off == entry.end()) return header_error(name, "no \"data_offsets\"");
    if (!off->is_array() || off->size() != 2) {
      return header_error(name, fmt::format("\"data_offsets\" is {}, expected [begin, end]", json_brief(*off)));
    }
    const auto begin = as_count((*off)[0]);
    const auto end = as_count((*off)[1]);
    if (!begin || !end) {
      return header_error(name, fmt::format("\"data_offsets\" {} are not non-negative integers", off->dump()));
    }
    t.begin = *begin;
    t.end = *end;
    const uint64_t data_start = 8 + n_;
    if (t.begin > t.end) {
      return make_error(StatusCode::kCorruptFile, "safetensors: tensor '{}' data_offsets [{}, {}] end before they begin "
                        "(data at byte {})", name, t.begin, t.end, data_start + t.begin);
    }
    if (t.end > data_bytes_) {
      return make_error(StatusCode::kCorruptFile,
                        "safetensors: tensor '{}' data [{}, {}) runs past the end of the file at byte {} (data at byte {})",
                        name, data_start + t.begin, data_start + t.end, data_start + data_bytes_,
                        data_start + t.begin);
    }
    if (n_elements > std::numeric_limits<uint64_t>::max() / t.element_bytes ||
        n_elements * t.element_bytes != t.n_bytes()) {
      return make_error(StatusCode::kCorruptFile,
                        "safetensors: tensor '{}' has {} bytes at byte {} but shape {} of {} needs {} elements x {} bytes",
                        name, t.n_bytes(), data_start + t.begin, sh->dump(), t.dtype_name, n_elements,
                        t.element_bytes);
    }
    t.file_offset = data_start + t.begin;
    return t;
  }

 private:
  uint64_t n_;
  uint64_t data_bytes_;
};

}  // namespace

std::optional<SafetensorsDTypeInfo> safetensors_dtype(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (d.name == name) return d;
  }
  return std::nullopt;
}

int64_t SafetensorsTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const auto bytes = file->bytes();
  Result<SafetensorsFile> parsed = parse(bytes, std::move(file));
  if (!parsed.ok()) return parsed.status().with_context(path);
  parsed->path_ = path;
  return parsed;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, std::shared_ptr<const void> keepalive) {
  SafetensorsFile f;
  f.bytes_ = bytes;
  f.keepalive_ = std::move(keepalive);
  ByteReader r(bytes, "safetensors");
  uint64_t n = 0;
  SAKER_RETURN_IF_ERROR(r.read(&n, "header length"));
  if (n > kMaxHeaderBytes) {
    return r.corrupt(0, fmt::format("header length {} is over the limit of {} bytes", n, kMaxHeaderBytes));
  }
  if (n > r.remaining()) {
    return r.corrupt(0, fmt::format("header length {} runs past the end of the file ({} bytes)", n, bytes.size()));
  }
  if (n < 2 || bytes[8] != '{') {
    return r.corrupt(8, "the header is not a JSON object (it must start with '{')");
  }
  f.header_bytes_ = n;
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), n);
  JsonParseOptions options;
  options.max_depth = 16;
  options.reject_duplicate_keys = true;
  SAKER_ASSIGN_OR_RETURN(json header, parse_json(text, "safetensors header", 8, options));
  if (!header.is_object()) return r.corrupt(8, fmt::format("the header is {}, expected an object", json_brief(header)));

  const HeaderParser parser(n, bytes.size() - 8 - n);
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return r.corrupt(8, fmt::format("__metadata__ is {}, expected an object of strings", json_brief(entry)));
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return r.corrupt(8, fmt::format("__metadata__ \"{}\" is {}, expected a string", key, json_brief(value)));
        }
        f.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    SAKER_ASSIGN_OR_RETURN(SafetensorsTensorInfo t, parser.tensor(name, entry));
    f.tensors_.push_back(std::move(t));
  }

  std::sort(f.tensors_.begin(), f.tensors_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
  });
  // Sorted by begin, a non-empty tensor overlaps an earlier one exactly when it starts before the furthest
  // end seen so far.
  const SafetensorsTensorInfo* furthest = nullptr;
  for (size_t k = 0; k < f.tensors_.size(); ++k) {
    const SafetensorsTensorInfo& t = f.tensors_[k];
    if (t.n_bytes() == 0) continue;
    if (furthest && t.begin < furthest->end) {
      return make_error(StatusCode::kCorruptFile,
                        "safetensors: tensor '{}' data at byte {} overlaps tensor '{}' ending at byte {}", t.name,
                        t.file_offset, furthest->name, furthest->file_offset + furthest->n_bytes());
    }
    if (!furthest || t.end > furthest->end) furthest = &t;
  }
  for (size_t k = 0; k < f.tensors_.size(); ++k) f.tensor_index_[f.tensors_[k].name] = k;
  return f;
}

const SafetensorsTensorInfo* SafetensorsFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> SafetensorsFile::tensor_bytes(const SafetensorsTensorInfo& info) const {
  return bytes_.subspan(info.file_offset, info.n_bytes());
}

Result<TensorView> SafetensorsFile::view(const SafetensorsTensorInfo& info) const {
  if (!info.dtype) {
    return make_error(StatusCode::kUnsupported,
                      "safetensors: tensor '{}' has dtype {}, which saker has no tensor type for (its {} bytes at "
                      "byte {} are readable as raw bytes)",
                      info.name, info.dtype_name, info.n_bytes(), info.file_offset);
  }
  if (info.shape.size() > static_cast<size_t>(kMaxDims)) {
    return make_error(StatusCode::kUnsupported, "safetensors: tensor '{}' has {} dimensions (saker views hold up to {})",
                      info.name, info.shape.size(), kMaxDims);
  }
  const uint8_t* data = bytes_.data() + info.file_offset;
  if (info.n_bytes() > 0 && reinterpret_cast<uintptr_t>(data) % info.element_bytes != 0) {
    return make_error(StatusCode::kUnsupported,
                      "safetensors: tensor '{}' data at byte {} is not aligned to its {}-byte elements", info.name,
                      info.file_offset, info.element_bytes);
  }
  return TensorView::contiguous(const_cast<uint8_t*>(data), *info.dtype, info.shape.data(),
                                static_cast<int>(info.shape.size()));
}

}  // namespace saker
