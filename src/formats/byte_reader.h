#pragma once
// ByteReader: bounds-checked little-endian reads over a byte span. Every failure names the byte offset,
// so parsers built on it report where a file went wrong and never read past its end.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "core/status.h"

namespace saker {

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return bytes_.size() - offset_; }
  void seek(uint64_t offset) { offset_ = offset; }

  template <typename T>
  Status read(T* out, const char* field) {
    if (remaining() < sizeof(T)) return truncated(field, sizeof(T));
    std::memcpy(out, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return {};
  }

  // A u64 length followed by that many bytes. max_len guards against absurd allocations.
  Status read_string(std::string* out, const char* field, uint64_t max_len = (1ull << 30)) {
    const uint64_t at = offset_;
    uint64_t len = 0;
    SAKER_RETURN_IF_ERROR(read(&len, field));
    if (len > max_len) {
      return make_error(StatusCode::kCorruptFile, "{}: {} at byte {} has length {} (limit {})", what_, field, at,
                        len, max_len);
    }
    if (remaining() < len) return truncated(field, len);
    out->assign(reinterpret_cast<const char*>(bytes_.data() + offset_), len);
    offset_ += len;
    return {};
  }

  Status truncated(const char* field, uint64_t need) const {
    return make_error(StatusCode::kCorruptFile, "{}: {} at byte {} needs {} bytes but the file ends at byte {}", what_,
                      field, offset_, need, bytes_.size());
  }
  Status corrupt(uint64_t at, const std::string& message) const {
    return make_error(StatusCode::kCorruptFile, "{}: {} (at byte {})", what_, message, at);
  }

 private:
  std::span<const uint8_t> bytes_;
  std::string what_;
  uint64_t offset_ = 0;
};

}  // namespace saker
