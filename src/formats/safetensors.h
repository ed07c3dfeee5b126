#pragma once
// safetensors reader (mmap, zero-copy tensor views): one file, or a Hugging Face folder of shards listed by
// model.safetensors.index.json. Spec: docs/formats (safetensors section).
//
// File layout: u64 little-endian header length N, N bytes of JSON
//   {name: {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data buffer; offsets are relative to its start (byte 8 + N of the file). Everything is validated
// before a view is handed out: a malformed file yields a kCorruptFile Status naming the tensor, the problem
// and the byte offset, never an out-of-bounds read.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "core/tensor.h"

namespace saker {

// The element types of the safetensors spec. Those with a saker DType can be viewed as tensors; the others
// (unsigned ints, BOOL, 8-bit floats, C64) are recognised and their bytes stay reachable via tensor_bytes().
struct SafetensorsDTypeInfo {
  std::string_view name;      // as written in the header: "BF16"
  uint32_t element_bytes;
  std::optional<DType> dtype;  // saker's equivalent, if any
};
// nullopt for a name the spec does not define (or that saker does not know yet).
std::optional<SafetensorsDTypeInfo> safetensors_dtype(std::string_view name);

struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype_name;       // as in the header: "F32", "BF16", "F8_E4M3", ...
  std::optional<DType> dtype;   // nullopt when saker has no equivalent (see safetensors_dtype)
  uint32_t element_bytes = 0;
  std::vector<int64_t> shape;   // row-major, outermost first; empty for a scalar
  uint64_t begin = 0;           // data_offsets, relative to the data buffer
  uint64_t end = 0;
  uint64_t file_offset = 0;     // absolute offset of the first byte in the file

  uint64_t n_bytes() const { return end - begin; }
  int64_t n_elements() const;
};

class SafetensorsFile {
 public:
  // Largest header accepted (the reference implementation's limit as well).
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Maps and parses a file. Errors name the path.
  static Result<SafetensorsFile> open(const std::string& path);
  // Parses bytes that stay owned by the caller (fuzzing, tests). `keepalive` may be null.
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes,
                                       std::shared_ptr<const void> keepalive = nullptr);

  const std::string& path() const { return path_; }
  uint64_t header_bytes() const { return header_bytes_; }  // N
  uint64_t data_offset() const { return 8 + header_bytes_; }
  uint64_t file_bytes() const { return bytes_.size(); }
  // "__metadata__" (string to string by the spec); empty when absent.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Tensors in the order of their data (by begin offset, then name).
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  const SafetensorsTensorInfo* find_tensor(const std::string& name) const;
  // A CPU view straight into the mapped file. Fails (kUnsupported, naming the tensor) for a dtype without a
  // saker DType, more than kMaxDims dimensions, or data not aligned to its element size (files whose header is
  // not padded to 8 bytes, as old writers made them): callers then copy tensor_bytes() into an aligned buffer.
  Result<TensorView> view(const SafetensorsTensorInfo& info) const;
  std::span<const uint8_t> tensor_bytes(const SafetensorsTensorInfo& info) const;

 private:
  std::string path_;
  std::shared_ptr<const void> keepalive_;
  std::span<const uint8_t> bytes_;
  uint64_t header_bytes_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// A Hugging Face model folder: model.safetensors.index.json (weight_map: tensor name -> shard file) when
// present, else model.safetensors, else every *.safetensors file in the folder. Tensors are looked up by name
// across shards.
class SafetensorsModel {
 public:
  // `path`: the folder; also accepted: one .safetensors file or an index .json file.
  static Result<SafetensorsModel> open(const std::string& path);

  const std::string& folder() const { return folder_; }
  const std::vector<SafetensorsFile>& files() const { return files_; }
  // The index's "metadata" object (e.g. total_size); null when there is no index.
  const nlohmann::json& index_metadata() const;

  size_t n_tensors() const { return by_name_.size(); }
  std::vector<std::string> tensor_names() const;  // sorted
  const SafetensorsTensorInfo* find_tensor(const std::string& name) const;
  // The shard holding a tensor; null when the name is unknown.
  const SafetensorsFile* file_of(const std::string& name) const;
  // kNotFound naming the tensor when absent; otherwise SafetensorsFile::view.
  Result<TensorView> view(const std::string& name) const;

 private:
  struct Location {
    size_t file;    // index into files_
    size_t tensor;  // index into files_[file].tensors()
  };
  std::string folder_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Location> by_name_;
  std::shared_ptr<nlohmann::json> index_metadata_;
};

}  // namespace saker
