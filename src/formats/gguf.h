#pragma once
// GGUF v3 reader (mmap, zero-copy tensor views) and writer. Spec: docs/formats (GGUF section).
//
// The reader validates everything before handing out a view: a malformed file yields a kCorruptFile
// Status naming the problem and the byte offset, never an out-of-bounds read.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "formats/mapped_file.h"

namespace saker {

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* gguf_type_name(GgufType type);

struct GgufValue;

// An array keeps its element type; elements live in the vector matching that type.
struct GgufArray {
  GgufType elem_type = GgufType::kU8;
  std::vector<uint64_t> uints;     // u8, u16, u32, u64
  std::vector<int64_t> ints;       // i8, i16, i32, i64, bool
  std::vector<double> floats;      // f32, f64
  std::vector<std::string> strings;
  std::vector<GgufValue> arrays;   // nested arrays
  size_t size() const;
};

struct GgufValue {
  GgufType type = GgufType::kU8;
  uint64_t u = 0;     // unsigned integer types
  int64_t i = 0;      // signed integer types and bool
  double f = 0;       // f32, f64
  std::string str;    // string
  std::shared_ptr<GgufArray> array;  // array

  static GgufValue from_string(std::string s);
  static GgufValue from_u32(uint32_t v);
  static GgufValue from_i32(int32_t v);
  static GgufValue from_u64(uint64_t v);
  static GgufValue from_f32(float v);
  static GgufValue from_bool(bool v);
  static GgufValue from_strings(std::vector<std::string> v);
  static GgufValue from_f32s(const std::vector<float>& v);
  static GgufValue from_i32s(const std::vector<int32_t>& v);

  bool is_integer() const;
  bool is_float() const { return type == GgufType::kF32 || type == GgufType::kF64; }
  std::string to_display_string(size_t max_array_items = 8) const;  // for `saker info`
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: innermost first
  DType dtype = DType::kF32;
  uint64_t offset = 0;       // relative to the data section
  uint64_t n_bytes = 0;
  uint64_t file_offset = 0;  // absolute
  // Row-major shape (outermost first), the reverse of ne.
  std::vector<int64_t> shape() const;
  int64_t n_elements() const;
};

class GgufFile {
 public:
  // Maps and parses a file. Errors name the path.
  static Result<GgufFile> open(const std::string& path);
  // Parses bytes that stay owned by the caller (fuzzing, tests). `keepalive` may be null.
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, std::shared_ptr<const void> keepalive = nullptr);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return path_; }

  // Metadata in file order, and lookup by key.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  std::optional<int64_t> get_int(const std::string& key) const;  // any integer type that fits
  std::optional<double> get_float(const std::string& key) const;  // float or integer
  std::optional<bool> get_bool(const std::string& key) const;
  const GgufArray* get_array(const std::string& key) const;
  std::string architecture() const { return get_string("general.architecture").value_or(""); }

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // A CPU view straight into the mapped file.
  TensorView view(const GgufTensorInfo& info) const;
  std::span<const uint8_t> tensor_bytes(const GgufTensorInfo& info) const;

 private:
  std::string path_;
  std::shared_ptr<const void> keepalive_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Writes a GGUF v3 file: metadata in insertion order, tensors aligned to `general.alignment` (32 unless set).
class GgufWriter {
 public:
  void set(const std::string& key, GgufValue value);  // replaces an existing key in place
  // shape is row-major (outermost first); data must hold exactly the tensor's bytes until write().
  Status add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                    std::span<const uint8_t> data);
  // Same, for data the writer keeps (converted or quantized tensors).
  Status add_tensor_owned(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                          std::vector<uint8_t> data);
  // Same, for data produced while the file is written (synthetic or converted models larger than memory):
  // fill(dst) writes exactly the tensor's bytes into dst.
  Status add_tensor_generated(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                              std::function<void(uint8_t* dst)> fill);
  // Progress of write(): called after each tensor with (tensors done, total).
  void set_progress(std::function<void(size_t, size_t)> progress) { progress_ = std::move(progress); }
  Status write(const std::string& path) const;
  // The whole file in memory (tests, fuzz seeds).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::span<const uint8_t> data;
    std::shared_ptr<std::vector<uint8_t>> owned;
    std::function<void(uint8_t*)> fill;  // generated at write time
    uint64_t n_bytes = 0;
  };
  static Result<uint64_t> tensor_size(const std::string& name, DType dtype, const std::vector<int64_t>& shape);
  std::function<void(size_t, size_t)> progress_;
  uint32_t alignment() const;
  template <typename Sink>
  void emit(Sink& sink) const;

  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace saker
