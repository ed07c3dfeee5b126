#pragma once
// Reading the reference tensors the golden scripts store in safetensors files (logits, token ids).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "formats/safetensors.h"

namespace saker::testing {

template <typename T>
std::vector<T> read_tensor(const SafetensorsFile& f, const std::string& name) {
  const SafetensorsTensorInfo* info = f.find_tensor(name);
  EXPECT_NE(info, nullptr) << name;
  if (!info) return {};
  auto bytes = f.tensor_bytes(*info);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace saker::testing
