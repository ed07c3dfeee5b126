// Fuzz target: GgufFile::parse on arbitrary bytes. Touches every metadata value and every tensor byte (so ASan
// sees any view out of bounds), and checks that whatever parses survives a writer -> reader round trip.
#include <cstdio>

#include "formats/gguf.h"
#include "fuzz_target.h"

namespace {

using namespace saker;
using saker::fuzz::consume;


void touch_value(const GgufValue& v) {
  consume(v.u + static_cast<uint64_t>(v.i) + v.str.size() + v.is_integer() + v.is_float());
  if (v.type == GgufType::kArray) {
    SAKER_FUZZ_CHECK(v.array != nullptr);
    const GgufArray& a = *v.array;
    consume(a.size() + a.uints.size() + a.ints.size() + a.floats.size() + a.strings.size());
    for (const auto& s : a.strings) consume(s.empty() ? 0 : static_cast<uint8_t>(s.back()));
    for (const auto& inner : a.arrays) touch_value(inner);
  }
}

void touch(const GgufFile& g, std::span<const uint8_t> bytes) {
  SAKER_FUZZ_CHECK(g.alignment() > 0 && (g.alignment() & (g.alignment() - 1)) == 0);
  SAKER_FUZZ_CHECK(g.data_offset() % g.alignment() == 0);
  for (const auto& [key, value] : g.metadata()) {
    SAKER_FUZZ_CHECK(g.find(key) == &value);
    touch_value(value);
    consume(value.to_display_string().size());
    consume(g.get_int(key).value_or(0) + g.get_string(key).value_or("").size());
    consume(static_cast<uint64_t>(g.get_float(key).value_or(0) != 0) + g.get_bool(key).value_or(false));
    consume(g.get_array(key) ? 1 : 0);
  }
  consume(g.architecture().size());
  for (const auto& t : g.tensors()) {
    SAKER_FUZZ_CHECK(g.find_tensor(t.name) == &t);
    SAKER_FUZZ_CHECK(t.file_offset == g.data_offset() + t.offset);
    SAKER_FUZZ_CHECK(t.file_offset % g.alignment() == 0);
    SAKER_FUZZ_CHECK(t.file_offset <= bytes.size() && t.n_bytes <= bytes.size() - t.file_offset);
    const auto span = g.tensor_bytes(t);
    SAKER_FUZZ_CHECK(span.size() == t.n_bytes);
    for (uint8_t b : span) consume(b);
    const TensorView v = g.view(t);
    SAKER_FUZZ_CHECK(v.n_bytes() == t.n_bytes);
    SAKER_FUZZ_CHECK(v.n_elements() == t.n_elements());
    consume(v.shape_string().size());
  }
}

// Rebuilds a file from what was parsed (the writer's output must parse back to the same metadata and tensors).
std::vector<uint8_t> rewrite(const GgufFile& g) {
  GgufWriter w;
  for (const auto& [key, value] : g.metadata()) w.set(key, value);
  for (const auto& t : g.tensors()) {
    if (!w.add_tensor(t.name, t.dtype, t.shape(), g.tensor_bytes(t)).ok()) return {};
  }
  return w.to_bytes();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  Result<GgufFile> parsed = GgufFile::parse(bytes);
  if (!parsed.ok()) {
    SAKER_FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  touch(*parsed, bytes);

  // The writer pads every tensor to the alignment: skip round trips that would allocate much more than the input.
  if (parsed->tensors().size() * uint64_t{parsed->alignment()} > (16u << 20)) return 0;
  const std::vector<uint8_t> once = rewrite(*parsed);
  if (once.empty()) return 0;
  Result<GgufFile> again = GgufFile::parse({once.data(), once.size()});
  if (!again.ok()) {
    std::fprintf(stderr, "rewritten file does not parse: %s\n", again.status().to_string().c_str());
    saker::fuzz::invariant_failed("writer output parses");
  }
  touch(*again, {once.data(), once.size()});
  SAKER_FUZZ_CHECK(again->metadata().size() == parsed->metadata().size());
  SAKER_FUZZ_CHECK(again->tensors().size() == parsed->tensors().size());
  for (size_t k = 0; k < parsed->tensors().size(); ++k) {
    const auto a = parsed->tensor_bytes(parsed->tensors()[k]);
    const auto b = again->tensor_bytes(again->tensors()[k]);
    SAKER_FUZZ_CHECK(a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin()));
    SAKER_FUZZ_CHECK(parsed->tensors()[k].ne == again->tensors()[k].ne);
  }
  SAKER_FUZZ_CHECK(rewrite(*again) == once);  // the writer is a fixed point after one pass
  return 0;
}
