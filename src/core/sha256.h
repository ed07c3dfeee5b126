#pragma once
// SHA-256 (FIPS 180-4), for checking downloaded model files against their published digests.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace saker {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::array<uint8_t, 32> finish();  // the object must not be updated afterwards
  std::string finish_hex();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
// The digest of a whole file, read in chunks (errors name the file).
Result<std::string> sha256_file_hex(const std::string& path);

}  // namespace saker
