// GGUF v3 writer: header, metadata in insertion order, tensor table, then aligned tensor data.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "formats/gguf.h"

namespace saker {
namespace {

struct VectorSink {
  std::vector<uint8_t>* out;
  void write(const void* p, size_t n) {
    // resize + memcpy rather than insert(): GCC 12 warns falsely (-Wstringop-overflow) on the latter.
    if (n == 0) return;
    const size_t at = out->size();
    out->resize(at + n);
    std::memcpy(out->data() + at, p, n);
  }
  uint64_t position() const { return out->size(); }
};

struct FileSink {
  std::FILE* f;
  uint64_t pos = 0;
  bool failed = false;
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) failed = true;
    pos += n;
  }
  uint64_t position() const { return pos; }
};

template <typename Sink, typename T>
void put(Sink& s, T x) {
  s.write(&x, sizeof(T));
}

template <typename Sink>
void put_string(Sink& s, const std::string& str) {
  put<Sink, uint64_t>(s, str.size());
  s.write(str.data(), str.size());
}

template <typename Sink>
void put_array(Sink& s, const GgufArray& a);

template <typename Sink>
void put_value(Sink& s, const GgufValue& v) {
  switch (v.type) {
    case GgufType::kU8: put<Sink, uint8_t>(s, static_cast<uint8_t>(v.u)); break;
    case GgufType::kI8: put<Sink, int8_t>(s, static_cast<int8_t>(v.i)); break;
    case GgufType::kU16: put<Sink, uint16_t>(s, static_cast<uint16_t>(v.u)); break;
    case GgufType::kI16: put<Sink, int16_t>(s, static_cast<int16_t>(v.i)); break;
    case GgufType::kU32: put<Sink, uint32_t>(s, static_cast<uint32_t>(v.u)); break;
    case GgufType::kI32: put<Sink, int32_t>(s, static_cast<int32_t>(v.i)); break;
    case GgufType::kU64: put<Sink, uint64_t>(s, v.u); break;
    case GgufType::kI64: put<Sink, int64_t>(s, v.i); break;
    case GgufType::kF32: put<Sink, float>(s, static_cast<float>(v.f)); break;
    case GgufType::kF64: put<Sink, double>(s, v.f); break;
    case GgufType::kBool: put<Sink, uint8_t>(s, v.i ? 1 : 0); break;
    case GgufType::kString: put_string(s, v.str); break;
    case GgufType::kArray: put_array(s, *v.array); break;
  }
}

template <typename Sink>
void put_array(Sink& s, const GgufArray& a) {
  put<Sink, uint32_t>(s, static_cast<uint32_t>(a.elem_type));
  put<Sink, uint64_t>(s, a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    GgufValue e;
    e.type = a.elem_type;
    switch (a.elem_type) {
      case GgufType::kString: put_string(s, a.strings[k]); continue;
      case GgufType::kArray: put_array(s, *a.arrays[k].array); continue;
      case GgufType::kF32: case GgufType::kF64: e.f = a.floats[k]; break;
      case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64: e.u = a.uints[k]; break;
      default: e.i = a.ints[k];
    }
    put_value(s, e);
  }
}

template <typename Sink>
void pad_to(Sink& s, uint64_t alignment) {
  static const uint8_t kZeros[64] = {};
  uint64_t pad = (alignment - s.position() % alignment) % alignment;
  while (pad > 0) {
    const uint64_t n = std::min<uint64_t>(pad, sizeof(kZeros));
    s.write(kZeros, n);
    pad -= n;
  }
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  kv_.emplace_back(key, std::move(value));
}

Result<uint64_t> GgufWriter::tensor_size(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  if (shape.empty() || shape.size() > 4) {
    return make_error(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' has {} dimensions (1..4)", name,
                      shape.size());
  }
  for (int64_t d : shape) {
    if (d < 0) return make_error(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' has a negative dimension", name);
  }
  const auto rb = row_bytes(dtype, shape.back());
  if (!rb) {
    return make_error(StatusCode::kInvalidArgument, "gguf writer: tensor '{}': {} elements per row is not a multiple "
                      "of the {} block", name, shape.back(), dtype_name(dtype));
  }
  // Overflow-checked, so that a wrapped size can never match the data and produce a file the reader rejects.
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) {
    const auto d = static_cast<uint64_t>(shape[i]);
    if (d != 0 && rows > std::numeric_limits<uint64_t>::max() / d) {
      return make_error(StatusCode::kInvalidArgument, "gguf writer: tensor '{}': its shape overflows", name);
    }
    rows *= d;
  }
  if (rows != 0 && *rb > std::numeric_limits<uint64_t>::max() / rows) {
    return make_error(StatusCode::kInvalidArgument, "gguf writer: tensor '{}': its shape overflows", name);
  }
  return *rb * rows;
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                              std::span<const uint8_t> data) {
  for (const auto& t : tensors_) {
    if (t.name == name) return make_error(StatusCode::kInvalidArgument, "gguf writer: duplicate tensor '{}'", name);
  }
  SAKER_ASSIGN_OR_RETURN(uint64_t n_bytes, tensor_size(name, dtype, shape));
  if (n_bytes != data.size()) {
    return make_error(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' has {} bytes, its shape needs {}", name,
                      data.size(), n_bytes);
  }
  tensors_.push_back({name, dtype, shape, data, nullptr, nullptr, n_bytes});
  return {};
}

Status GgufWriter::add_tensor_generated(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                        std::function<void(uint8_t* dst)> fill) {
  for (const auto& t : tensors_) {
    if (t.name == name) return make_error(StatusCode::kInvalidArgument, "gguf writer: duplicate tensor '{}'", name);
  }
  SAKER_ASSIGN_OR_RETURN(uint64_t n_bytes, tensor_size(name, dtype, shape));
  tensors_.push_back({name, dtype, shape, {}, nullptr, std::move(fill), n_bytes});
  return {};
}

Status GgufWriter::add_tensor_owned(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                    std::vector<uint8_t> data) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(data));
  SAKER_RETURN_IF_ERROR(add_tensor(name, dtype, shape, {owned->data(), owned->size()}));
  tensors_.back().owned = std::move(owned);
  return {};
}

uint32_t GgufWriter::alignment() const {
  for (const auto& kv : kv_) {
    if (kv.first == "general.alignment" && kv.second.type == GgufType::kU32 && kv.second.u > 0) {
      return static_cast<uint32_t>(kv.second.u);
    }
  }
  return 32;
}

template <typename Sink>
void GgufWriter::emit(Sink& s) const {
  const uint64_t align = alignment();
  put<Sink, uint32_t>(s, 0x46554747);
  put<Sink, uint32_t>(s, 3);
  put<Sink, uint64_t>(s, tensors_.size());
  put<Sink, uint64_t>(s, kv_.size());
  for (const auto& [key, value] : kv_) {
    put_string(s, key);
    put<Sink, uint32_t>(s, static_cast<uint32_t>(value.type));
    put_value(s, value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(s, t.name);
    put<Sink, uint32_t>(s, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<Sink, uint64_t>(s, static_cast<uint64_t>(*it));
    put<Sink, uint32_t>(s, static_cast<uint32_t>(t.dtype));
    put<Sink, uint64_t>(s, offset);
    offset += (t.n_bytes + align - 1) / align * align;
  }
  pad_to(s, align);
  size_t done = 0;
  for (const auto& t : tensors_) {
    if (t.fill) {
      std::vector<uint8_t> buf(t.n_bytes);
      t.fill(buf.data());
      s.write(buf.data(), buf.size());
    } else {
      s.write(t.data.data(), t.data.size());
    }
    pad_to(s, align);
    if (progress_) progress_(++done, tensors_.size());
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  VectorSink sink{&out};
  emit(sink);
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return make_error(StatusCode::kIoError, "{}: cannot create: {}", tmp, std::strerror(errno));
  FileSink sink{f};
  emit(sink);
  const bool close_failed = std::fclose(f) != 0;
  if (sink.failed || close_failed) {
    std::remove(tmp.c_str());
    return make_error(StatusCode::kIoError, "{}: write failed (disk full?)", path);
  }
  // Written under a temporary name and renamed, so an interrupted run never leaves a truncated model.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return make_error(StatusCode::kIoError, "{}: cannot rename from {}: {}", path, tmp, std::strerror(errno));
  }
  return {};
}

}  // namespace saker
