// GGUF reader: parses and validates the header, metadata and tensor table; tensor data stays in the mmap.
#include <algorithm>
#include <limits>

#include "formats/byte_reader.h"
#include "formats/gguf.h"

namespace saker {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxArrayDepth = 4;
constexpr uint32_t kMaxTensorDims = 4;  // ggml's limit

bool is_known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

// Smallest encoded size of one value of a type, so counts can be checked against the bytes left.
uint64_t min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kString: case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

template <typename T>
Status read_scalar_into(ByteReader& r, GgufType type, GgufValue* v, const char* field) {
  T x{};
  SAKER_RETURN_IF_ERROR(r.read(&x, field));
  v->type = type;
  if constexpr (std::is_floating_point_v<T>) {
    v->f = x;
  } else if constexpr (std::is_signed_v<T>) {
    v->i = x;
  } else {
    v->u = x;
  }
  return {};
}

Status read_value(ByteReader& r, GgufType type, GgufValue* v, int depth);

template <typename T>
Status read_array_elems(ByteReader& r, uint64_t n, GgufArray* a) {
  for (uint64_t k = 0; k < n; ++k) {
    T x{};
    SAKER_RETURN_IF_ERROR(r.read(&x, "array element"));
    if constexpr (std::is_floating_point_v<T>) {
      a->floats.push_back(x);
    } else if constexpr (std::is_signed_v<T>) {
      a->ints.push_back(x);
    } else {
      a->uints.push_back(x);
    }
  }
  return {};
}

Status read_array(ByteReader& r, GgufValue* v, int depth) {
  const uint64_t at = r.offset();
  if (depth >= kMaxArrayDepth) return r.corrupt(at, "arrays nested deeper than 4 levels");
  uint32_t elem_type = 0;
  uint64_t n = 0;
  SAKER_RETURN_IF_ERROR(r.read(&elem_type, "array element type"));
  if (!is_known_type(elem_type)) return r.corrupt(at, fmt::format("unknown array element type {}", elem_type));
  SAKER_RETURN_IF_ERROR(r.read(&n, "array length"));
  const auto et = static_cast<GgufType>(elem_type);
  if (n > r.remaining() / min_encoded_size(et)) {
    return r.corrupt(at + 4, fmt::format("array of {} {} elements runs past the end of the file", n,
                                         gguf_type_name(et)));
  }
  v->type = GgufType::kArray;
  v->array = std::make_shared<GgufArray>();
  GgufArray* a = v->array.get();
  a->elem_type = et;
  switch (et) {
    case GgufType::kU8: return read_array_elems<uint8_t>(r, n, a);
    case GgufType::kI8: return read_array_elems<int8_t>(r, n, a);
    case GgufType::kU16: return read_array_elems<uint16_t>(r, n, a);
    case GgufType::kI16: return read_array_elems<int16_t>(r, n, a);
    case GgufType::kU32: return read_array_elems<uint32_t>(r, n, a);
    case GgufType::kI32: return read_array_elems<int32_t>(r, n, a);
    case GgufType::kU64: return read_array_elems<uint64_t>(r, n, a);
    case GgufType::kI64: return read_array_elems<int64_t>(r, n, a);
    case GgufType::kF32: return read_array_elems<float>(r, n, a);
    case GgufType::kF64: return read_array_elems<double>(r, n, a);
    case GgufType::kBool:
      for (uint64_t k = 0; k < n; ++k) {
        uint8_t b = 0;
        SAKER_RETURN_IF_ERROR(r.read(&b, "array element"));
        a->ints.push_back(b ? 1 : 0);
      }
      return {};
    // Strings and arrays grow as they parse: n is only bounded by the bytes left, which in a large model file
    // is far more memory than a vector of n std::strings should claim up front.
    case GgufType::kString:
      for (uint64_t k = 0; k < n; ++k) SAKER_RETURN_IF_ERROR(r.read_string(&a->strings.emplace_back(), "array string"));
      return {};
    case GgufType::kArray:
      for (uint64_t k = 0; k < n; ++k) SAKER_RETURN_IF_ERROR(read_array(r, &a->arrays.emplace_back(), depth + 1));
      return {};
  }
  return {};
}

Status read_value(ByteReader& r, GgufType type, GgufValue* v, int depth) {
  switch (type) {
    case GgufType::kU8: return read_scalar_into<uint8_t>(r, type, v, "u8 value");
    case GgufType::kI8: return read_scalar_into<int8_t>(r, type, v, "i8 value");
    case GgufType::kU16: return read_scalar_into<uint16_t>(r, type, v, "u16 value");
    case GgufType::kI16: return read_scalar_into<int16_t>(r, type, v, "i16 value");
    case GgufType::kU32: return read_scalar_into<uint32_t>(r, type, v, "u32 value");
    case GgufType::kI32: return read_scalar_into<int32_t>(r, type, v, "i32 value");
    case GgufType::kU64: return read_scalar_into<uint64_t>(r, type, v, "u64 value");
    case GgufType::kI64: return read_scalar_into<int64_t>(r, type, v, "i64 value");
    case GgufType::kF32: return read_scalar_into<float>(r, type, v, "f32 value");
    case GgufType::kF64: return read_scalar_into<double>(r, type, v, "f64 value");
    case GgufType::kBool: {
      uint8_t b = 0;
      SAKER_RETURN_IF_ERROR(r.read(&b, "bool value"));
      v->type = type;
      v->i = b ? 1 : 0;
      return {};
    }
    case GgufType::kString:
      v->type = type;
      return r.read_string(&v->str, "string value");
    case GgufType::kArray: return read_array(r, v, depth);
  }
  return {};
}

}  // namespace

std::vector<int64_t> GgufTensorInfo::shape() const { return {ne.rbegin(), ne.rend()}; }

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  auto bytes = file->bytes();
  Result<GgufFile> parsed = parse(bytes, file);
  if (!parsed.ok()) return parsed.status().with_context(path);
  parsed->path_ = path;
  return parsed;
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::shared_ptr<const void> keepalive) {
  GgufFile g;
  g.bytes_ = bytes;
  g.keepalive_ = std::move(keepalive);
  ByteReader r(bytes, "gguf");

  uint32_t magic = 0;
  SAKER_RETURN_IF_ERROR(r.read(&magic, "magic"));
  if (magic != kMagic) return r.corrupt(0, "bad magic: not a GGUF file (expected bytes 47 47 55 46)");
  SAKER_RETURN_IF_ERROR(r.read(&g.version_, "version"));
  if (g.version_ != 2 && g.version_ != 3) {
    return make_error(StatusCode::kUnsupported, "gguf: version {} at byte 4 is not supported (expected 2 or 3)",
                      g.version_);
  }
  uint64_t n_tensors = 0, n_kv = 0;
  SAKER_RETURN_IF_ERROR(r.read(&n_tensors, "tensor count"));
  SAKER_RETURN_IF_ERROR(r.read(&n_kv, "metadata count"));
  // A key needs >= 8 + 4 + 1 bytes, a tensor info >= 8 + 4 + 4 + 8.
  if (n_kv > r.remaining() / 13) {
    return r.corrupt(16, fmt::format("metadata count {} runs past the end of the file", n_kv));
  }
  if (n_tensors > r.remaining() / 24) {
    return r.corrupt(8, fmt::format("tensor count {} runs past the end of the file", n_tensors));
  }

  // Counts are only bounded by the file's size: reserve a little and let the vectors grow as entries parse.
  constexpr uint64_t kMaxReserve = 4096;
  g.kv_.reserve(std::min(n_kv, kMaxReserve));
  uint64_t alignment_at = 0;  // where general.alignment's key starts, for its error message
  for (uint64_t k = 0; k < n_kv; ++k) {
    const uint64_t at = r.offset();
    std::string key;
    SAKER_RETURN_IF_ERROR(r.read_string(&key, "metadata key", 1 << 16));
    uint32_t type = 0;
    SAKER_RETURN_IF_ERROR(r.read(&type, "metadata value type"));
    if (!is_known_type(type)) {
      return r.corrupt(r.offset() - 4, fmt::format("metadata '{}' has unknown value type {}", key, type));
    }
    GgufValue v;
    Status s = read_value(r, static_cast<GgufType>(type), &v, 0);
    if (!s.ok()) return s.with_context(fmt::format("metadata '{}'", key));
    if (g.kv_index_.count(key)) return r.corrupt(at, fmt::format("duplicate metadata key '{}'", key));
    if (key == "general.alignment") alignment_at = at;
    g.kv_index_[key] = g.kv_.size();
    g.kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = g.find("general.alignment")) {
    if (a->type != GgufType::kU32 || a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > (1u << 20)) {
      return r.corrupt(alignment_at, fmt::format("general.alignment must be a u32 power of two up to 1 MiB (got {} {})",
                                                 gguf_type_name(a->type), a->to_display_string()));
    }
    g.alignment_ = static_cast<uint32_t>(a->u);
  }

  g.tensors_.reserve(std::min(n_tensors, kMaxReserve));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    const uint64_t at = r.offset();
    GgufTensorInfo t;
    SAKER_RETURN_IF_ERROR(r.read_string(&t.name, "tensor name", 1 << 16));
    uint32_t n_dims = 0;
    SAKER_RETURN_IF_ERROR(r.read(&n_dims, "tensor dimension count"));
    if (n_dims == 0 || n_dims > kMaxTensorDims) {
      return r.corrupt(r.offset() - 4, fmt::format("tensor '{}' has {} dimensions (expected 1..4)", t.name, n_dims));
    }
    // The product of the non-zero dimensions must fit in int64 too: an empty tensor with absurd other
    // dimensions would otherwise overflow whoever multiplies a subset of them (rows, strides).
    uint64_t n_elements = 1;
    uint64_t nonzero_product = 1;
    constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      SAKER_RETURN_IF_ERROR(r.read(&dim, "tensor dimension"));
      if (dim > kMax || (dim != 0 && nonzero_product > kMax / dim)) {
        return r.corrupt(r.offset() - 8, fmt::format("tensor '{}' dimensions overflow", t.name));
      }
      if (dim != 0) nonzero_product *= dim;
      n_elements *= dim;
      t.ne.push_back(static_cast<int64_t>(dim));
    }
    uint32_t type = 0;
    SAKER_RETURN_IF_ERROR(r.read(&type, "tensor type"));
    const auto tr = dtype_traits(type);
    if (!tr) return r.corrupt(r.offset() - 4, fmt::format("tensor '{}' has unknown ggml type {}", t.name, type));
    t.dtype = static_cast<DType>(type);
    SAKER_RETURN_IF_ERROR(r.read(&t.offset, "tensor data offset"));
    if (t.offset % g.alignment_ != 0) {
      return r.corrupt(r.offset() - 8, fmt::format("tensor '{}' data offset {} is not a multiple of the alignment {}",
                                                   t.name, t.offset, g.alignment_));
    }
    const auto rb = row_bytes(t.dtype, t.ne[0]);
    if (!rb) {
      return r.corrupt(at, fmt::format("tensor '{}': row of {} elements is not a whole number of {} blocks of {}",
                                       t.name, t.ne[0], tr->name, tr->block_elements));
    }
    const uint64_t rows = t.ne[0] == 0 ? 0 : n_elements / static_cast<uint64_t>(t.ne[0]);
    if (rows != 0 && *rb > std::numeric_limits<uint64_t>::max() / rows) {
      return r.corrupt(at, fmt::format("tensor '{}' byte size overflows", t.name));
    }
    t.n_bytes = *rb * rows;
    if (g.tensor_index_.count(t.name)) return r.corrupt(at, fmt::format("duplicate tensor name '{}'", t.name));
    g.tensor_index_[t.name] = g.tensors_.size();
    g.tensors_.push_back(std::move(t));
  }

  const uint64_t header_end = r.offset();
  g.data_offset_ = (header_end + g.alignment_ - 1) / g.alignment_ * g.alignment_;
  if (g.tensors_.empty()) return g;
  if (g.data_offset_ > bytes.size()) {
    return r.corrupt(header_end, fmt::format("data section at byte {} starts past the end of the file ({} bytes)",
                                             g.data_offset_, bytes.size()));
  }
  const uint64_t data_size = bytes.size() - g.data_offset_;
  std::vector<const GgufTensorInfo*> by_offset;
  for (auto& t : g.tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      return make_error(StatusCode::kCorruptFile,
                        "gguf: tensor '{}' data [{}, {}) runs past the end of the file ({} bytes)", t.name,
                        g.data_offset_ + t.offset, g.data_offset_ + t.offset + t.n_bytes, bytes.size());
    }
    t.file_offset = g.data_offset_ + t.offset;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  // Sorted by offset, a non-empty tensor overlaps an earlier one exactly when it starts before the furthest end
  // seen so far (comparing neighbours only would let an empty tensor in between hide an overlap).
  const GgufTensorInfo* furthest = nullptr;
  for (const GgufTensorInfo* cur : by_offset) {
    if (cur->n_bytes == 0) continue;
    if (furthest && cur->offset < furthest->offset + furthest->n_bytes) {
      return make_error(StatusCode::kCorruptFile, "gguf: tensor '{}' data at byte {} overlaps tensor '{}' ending at byte {}",
                        cur->name, cur->file_offset, furthest->name, furthest->file_offset + furthest->n_bytes);
    }
    if (!furthest || cur->offset + cur->n_bytes > furthest->offset + furthest->n_bytes) furthest = cur;
  }
  return g;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kString) return std::nullopt;
  return v->str;
}

std::optional<int64_t> GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || !v->is_integer()) return std::nullopt;
  switch (v->type) {
    case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64:
      if (v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(v->u);
    default: return v->i;
  }
}

std::optional<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (auto i = get_int(key)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kBool) return std::nullopt;
  return v->i != 0;
}

const GgufArray* GgufFile::get_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v || v->type != GgufType::kArray) return nullptr;
  return v->array.get();
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensor_bytes(const GgufTensorInfo& info) const {
  return bytes_.subspan(info.file_offset, info.n_bytes);
}

TensorView GgufFile::view(const GgufTensorInfo& info) const {
  const std::vector<int64_t> shape = info.shape();
  return TensorView::contiguous(const_cast<uint8_t*>(bytes_.data() + info.file_offset), info.dtype, shape.data(),
                                static_cast<int>(shape.size()));
}

}  // namespace saker
