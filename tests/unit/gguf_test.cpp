// GGUF reader/writer: round trips through the writer, the real files in ../shared/data, and hostile files
// (each must come back as an error naming the problem and the byte offset, never a crash).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "formats/gguf.h"
#include "test_paths.h"

namespace saker {
namespace {

// ---- helpers -----------------------------------------------------------------------------------------------

// Raw little-endian bytes, for files the writer would refuse to produce.
struct Raw {
  std::vector<uint8_t> b;
  template <typename T>
  Raw& put(T x) {
    const auto* p = reinterpret_cast<const uint8_t*>(&x);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Raw& u8(uint8_t x) { return put(x); }
  Raw& u32(uint32_t x) { return put(x); }
  Raw& u64(uint64_t x) { return put(x); }
  Raw& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  // ne in ggml order (innermost first).
  Raw& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
  Raw& pad(size_t alignment = 32) {
    while (b.size() % alignment) b.push_back(0);
    return *this;
  }
  Raw& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

Result<GgufFile> parse(const std::vector<uint8_t>& bytes) { return GgufFile::parse({bytes.data(), bytes.size()}); }

// The parse fails with `code` and a message containing every fragment.
void expect_error(const std::vector<uint8_t>& bytes, StatusCode code, std::initializer_list<std::string> fragments) {
  const Result<GgufFile> r = parse(bytes);
  ASSERT_FALSE(r.ok()) << "parse unexpectedly succeeded";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (const auto& f : fragments) {
    EXPECT_NE(r.status().message().find(f), std::string::npos)
        << "message \"" << r.status().message() << "\" lacks \"" << f << "\"";
  }
}

std::vector<uint8_t> filled(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

GgufValue scalar(GgufType type, uint64_t u, int64_t i, double f) {
  GgufValue v;
  v.type = type;
  v.u = u;
  v.i = i;
  v.f = f;
  return v;
}

GgufValue array_of(GgufType elem_type) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.array = std::make_shared<GgufArray>();
  v.array->elem_type = elem_type;
  return v;
}

// A small valid file: metadata of several types and two tensors, the last ending exactly at the file's end.
std::vector<uint8_t> small_valid_file() {
  GgufWriter w;
  w.set("general.architecture", GgufValue::from_string("llama"));
  w.set("llama.block_count", GgufValue::from_u32(2));
  w.set("tokenizer.ggml.tokens", GgufValue::from_strings({"a", "bc", ""}));
  w.set("x.scores", GgufValue::from_f32s({0.5f, -1.0f}));
  static const std::vector<uint8_t> a = filled(4 * 6, 1);
  static const std::vector<uint8_t> b = filled(34 * 1, 2);
  EXPECT_TRUE(w.add_tensor("a", DType::kF32, {2, 3}, a).ok());
  EXPECT_TRUE(w.add_tensor("b", DType::kQ8_0, {1, 32}, b).ok());
  std::vector<uint8_t> bytes = w.to_bytes();
  // Drop the zero padding after the last tensor so that every shorter prefix is invalid.
  bytes.resize(bytes.size() - (64 - 34));
  return bytes;
}

// ---- round trips -------------------------------------------------------------------------------------------

TEST(GgufRoundTrip, EveryMetadataType) {
  GgufWriter w;
  w.set("u8", scalar(GgufType::kU8, 200, 0, 0));
  w.set("i8", scalar(GgufType::kI8, 0, -100, 0));
  w.set("u16", scalar(GgufType::kU16, 65535, 0, 0));
  w.set("i16", scalar(GgufType::kI16, 0, -32768, 0));
  w.set("u32", GgufValue::from_u32(4000000000u));
  w.set("i32", GgufValue::from_i32(-2000000000));
  w.set("f32", GgufValue::from_f32(1.5f));
  w.set("bool_t", GgufValue::from_bool(true));
  w.set("bool_f", GgufValue::from_bool(false));
  w.set("string", GgufValue::from_string(std::string("h\xC3\xA9llo\n\0x", 9)));
  w.set("empty_string", GgufValue::from_string(""));
  w.set("u64", GgufValue::from_u64(std::numeric_limits<uint64_t>::max()));
  w.set("i64", scalar(GgufType::kI64, 0, std::numeric_limits<int64_t>::min(), 0));
  w.set("f64", scalar(GgufType::kF64, 0, 0, 3.141592653589793));

  GgufValue u8s = array_of(GgufType::kU8);
  u8s.array->uints = {0, 1, 255};
  GgufValue i16s = array_of(GgufType::kI16);
  i16s.array->ints = {-32768, 0, 32767};
  GgufValue u64s = array_of(GgufType::kU64);
  u64s.array->uints = {std::numeric_limits<uint64_t>::max(), 7};
  GgufValue f64s = array_of(GgufType::kF64);
  f64s.array->floats = {1e300, -0.25};
  GgufValue bools = array_of(GgufType::kBool);
  bools.array->ints = {1, 0, 1};
  GgufValue empty = array_of(GgufType::kI64);
  w.set("arr.u8", u8s);
  w.set("arr.i16", i16s);
  w.set("arr.u64", u64s);
  w.set("arr.f64", f64s);
  w.set("arr.bool", bools);
  w.set("arr.empty", empty);
  w.set("arr.i32", GgufValue::from_i32s({-1, 2, -3}));
  w.set("arr.f32", GgufValue::from_f32s({0.5f, -2.0f}));
  w.set("arr.str", GgufValue::from_strings({"x", "", "yz"}));
  // Nested: [[1, 2], [], [3]] and [[["a"]]].
  GgufValue nested = array_of(GgufType::kArray);
  for (const auto& inner : std::vector<std::vector<int32_t>>{{1, 2}, {}, {3}}) {
    nested.array->arrays.push_back(GgufValue::from_i32s(inner));
  }
  w.set("arr.nested", nested);
  GgufValue deep = array_of(GgufType::kArray);
  GgufValue mid = array_of(GgufType::kArray);
  mid.array->arrays.push_back(GgufValue::from_strings({"a"}));
  deep.array->arrays.push_back(mid);
  w.set("arr.deep", deep);
  w.set("u32", GgufValue::from_u32(4000000001u));  // replaces in place

  const std::vector<uint8_t> bytes = w.to_bytes();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& g = *r;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.metadata().size(), 25u);
  EXPECT_EQ(g.metadata()[4].first, "u32");  // kept its first position
  EXPECT_TRUE(g.tensors().empty());

  EXPECT_EQ(g.find("u8")->type, GgufType::kU8);
  EXPECT_EQ(g.find("u8")->u, 200u);
  EXPECT_EQ(g.find("i8")->i, -100);
  EXPECT_EQ(g.find("u16")->u, 65535u);
  EXPECT_EQ(g.find("i16")->i, -32768);
  EXPECT_EQ(g.get_int("u32"), 4000000001);
  EXPECT_EQ(g.get_int("i32"), -2000000000);
  EXPECT_EQ(g.find("f32")->type, GgufType::kF32);
  EXPECT_EQ(g.get_float("f32"), 1.5);
  EXPECT_EQ(g.get_bool("bool_t"), true);
  EXPECT_EQ(g.get_bool("bool_f"), false);
  EXPECT_EQ(g.get_string("string"), std::string("h\xC3\xA9llo\n\0x", 9));
  EXPECT_EQ(g.get_string("empty_string"), "");
  EXPECT_EQ(g.find("u64")->u, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(g.get_int("u64").has_value());  // does not fit int64
  EXPECT_EQ(g.get_int("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(g.find("f64")->type, GgufType::kF64);
  EXPECT_EQ(g.get_float("f64"), 3.141592653589793);
  EXPECT_EQ(g.get_float("i32"), -2000000000.0);  // integers read as floats

  // Typed getters refuse other types.
  EXPECT_FALSE(g.get_string("u8").has_value());
  EXPECT_FALSE(g.get_int("string").has_value());
  EXPECT_FALSE(g.get_bool("u8").has_value());
  EXPECT_EQ(g.get_array("u8"), nullptr);
  EXPECT_EQ(g.find("absent"), nullptr);

  EXPECT_EQ(g.get_array("arr.u8")->elem_type, GgufType::kU8);
  EXPECT_EQ(g.get_array("arr.u8")->uints, (std::vector<uint64_t>{0, 1, 255}));
  EXPECT_EQ(g.get_array("arr.i16")->ints, (std::vector<int64_t>{-32768, 0, 32767}));
  EXPECT_EQ(g.get_array("arr.u64")->uints, u64s.array->uints);
  EXPECT_EQ(g.get_array("arr.f64")->floats, (std::vector<double>{1e300, -0.25}));
  EXPECT_EQ(g.get_array("arr.bool")->elem_type, GgufType::kBool);
  EXPECT_EQ(g.get_array("arr.bool")->ints, (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(g.get_array("arr.empty")->size(), 0u);
  EXPECT_EQ(g.get_array("arr.empty")->elem_type, GgufType::kI64);
  EXPECT_EQ(g.get_array("arr.i32")->ints, (std::vector<int64_t>{-1, 2, -3}));
  EXPECT_EQ(g.get_array("arr.f32")->floats, (std::vector<double>{0.5, -2.0}));
  EXPECT_EQ(g.get_array("arr.str")->strings, (std::vector<std::string>{"x", "", "yz"}));
  const GgufArray* n = g.get_array("arr.nested");
  ASSERT_EQ(n->elem_type, GgufType::kArray);
  ASSERT_EQ(n->size(), 3u);
  EXPECT_EQ(n->arrays[0].array->ints, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n->arrays[1].array->size(), 0u);
  EXPECT_EQ(n->arrays[2].array->ints, (std::vector<int64_t>{3}));
  const GgufArray* d = g.get_array("arr.deep");
  ASSERT_EQ(d->size(), 1u);
  ASSERT_EQ(d->arrays[0].array->size(), 1u);
  EXPECT_EQ(d->arrays[0].array->arrays[0].array->strings, (std::vector<std::string>{"a"}));

  // Display strings (saker info).
  EXPECT_EQ(g.find("bool_t")->to_display_string(), "true");
  EXPECT_EQ(g.find("i8")->to_display_string(), "-100");
  EXPECT_EQ(g.find("arr.i32")->to_display_string(), "i32[3] [-1, 2, -3]");
  EXPECT_EQ(g.find("arr.str")->to_display_string(), "string[3] [\"x\", \"\", \"yz\"]");
  EXPECT_EQ(g.find("arr.nested")->to_display_string(), "array[3] [i32[2] [1, 2], i32[0] [], i32[1] [3]]");

  // Writing the parsed metadata again gives the same bytes.
  GgufWriter again;
  for (const auto& [key, value] : g.metadata()) again.set(key, value);
  EXPECT_EQ(again.to_bytes(), bytes);
}

TEST(GgufRoundTrip, TensorsOfSeveralTypesAndShapes) {
  struct Spec {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;  // row-major
    size_t n_bytes;
  };
  const std::vector<Spec> specs = {
      {"f32.matrix", DType::kF32, {3, 5}, 3 * 5 * 4},
      {"f16.3d", DType::kF16, {2, 3, 4}, 2 * 3 * 4 * 2},
      {"bf16.4d", DType::kBF16, {2, 1, 3, 2}, 12 * 2},
      {"q8_0", DType::kQ8_0, {2, 64}, 2 * 2 * 34},
      {"q4_0", DType::kQ4_0, {3, 32}, 3 * 18},
      {"q4_K", DType::kQ4_K, {1, 256}, 144},
      {"q6_K", DType::kQ6_K, {2, 512}, 2 * 2 * 210},
      {"i32.vec", DType::kI32, {7}, 28},
      {"i8.empty", DType::kI8, {0, 5}, 0},
      {"f64.one", DType::kF64, {1}, 8},
  };
  std::vector<std::vector<uint8_t>> data;
  GgufWriter w;
  w.set("general.architecture", GgufValue::from_string("test"));
  for (size_t k = 0; k < specs.size(); ++k) data.push_back(filled(specs[k].n_bytes, static_cast<uint8_t>(k)));
  for (size_t k = 0; k < specs.size(); ++k) {
    ASSERT_TRUE(w.add_tensor(specs[k].name, specs[k].dtype, specs[k].shape, data[k]).ok()) << specs[k].name;
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& g = *r;
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.data_offset() % 32, 0u);
  ASSERT_EQ(g.tensors().size(), specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    const Spec& s = specs[k];
    SCOPED_TRACE(s.name);
    const GgufTensorInfo& info = g.tensors()[k];  // file order
    EXPECT_EQ(info.name, s.name);
    EXPECT_EQ(g.find_tensor(s.name), &info);
    EXPECT_EQ(info.dtype, s.dtype);
    EXPECT_EQ(info.shape(), s.shape);
    EXPECT_EQ(info.ne, std::vector<int64_t>(s.shape.rbegin(), s.shape.rend()));  // ggml order
    EXPECT_EQ(info.n_bytes, s.n_bytes);
    EXPECT_EQ(info.offset % 32, 0u);
    EXPECT_EQ(info.file_offset, g.data_offset() + info.offset);
    const auto span = g.tensor_bytes(info);
    EXPECT_EQ(span.data(), bytes.data() + info.file_offset);  // zero copy
    EXPECT_EQ(std::vector<uint8_t>(span.begin(), span.end()), data[k]);
    const TensorView v = g.view(info);
    EXPECT_EQ(v.data, bytes.data() + info.file_offset);
    EXPECT_EQ(v.dtype, s.dtype);
    ASSERT_EQ(v.n_dims, static_cast<int>(s.shape.size()));
    for (int d = 0; d < v.n_dims; ++d) EXPECT_EQ(v.shape[d], s.shape[d]);
    EXPECT_EQ(v.n_bytes(), s.n_bytes);
    EXPECT_TRUE(v.is_contiguous());
  }
  EXPECT_EQ(g.find_tensor("absent"), nullptr);
  // A value check through a typed view: f32.matrix[1][2].
  const TensorView m = g.view(*g.find_tensor("f32.matrix"));
  float x = 0;
  std::memcpy(&x, static_cast<const uint8_t*>(m.row(1)) + 2 * 4, 4);
  float expected = 0;
  std::memcpy(&expected, data[0].data() + (1 * 5 + 2) * 4, 4);
  EXPECT_EQ(std::memcmp(&x, &expected, 4), 0);
}

TEST(GgufRoundTrip, CustomAlignmentIsHonoured) {
  for (uint32_t alignment : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w;
    w.set("general.alignment", GgufValue::from_u32(alignment));
    const auto a = filled(12, 3), b = filled(4, 5);
    ASSERT_TRUE(w.add_tensor("a", DType::kF32, {3}, a).ok());
    ASSERT_TRUE(w.add_tensor("b", DType::kF16, {2}, b).ok());
    const auto bytes = w.to_bytes();
    auto r = parse(bytes);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->alignment(), alignment);
    EXPECT_EQ(r->data_offset() % alignment, 0u);
    for (const auto& t : r->tensors()) EXPECT_EQ(t.file_offset % alignment, 0u);
    EXPECT_EQ(r->find_tensor("b")->offset, (12 + alignment - 1) / alignment * alignment);
    EXPECT_EQ(bytes.size() % alignment, 0u);
    const auto span = r->tensor_bytes(*r->find_tensor("b"));
    EXPECT_EQ(std::vector<uint8_t>(span.begin(), span.end()), b);
  }
}

TEST(GgufRoundTrip, WriteAndOpenFromDisk) {
  const auto path = (testing::temp_dir() / "gguf_round_trip.gguf").string();
  GgufWriter w;
  w.set("general.name", GgufValue::from_string("disk"));
  std::vector<uint8_t> owned = filled(34 * 4, 9);
  const std::vector<uint8_t> copy = owned;
  ASSERT_TRUE(w.add_tensor_owned("q", DType::kQ8_0, {2, 64}, std::move(owned)).ok());
  ASSERT_TRUE(w.write(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->path(), path);
  EXPECT_EQ(r->get_string("general.name"), "disk");
  const auto span = r->tensor_bytes(*r->find_tensor("q"));
  EXPECT_EQ(std::vector<uint8_t>(span.begin(), span.end()), copy);

  // Errors from open() name the path.
  std::filesystem::resize_file(path, 100);
  auto bad = GgufFile::open(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruptFile);
  EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status().message();
  std::filesystem::remove(path);
  auto missing = GgufFile::open(path);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

TEST(GgufWriter, RejectsBadTensors) {
  GgufWriter w;
  const auto d = filled(16, 0);
  EXPECT_EQ(w.add_tensor("no_dims", DType::kF32, {}, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("five", DType::kF32, {1, 1, 1, 1, 4}, d).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("size", DType::kF32, {5}, d).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("block", DType::kQ8_0, {16}, d).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("negative", DType::kF32, {-1, 4}, d).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("overflow", DType::kF32, {1ll << 40, 1ll << 40, 4}, {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(w.add_tensor("ok", DType::kF32, {4}, d).ok());
  const Status dup = w.add_tensor("ok", DType::kF32, {4}, d);
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.message().find("duplicate"), std::string::npos);
}

// ---- real files --------------------------------------------------------------------------------------------

TEST(GgufRealFiles, QuantGoldenFiles) {
  SAKER_REQUIRE_SHARED(dir, "quant");
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    ++n_files;
    auto r = GgufFile::open(entry.path().string());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const GgufFile& g = *r;
    EXPECT_EQ(g.version(), 3u);
    EXPECT_EQ(g.data_offset() % g.alignment(), 0u);
    ASSERT_FALSE(g.tensors().empty());
    const bool deq = entry.path().string().find(".deq.") != std::string::npos;
    if (!deq) {
      EXPECT_EQ(g.architecture(), "qwen3");
      EXPECT_EQ(g.get_int("qwen3.embedding_length"), 256);
      EXPECT_EQ(g.get_int("qwen3.block_count"), 2);
      const GgufTensorInfo* embd = g.find_tensor("token_embd.weight");
      ASSERT_NE(embd, nullptr);
      EXPECT_EQ(embd->shape(), (std::vector<int64_t>{512, 256}));  // [n_vocab, n_embd]
      const GgufTensorInfo* q_norm = g.find_tensor("blk.0.attn_q_norm.weight");
      ASSERT_NE(q_norm, nullptr);
      EXPECT_EQ(q_norm->shape(), (std::vector<int64_t>{64}));
      EXPECT_EQ(q_norm->dtype, DType::kF32);
    } else {
      for (const auto& t : g.tensors()) {
        EXPECT_EQ(t.dtype, DType::kF32);
        EXPECT_TRUE(g.get_string("golden.type." + t.name).has_value()) << t.name;
      }
    }
    uint64_t end = 0;
    for (const auto& t : g.tensors()) {
      const TensorView v = g.view(t);
      EXPECT_EQ(v.n_bytes(), t.n_bytes) << t.name;
      EXPECT_EQ(t.file_offset % g.alignment(), 0u) << t.name;
      end = std::max(end, t.file_offset + t.n_bytes);
    }
    EXPECT_LE(end, std::filesystem::file_size(entry.path()));
  }
  EXPECT_GE(n_files, 7);
}

TEST(GgufRealFiles, VocabFiles) {
  SAKER_REQUIRE_SHARED(dir, "vocab");
  int n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    ++n_files;
    auto r = GgufFile::open(entry.path().string());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const GgufArray* tokens = r->get_array("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->elem_type, GgufType::kString);
    EXPECT_GT(tokens->size(), 1000u);
    const auto model = r->get_string("tokenizer.ggml.model");
    ASSERT_TRUE(model.has_value());
    EXPECT_TRUE(*model == "gpt2" || *model == "llama") << *model;
    if (const GgufArray* types = r->get_array("tokenizer.ggml.token_type")) {
      EXPECT_EQ(types->size(), tokens->size());
    }
  }
  EXPECT_GE(n_files, 5);
}

// ---- malformed files ---------------------------------------------------------------------------------------

TEST(GgufMalformed, BadMagic) {
  auto bytes = small_valid_file();
  bytes[0] = 'X';
  expect_error(bytes, StatusCode::kCorruptFile, {"magic", "byte 0"});
  expect_error({}, StatusCode::kCorruptFile, {"magic", "byte 0", "ends at byte 0"});
}

TEST(GgufMalformed, UnsupportedVersions) {
  for (uint32_t version : {0u, 1u, 4u, 99u}) {
    Raw r;
    r.header(0, 0, version);
    expect_error(r.b, StatusCode::kUnsupported, {"version " + std::to_string(version), "byte 4"});
  }
  Raw v2;
  v2.header(0, 0, 2);
  EXPECT_TRUE(parse(v2.b).ok());  // v2 has the same layout (64-bit counts)
}

TEST(GgufMalformed, TruncatedAtEveryByte) {
  const auto bytes = small_valid_file();
  ASSERT_TRUE(parse(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A copy of exactly n bytes so that ASan would catch a read past the end.
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    const auto r = parse(prefix);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kCorruptFile) << n << ": " << r.status().to_string();
    EXPECT_NE(r.status().message().find("byte"), std::string::npos) << r.status().message();
  }
}

TEST(GgufMalformed, EveryByteFlippedNeverCrashes) {
  const auto bytes = small_valid_file();
  size_t n_errors = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xFF}) {
      auto copy = bytes;
      copy[i] ^= x;
      const auto r = parse(copy);
      if (!r.ok()) {
        ++n_errors;
        EXPECT_FALSE(r.status().message().empty());
        continue;
      }
      for (const auto& t : r->tensors()) {  // whatever parsed must be in bounds
        EXPECT_LE(t.file_offset + t.n_bytes, copy.size());
      }
    }
  }
  EXPECT_GT(n_errors, 0u);
}

TEST(GgufMalformed, HugeCounts) {
  Raw kv;
  kv.header(0, 1ull << 62);
  expect_error(kv.b, StatusCode::kCorruptFile, {"metadata count", "byte 16"});
  Raw t;
  t.header(std::numeric_limits<uint64_t>::max(), 0);
  expect_error(t.b, StatusCode::kCorruptFile, {"tensor count", "byte 8"});
  Raw arr;
  arr.header(0, 1).str("k").u32(9).u32(4).u64(1ull << 61);
  expect_error(arr.b, StatusCode::kCorruptFile, {"array of", "runs past the end", "byte 41"});
  Raw nested;
  nested.header(0, 1).str("k").u32(9).u32(9).u64(1ull << 40);
  expect_error(nested.b, StatusCode::kCorruptFile, {"array of", "byte 41"});
}

// Counts that fit in a large file must not make the reader claim memory for them before the entries parse.
TEST(GgufMalformed, HugeCountsInAHugeFile) {
  constexpr size_t kSize = size_t{64} << 30;  // 64 GiB of zero pages, never touched
  void* p = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) GTEST_SKIP() << "cannot reserve 64 GiB of address space";
  auto* base = static_cast<uint8_t*>(p);
  auto check = [&](const Raw& header, std::initializer_list<std::string> fragments) {
    std::memcpy(base, header.b.data(), header.b.size());
    const auto r = GgufFile::parse({base, kSize});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kCorruptFile);
    for (const auto& f : fragments) EXPECT_NE(r.status().message().find(f), std::string::npos) << r.status().message();
  };
  Raw kv;
  kv.header(0, 4'000'000'000ull).str("k").u32(99);
  check(kv, {"unknown value type 99"});
  Raw tensors;
  tensors.header(2'000'000'000ull, 0).str("w").u32(0);
  check(tensors, {"0 dimensions"});
  Raw strings;
  strings.header(0, 1).str("k").u32(9).u32(8).u64(7'000'000'000ull).u64(1ull << 40);
  check(strings, {"array string", "limit"});
  Raw arrays;
  arrays.header(0, 1).str("k").u32(9).u32(9).u64(5'000'000'000ull).u32(77);
  check(arrays, {"unknown array element type 77"});
  ::munmap(p, kSize);
}

TEST(GgufMalformed, HugeStringLengths) {
  Raw key;
  key.header(0, 1).u64(1ull << 62).zeros(8);
  expect_error(key.b, StatusCode::kCorruptFile, {"metadata key", "byte 24", "limit"});
  Raw value;
  value.header(0, 1).str("k").u32(8).u64(1ull << 40);
  expect_error(value.b, StatusCode::kCorruptFile, {"string value", "byte 37", "limit"});
  Raw past_end;
  past_end.header(0, 1).str("k").u32(8).u64(100).zeros(10);
  expect_error(past_end.b, StatusCode::kCorruptFile, {"string value", "byte 45", "needs 100 bytes", "ends at byte 55"});
  Raw name;
  name.header(1, 0).u64(1ull << 50).zeros(40);
  expect_error(name.b, StatusCode::kCorruptFile, {"tensor name", "byte 24"});
}

TEST(GgufMalformed, UnknownValueTypes) {
  Raw r;
  r.header(0, 1).str("odd").u32(13).u32(0);
  expect_error(r.b, StatusCode::kCorruptFile, {"'odd'", "unknown value type 13", "byte 35"});
  Raw a;
  a.header(0, 1).str("odd").u32(9).u32(0xFFFFFFFF).u64(0);
  expect_error(a.b, StatusCode::kCorruptFile, {"unknown array element type 4294967295", "byte 39"});
}

TEST(GgufMalformed, UnknownTensorType) {
  for (uint32_t type : {4u, 5u, 31u, 40u, 1000u}) {
    Raw r;
    r.header(1, 0).tensor("w", {4}, type, 0).pad().zeros(64);
    // name (8 + 1) + n_dims 4 + dim 8 = 21 bytes after the 24-byte header: the type is at 45.
    expect_error(r.b, StatusCode::kCorruptFile,
                 {"'w'", "unknown ggml type " + std::to_string(type), "byte 45"});
  }
}

TEST(GgufMalformed, BadDimensionCounts) {
  Raw zero;
  zero.header(1, 0).str("w").u32(0).u32(0).u64(0).pad().zeros(32);
  expect_error(zero.b, StatusCode::kCorruptFile, {"'w'", "0 dimensions", "byte 33"});
  Raw five;
  five.header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad().zeros(32);
  expect_error(five.b, StatusCode::kCorruptFile, {"'w'", "5 dimensions", "byte 33"});
  Raw huge;
  huge.header(1, 0).str("w").u32(0xFFFFFFFF).zeros(40);
  expect_error(huge.b, StatusCode::kCorruptFile, {"4294967295 dimensions"});
}

TEST(GgufMalformed, DimensionsOverflow) {
  Raw product;
  product.header(1, 0).tensor("w", {1ull << 32, 1ull << 32}, 0, 0).pad().zeros(32);
  expect_error(product.b, StatusCode::kCorruptFile, {"'w'", "overflow", "byte 45"});
  Raw negative;
  negative.header(1, 0).tensor("w", {1ull << 63}, 0, 0).pad().zeros(32);
  expect_error(negative.b, StatusCode::kCorruptFile, {"'w'", "overflow", "byte 37"});
  Raw bytes;  // fits as elements, not as bytes of f32
  bytes.header(1, 0).tensor("w", {1ull << 61, 2}, 0, 0).pad().zeros(32);
  expect_error(bytes.b, StatusCode::kCorruptFile, {"'w'", "overflow"});
  Raw empty_but_huge;  // no elements, but the other dimensions multiply past int64 (found by fuzz_gguf)
  empty_but_huge.header(1, 0).tensor("w", {0, 1ull << 62, 1ull << 62}, 0, 0).pad().zeros(32);
  expect_error(empty_but_huge.b, StatusCode::kCorruptFile, {"'w'", "overflow", "byte 53"});
  Raw ragged;
  ragged.header(1, 0).tensor("w", {33, 2}, 8, 0).pad().zeros(128);  // q8_0 rows of 33
  expect_error(ragged.b, StatusCode::kCorruptFile, {"'w'", "whole number", "byte 24"});
}

TEST(GgufMalformed, MisalignedOffset) {
  Raw r;
  r.header(1, 0).tensor("w", {4}, 0, 4).pad().zeros(64);
  expect_error(r.b, StatusCode::kCorruptFile, {"'w'", "offset 4", "alignment 32", "byte 49"});
}

TEST(GgufMalformed, TensorPastEndOfFile) {
  Raw r;
  r.header(1, 0).tensor("w", {16}, 0, 32).pad().zeros(64);  // data [96, 160) in a 128-byte file
  expect_error(r.b, StatusCode::kCorruptFile, {"'w'", "[96, 160)", "past the end", "128 bytes"});
  Raw far;
  far.header(1, 0).tensor("w", {16}, 0, 1ull << 63).pad().zeros(64);
  expect_error(far.b, StatusCode::kCorruptFile, {"'w'", "past the end"});
  Raw no_data;  // the data section itself starts past the end
  no_data.header(1, 0).tensor("w", {1}, 0, 0);
  expect_error(no_data.b, StatusCode::kCorruptFile, {"data section", "past the end"});
}

TEST(GgufMalformed, OverlappingTensors) {
  Raw same;
  same.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(128);
  expect_error(same.b, StatusCode::kCorruptFile, {"'b'", "overlaps tensor 'a'"});
  Raw equal;
  equal.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).pad().zeros(64);
  expect_error(equal.b, StatusCode::kCorruptFile, {"overlaps"});
  // An empty tensor between two overlapping ones must not hide the overlap.
  Raw hidden;
  hidden.header(3, 0).tensor("a", {32}, 0, 0).tensor("e", {0}, 0, 64).tensor("c", {8}, 0, 96).pad().zeros(192);
  expect_error(hidden.b, StatusCode::kCorruptFile, {"'c'", "overlaps tensor 'a'"});
  // Adjacent tensors and empty tensors anywhere are fine.
  Raw ok;
  ok.header(3, 0).tensor("a", {8}, 0, 0).tensor("e", {0}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(64);
  EXPECT_TRUE(parse(ok.b).ok()) << parse(ok.b).status().to_string();
}

TEST(GgufMalformed, Duplicates) {
  Raw key;
  key.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
  expect_error(key.b, StatusCode::kCorruptFile, {"duplicate metadata key 'k'", "byte 41"});
  Raw tensor;
  tensor.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad().zeros(64);
  expect_error(tensor.b, StatusCode::kCorruptFile, {"duplicate tensor name 'w'", "byte 57"});
}

TEST(GgufMalformed, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u, 1u << 21}) {
    Raw r;
    r.header(0, 1).kv_u32("general.alignment", a);
    expect_error(r.b, StatusCode::kCorruptFile, {"general.alignment", "power of two", std::to_string(a)});
  }
  Raw wrong_type;
  wrong_type.header(0, 1).str("general.alignment").u32(10).u64(32);
  expect_error(wrong_type.b, StatusCode::kCorruptFile, {"general.alignment", "u64"});
}

TEST(GgufMalformed, NestingTooDeep) {
  auto nest = [](int depth) {
    Raw r;
    r.header(0, 1).str("deep");
    r.u32(9);  // array
    for (int k = 1; k < depth; ++k) r.u32(9).u64(1);  // element type array, one element
    r.u32(5).u64(1).u32(7);  // innermost: one i32
    return r.b;
  };
  EXPECT_TRUE(parse(nest(4)).ok()) << parse(nest(4)).status().to_string();
  expect_error(nest(5), StatusCode::kCorruptFile, {"'deep'", "nested deeper than 4"});
  expect_error(nest(10000), StatusCode::kCorruptFile, {"nested deeper"});
}

TEST(GgufMalformed, ErrorsNameTheMetadataKey) {
  Raw r;
  r.header(0, 2).kv_u32("fine", 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2).str("a").u64(9).zeros(3);
  expect_error(r.b, StatusCode::kCorruptFile, {"metadata 'tokenizer.ggml.tokens'", "array string", "needs 9 bytes"});
}

}  // namespace
}  // namespace saker
