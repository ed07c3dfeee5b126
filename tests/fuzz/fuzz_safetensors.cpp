// Fuzz target: SafetensorsFile::parse on arbitrary bytes. Touches every tensor's bytes and view, and checks the
// parser's promises: offsets inside the file, sizes matching shapes, no two non-empty tensors overlapping.
#include <algorithm>

#include "formats/safetensors.h"
#include "fuzz_target.h"

namespace {

using namespace saker;
using saker::fuzz::consume;


}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<SafetensorsFile> parsed = SafetensorsFile::parse({data, size});
  if (!parsed.ok()) {
    SAKER_FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  const SafetensorsFile& f = *parsed;
  SAKER_FUZZ_CHECK(f.data_offset() <= size);
  for (const auto& [key, value] : f.metadata()) consume(key.size() + value.size());

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& t : f.tensors()) {
    SAKER_FUZZ_CHECK(f.find_tensor(t.name) == &t);
    SAKER_FUZZ_CHECK(t.begin <= t.end);
    SAKER_FUZZ_CHECK(t.file_offset == f.data_offset() + t.begin);
    SAKER_FUZZ_CHECK(t.file_offset <= size && t.n_bytes() <= size - t.file_offset);
    SAKER_FUZZ_CHECK(static_cast<uint64_t>(t.n_elements()) * t.element_bytes == t.n_bytes());
    const auto span = f.tensor_bytes(t);
    for (uint8_t b : span) consume(b);
    Result<TensorView> v = f.view(t);
    if (v.ok()) {
      SAKER_FUZZ_CHECK(v->n_bytes() == t.n_bytes());
      SAKER_FUZZ_CHECK(v->data == data + t.file_offset);
      const auto* p = static_cast<const uint8_t*>(v->data);
      for (uint64_t k = 0; k < v->n_bytes(); ++k) consume(p[k]);
    } else {
      SAKER_FUZZ_CHECK(v.status().code() == StatusCode::kUnsupported);
    }
    if (t.n_bytes() > 0) ranges.emplace_back(t.begin, t.end);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); ++k) SAKER_FUZZ_CHECK(ranges[k - 1].second <= ranges[k].first);
  return 0;
}
