// safetensors reader: hand-written files (valid, truncated, corrupted, hostile) and model folders with and
// without model.safetensors.index.json.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "test_paths.h"

namespace saker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// u64 N + header + data. `n` overrides the length field.
std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& data,
                               std::optional<uint64_t> n = std::nullopt) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  const uint64_t len = n.value_or(header.size());
  std::memcpy(out.data(), &len, 8);
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return out;
}

// Like the reference writer: the header is padded with spaces so that the data starts 8-byte aligned.
std::string padded_header(const json& header) {
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

std::vector<uint8_t> make_file_json(const json& header, const std::vector<uint8_t>& data) {
  return make_file(padded_header(header), data);
}

json entry(const std::string& dtype, std::vector<int64_t> shape, uint64_t begin, uint64_t end) {
  return json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
}

std::vector<uint8_t> filled(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 3 * i);
  return v;
}

Result<SafetensorsFile> parse(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::parse({bytes.data(), bytes.size()});
}

void expect_error(const std::vector<uint8_t>& bytes, StatusCode code, std::initializer_list<std::string> fragments) {
  const auto r = parse(bytes);
  ASSERT_FALSE(r.ok()) << "parse unexpectedly succeeded";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (const auto& f : fragments) {
    EXPECT_NE(r.status().message().find(f), std::string::npos)
        << "message \"" << r.status().message() << "\" lacks \"" << f << "\"";
  }
}

// A valid file with several dtypes; the data ends exactly at the file's end.
std::vector<uint8_t> valid_file() {
  json h;
  h["__metadata__"] = {{"format", "pt"}};
  h["w.f32"] = entry("F32", {2, 3}, 0, 24);
  h["w.bf16"] = entry("BF16", {4}, 24, 32);
  h["s.i64"] = entry("I64", {}, 32, 40);
  h["m.u8"] = entry("U8", {5}, 40, 45);
  h["f8"] = entry("F8_E4M3", {2, 2}, 45, 49);
  h["empty"] = entry("F16", {0, 3}, 49, 49);
  return make_file_json(h, filled(49, 1));
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = testing::temp_dir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// ---- valid files -------------------------------------------------------------------------------------------

TEST(Safetensors, ParsesTensorsMetadataAndViews) {
  const auto bytes = valid_file();
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsFile& f = *r;
  const uint64_t data_start = f.data_offset();
  EXPECT_EQ(data_start, 8 + f.header_bytes());
  EXPECT_EQ(f.file_bytes(), bytes.size());
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), 6u);
  // Ordered by data offset (ties by name).
  std::vector<std::string> order;
  for (const auto& t : f.tensors()) order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{"w.f32", "w.bf16", "s.i64", "m.u8", "f8", "empty"}));

  const SafetensorsTensorInfo* w = f.find_tensor("w.f32");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype_name, "F32");
  EXPECT_EQ(w->dtype, DType::kF32);
  EXPECT_EQ(w->element_bytes, 4u);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->n_elements(), 6);
  EXPECT_EQ(w->n_bytes(), 24u);
  EXPECT_EQ(w->file_offset, data_start);
  auto v = f.view(*w);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->data, bytes.data() + data_start);  // zero copy
  EXPECT_EQ(v->n_dims, 2);
  EXPECT_EQ(v->shape[0], 2);
  EXPECT_EQ(v->shape[1], 3);
  EXPECT_EQ(v->stride_bytes[0], 12);
  EXPECT_EQ(v->n_bytes(), 24u);

  auto bf = f.view(*f.find_tensor("w.bf16"));
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(bf->dtype, DType::kBF16);
  EXPECT_EQ(bf->data, bytes.data() + data_start + 24);

  auto scalar = f.view(*f.find_tensor("s.i64"));
  ASSERT_TRUE(scalar.ok()) << scalar.status().to_string();
  EXPECT_EQ(scalar->n_dims, 0);
  EXPECT_EQ(scalar->n_elements(), 1);
  EXPECT_EQ(scalar->dtype, DType::kI64);

  auto empty = f.view(*f.find_tensor("empty"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->n_elements(), 0);

  // Recognised dtypes without a saker DType: the bytes are there, a view is refused clearly.
  for (const char* name : {"m.u8", "f8"}) {
    const SafetensorsTensorInfo* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr);
    EXPECT_FALSE(t->dtype.has_value());
    const auto span = f.tensor_bytes(*t);
    EXPECT_EQ(span.data(), bytes.data() + t->file_offset);
    EXPECT_EQ(span.size(), t->n_bytes());
    auto bad = f.view(*t);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(bad.status().message().find(t->dtype_name), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(name), std::string::npos);
  }
  EXPECT_EQ(f.find_tensor("absent"), nullptr);
}

TEST(Safetensors, DTypeTable) {
  const std::vector<std::tuple<std::string, uint32_t, std::optional<DType>>> expected = {
      {"F64", 8, DType::kF64},  {"F32", 4, DType::kF32},   {"F16", 2, DType::kF16},     {"BF16", 2, DType::kBF16},
      {"I64", 8, DType::kI64},  {"I32", 4, DType::kI32},   {"I16", 2, DType::kI16},     {"I8", 1, DType::kI8},
      {"U8", 1, std::nullopt},  {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
      {"U16", 2, std::nullopt}, {"U32", 4, std::nullopt},  {"U64", 8, std::nullopt},
  };
  for (const auto& [name, size, dtype] : expected) {
    const auto info = safetensors_dtype(name);
    ASSERT_TRUE(info.has_value()) << name;
    EXPECT_EQ(info->element_bytes, size) << name;
    EXPECT_EQ(info->dtype, dtype) << name;
  }
  EXPECT_FALSE(safetensors_dtype("f32").has_value());  // names are case-sensitive in the spec
  EXPECT_FALSE(safetensors_dtype("Q4_0").has_value());
}

TEST(Safetensors, HeaderPaddingEmptyHeaderAndMoreThanFourDims) {
  // The Python writer pads the header with spaces to a multiple of 8.
  std::string header = json{{"a", entry("F32", {1}, 0, 4)}}.dump();
  header.append(8 - header.size() % 8, ' ');
  auto padded = parse(make_file(header, filled(4, 0)));
  ASSERT_TRUE(padded.ok()) << padded.status().to_string();
  EXPECT_EQ(padded->header_bytes() % 8, 0u);

  auto no_tensors = parse(make_file("{}", {}));
  ASSERT_TRUE(no_tensors.ok()) << no_tensors.status().to_string();
  EXPECT_TRUE(no_tensors->tensors().empty());
  EXPECT_TRUE(no_tensors->metadata().empty());

  auto five = parse(make_file_json(json{{"c", entry("F16", {1, 2, 1, 2, 1}, 0, 8)}}, filled(8, 0)));
  ASSERT_TRUE(five.ok()) << five.status().to_string();
  auto v = five->view(five->tensors()[0]);
  EXPECT_EQ(v.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(v.status().message().find("5 dimensions"), std::string::npos) << v.status().message();
}

TEST(Safetensors, MisalignedDataIsNotViewed) {
  std::string header = json{{"b", entry("U8", {1}, 0, 1)}, {"f", entry("F32", {1}, 1, 5)}}.dump();
  header.append(8 - header.size() % 8, ' ');
  std::vector<uint8_t> bytes = make_file(header, filled(5, 0));
  // Keep the data 8-aligned in memory: a vector's buffer is, and 8 + N is a multiple of 8.
  ASSERT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % 8, 0u);
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto v = r->view(*r->find_tensor("f"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(v.status().message().find("aligned"), std::string::npos) << v.status().message();
  EXPECT_EQ(r->tensor_bytes(*r->find_tensor("f")).size(), 4u);
}

TEST(Safetensors, OpenFromDisk) {
  const fs::path dir = fresh_dir("st_open");
  const fs::path path = dir / "x.safetensors";
  write_bytes(path, valid_file());
  auto r = SafetensorsFile::open(path.string());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->path(), path.string());
  EXPECT_EQ(r->tensors().size(), 6u);
  auto v = r->view(*r->find_tensor("w.f32"));
  ASSERT_TRUE(v.ok());
  float x = 0;
  std::memcpy(&x, v->data, 4);
  float expected = 0;
  const auto data = filled(4, 1);
  std::memcpy(&expected, data.data(), 4);
  EXPECT_EQ(std::memcmp(&x, &expected, 4), 0);

  write_bytes(path, std::vector<uint8_t>(5, 0));
  auto bad = SafetensorsFile::open(path.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruptFile);
  EXPECT_NE(bad.status().message().find(path.string()), std::string::npos) << bad.status().message();
  EXPECT_EQ(SafetensorsFile::open((dir / "none.safetensors").string()).status().code(), StatusCode::kNotFound);
}

// ---- malformed files ---------------------------------------------------------------------------------------

TEST(SafetensorsMalformed, HeaderLength) {
  expect_error({}, StatusCode::kCorruptFile, {"header length", "byte 0"});
  expect_error({1, 0, 0}, StatusCode::kCorruptFile, {"header length", "ends at byte 3"});
  expect_error(make_file("{}", {}, 200'000'000), StatusCode::kCorruptFile, {"over the limit", "byte 0"});
  expect_error(make_file("{}", {}, 3), StatusCode::kCorruptFile, {"header length 3", "past the end", "10 bytes"});
  expect_error(make_file("{}", {}, std::numeric_limits<uint64_t>::max()), StatusCode::kCorruptFile, {"over the limit"});
  expect_error(make_file("", {}), StatusCode::kCorruptFile, {"not a JSON object", "byte 8"});
  expect_error(make_file(" {}", {}), StatusCode::kCorruptFile, {"not a JSON object", "byte 8"});
  expect_error(make_file("[1, 2]", {}), StatusCode::kCorruptFile, {"not a JSON object", "byte 8"});
}

TEST(SafetensorsMalformed, InvalidJsonNamesTheByte) {
  // The bad character 'x' is at header index 6: file byte 14.
  expect_error(make_file("{\"a\": x}", {}), StatusCode::kCorruptFile, {"invalid JSON at byte 14"});
  expect_error(make_file("{\"a\": 1", {}), StatusCode::kCorruptFile, {"invalid JSON at byte"});
  expect_error(make_file("{\"a\": \"\xFF\"}", {}), StatusCode::kCorruptFile, {"invalid JSON"});  // bad UTF-8
  // nlohmann reports the character where the token went wrong: the 'a' of "tra" (header index 5).
  expect_error(make_file("{} trailing", {}), StatusCode::kCorruptFile, {"invalid JSON at byte 13"});
  const std::string deep = "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(make_file(deep, {}), StatusCode::kCorruptFile, {"nested deeper than 16", "byte 29"});
  // Brackets inside strings do not count as nesting.
  const std::string in_string = "{\"__metadata__\": {\"k\": \"" + std::string(1000, '[') + "\\\"\"}}";
  EXPECT_TRUE(parse(make_file(in_string, {})).ok()) << parse(make_file(in_string, {})).status().to_string();
}

TEST(SafetensorsMalformed, EntryTypes) {
  expect_error(make_file_json(json{{"w", 5}}, {}), StatusCode::kCorruptFile, {"tensor 'w'", "expected an object", "header"});
  json e = entry("F32", {1}, 0, 4);
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    json missing = e;
    missing.erase(field);
    expect_error(make_file_json(json{{"w", missing}}, filled(4, 0)), StatusCode::kCorruptFile,
                 {"tensor 'w'", std::string("no \"") + field + "\""});
  }
  json d = e;
  d["dtype"] = 1;
  expect_error(make_file_json(json{{"w", d}}, filled(4, 0)), StatusCode::kCorruptFile, {"tensor 'w'", "\"dtype\" is number"});
  d["dtype"] = "F4X";
  expect_error(make_file_json(json{{"w", d}}, filled(4, 0)), StatusCode::kUnsupported, {"tensor 'w'", "unknown dtype \"F4X\""});

  json s = e;
  s["shape"] = "1";
  expect_error(make_file_json(json{{"w", s}}, filled(4, 0)), StatusCode::kCorruptFile, {"\"shape\" is string"});
  for (const json& dim : {json(-1), json(1.5), json("1"), json(nullptr), json(18446744073709551615ull), json(1e30)}) {
    s["shape"] = json::array({dim});
    expect_error(make_file_json(json{{"w", s}}, filled(4, 0)), StatusCode::kCorruptFile, {"tensor 'w'", "shape entry"});
  }
  s["shape"] = {1ll << 40, 1ll << 40};
  expect_error(make_file_json(json{{"w", s}}, filled(4, 0)), StatusCode::kCorruptFile, {"tensor 'w'", "overflows"});
  s["shape"] = {0, 1ll << 40, 1ll << 40};  // no elements, but the other dimensions multiply past int64
  s["data_offsets"] = {0, 0};
  expect_error(make_file_json(json{{"w", s}}, {}), StatusCode::kCorruptFile, {"tensor 'w'", "overflows"});

  json o = e;
  for (const json& offsets : {json("0,4"), json({0}), json({0, 4, 8}), json({-1, 4}), json({0, "4"}), json({0.0, 4})}) {
    o["data_offsets"] = offsets;
    expect_error(make_file_json(json{{"w", o}}, filled(4, 0)), StatusCode::kCorruptFile, {"tensor 'w'", "data_offsets"});
  }
}

TEST(SafetensorsMalformed, OffsetsAndSizes) {
  auto with = [](const json& e, size_t n_data) { return make_file_json(json{{"w", e}}, filled(n_data, 0)); };
  auto data_start = [](const json& e) { return 8 + padded_header(json{{"w", e}}).size(); };

  const json reversed = entry("F32", {1}, 8, 4);
  expect_error(with(reversed, 8), StatusCode::kCorruptFile,
               {"tensor 'w'", "end before they begin", "byte " + std::to_string(data_start(reversed) + 8)});
  const json past = entry("F32", {4}, 0, 16);
  expect_error(with(past, 12), StatusCode::kCorruptFile,
               {"tensor 'w'", "past the end", "byte " + std::to_string(data_start(past) + 12)});
  const json far = entry("F32", {1}, std::numeric_limits<int64_t>::max() - 4, std::numeric_limits<int64_t>::max());
  expect_error(with(far, 4), StatusCode::kCorruptFile, {"tensor 'w'", "past the end"});
  const json wrong_size = entry("F32", {2, 3}, 0, 20);
  expect_error(with(wrong_size, 20), StatusCode::kCorruptFile,
               {"tensor 'w'", "20 bytes", "byte " + std::to_string(data_start(wrong_size)), "6 elements x 4 bytes"});
  const json overflow = entry("F64", {1ll << 60, 4}, 0, 8);  // 2^62 elements fit, their bytes do not
  expect_error(with(overflow, 8), StatusCode::kCorruptFile, {"tensor 'w'", "needs"});
}

TEST(SafetensorsMalformed, Overlaps) {
  json h;
  h["a"] = entry("F32", {4}, 0, 16);
  h["b"] = entry("F32", {4}, 8, 24);
  expect_error(make_file_json(h, filled(24, 0)), StatusCode::kCorruptFile, {"tensor 'b'", "overlaps tensor 'a'"});
  json hidden;  // an empty tensor between two overlapping ones must not hide the overlap
  hidden["a"] = entry("F32", {8}, 0, 32);
  hidden["e"] = entry("F32", {0}, 8, 8);
  hidden["c"] = entry("F32", {2}, 16, 24);
  expect_error(make_file_json(hidden, filled(32, 0)), StatusCode::kCorruptFile, {"tensor 'c'", "overlaps tensor 'a'"});
  json same;
  same["a"] = entry("F32", {1}, 0, 4);
  same["b"] = entry("I32", {1}, 0, 4);
  expect_error(make_file_json(same, filled(4, 0)), StatusCode::kCorruptFile, {"overlaps"});
}

TEST(SafetensorsMalformed, DuplicateNamesAndMetadata) {
  const std::string dup = "{\"w\": " + entry("F32", {1}, 0, 4).dump() + ", \"w\": " + entry("F32", {1}, 4, 8).dump() + "}";
  expect_error(make_file(dup, filled(8, 0)), StatusCode::kCorruptFile, {"\"w\"", "twice"});
  expect_error(make_file_json(json{{"__metadata__", {1, 2}}}, {}), StatusCode::kCorruptFile, {"__metadata__", "array"});
  expect_error(make_file_json(json{{"__metadata__", {{"k", 1}}}}, {}), StatusCode::kCorruptFile,
               {"__metadata__ \"k\"", "expected a string"});
}

TEST(SafetensorsMalformed, TruncatedAtEveryByte) {
  const auto bytes = valid_file();
  ASSERT_TRUE(parse(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    const auto r = parse(prefix);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kCorruptFile) << r.status().to_string();
    EXPECT_NE(r.status().message().find("byte"), std::string::npos) << r.status().message();
  }
}

TEST(SafetensorsMalformed, EveryByteFlippedNeverCrashes) {
  const auto bytes = valid_file();
  size_t n_errors = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t x : {0x01, 0x20, 0x80, 0xFF}) {
      auto copy = bytes;
      copy[i] ^= x;
      const auto r = parse(copy);
      if (!r.ok()) {
        ++n_errors;
        continue;
      }
      for (const auto& t : r->tensors()) {
        EXPECT_LE(t.file_offset + t.n_bytes(), copy.size());
        (void)r->view(t);
      }
    }
  }
  EXPECT_GT(n_errors, 0u);
}

// ---- model folders -----------------------------------------------------------------------------------------

TEST(SafetensorsModel, SingleFile) {
  const fs::path dir = fresh_dir("st_single");
  write_bytes(dir / "model.safetensors", valid_file());
  write_bytes(dir / "other.safetensors", std::vector<uint8_t>(3, 0));  // ignored: model.safetensors wins
  auto m = SafetensorsModel::open(dir.string());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->files().size(), 1u);
  EXPECT_EQ(m->n_tensors(), 6u);
  EXPECT_TRUE(m->index_metadata().is_null());
  EXPECT_EQ(m->tensor_names().front(), "empty");  // sorted
  ASSERT_NE(m->find_tensor("w.f32"), nullptr);
  EXPECT_EQ(m->file_of("w.f32"), &m->files()[0]);
  auto v = m->view("w.f32");
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->shape[1], 3);
  auto missing = m->view("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);
  auto f8 = m->view("f8");
  EXPECT_EQ(f8.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(f8.status().message().find("model.safetensors"), std::string::npos) << f8.status().message();

  // A file path works too, and copies of a model stay valid.
  auto by_file = SafetensorsModel::open((dir / "model.safetensors").string());
  ASSERT_TRUE(by_file.ok()) << by_file.status().to_string();
  const SafetensorsModel copy = *by_file;
  EXPECT_EQ(copy.find_tensor("w.bf16")->n_bytes(), 8u);
}

// Two shards and an index, as transformers writes them.
fs::path sharded_folder(const std::string& name) {
  const fs::path dir = fresh_dir(name);
  json a;
  a["__metadata__"] = {{"format", "pt"}};
  a["embed"] = entry("BF16", {4, 2}, 0, 16);
  a["layer.0"] = entry("F32", {2}, 16, 24);
  json b;
  b["layer.1"] = entry("F32", {2}, 0, 8);
  b["head"] = entry("F16", {2, 4}, 8, 24);
  write_bytes(dir / "model-00001-of-00002.safetensors", make_file_json(a, filled(24, 1)));
  write_bytes(dir / "model-00002-of-00002.safetensors", make_file_json(b, filled(24, 2)));
  json index;
  index["metadata"] = {{"total_size", 48}};
  index["weight_map"] = {{"embed", "model-00001-of-00002.safetensors"},
                         {"layer.0", "model-00001-of-00002.safetensors"},
                         {"layer.1", "model-00002-of-00002.safetensors"},
                         {"head", "model-00002-of-00002.safetensors"}};
  write_text(dir / "model.safetensors.index.json", index.dump(2));
  return dir;
}

TEST(SafetensorsModel, ShardedWithIndex) {
  const fs::path dir = sharded_folder("st_sharded");
  auto m = SafetensorsModel::open(dir.string());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->files().size(), 2u);
  EXPECT_EQ(m->n_tensors(), 4u);
  EXPECT_EQ(m->index_metadata()["total_size"], 48);
  EXPECT_EQ(m->tensor_names(), (std::vector<std::string>{"embed", "head", "layer.0", "layer.1"}));
  EXPECT_NE(m->file_of("head")->path().find("model-00002-of-00002"), std::string::npos);
  EXPECT_NE(m->file_of("embed")->path().find("model-00001-of-00002"), std::string::npos);
  auto head = m->view("head");
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  EXPECT_EQ(head->dtype, DType::kF16);
  EXPECT_EQ(head->shape[0], 2);
  EXPECT_EQ(m->find_tensor("layer.1")->file_offset, m->file_of("layer.1")->data_offset());

  auto by_index = SafetensorsModel::open((dir / "model.safetensors.index.json").string());
  ASSERT_TRUE(by_index.ok()) << by_index.status().to_string();
  EXPECT_EQ(by_index->n_tensors(), 4u);
}

TEST(SafetensorsModel, IndexProblems) {
  const fs::path dir = sharded_folder("st_index_bad");
  const fs::path index = dir / "model.safetensors.index.json";
  auto open_with = [&](const json& j) {
    write_text(index, j.dump());
    return SafetensorsModel::open(dir.string());
  };
  auto expect = [](const Result<SafetensorsModel>& r, StatusCode code, std::initializer_list<std::string> fragments) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
    for (const auto& f : fragments) {
      EXPECT_NE(r.status().message().find(f), std::string::npos) << r.status().message() << " lacks " << f;
    }
  };
  expect(open_with(json{{"weight_map", {{"embed", "model-00003-of-00002.safetensors"}}}}), StatusCode::kNotFound,
         {"model-00003-of-00002.safetensors", "'embed'"});
  expect(open_with(json{{"weight_map", {{"ghost", "model-00001-of-00002.safetensors"}}}}), StatusCode::kCorruptFile,
         {"'ghost'", "no such tensor"});
  expect(open_with(json{{"weight_map", {{"embed", "../model-00001-of-00002.safetensors"}}}}), StatusCode::kCorruptFile,
         {"not a file name inside the folder"});
  expect(open_with(json{{"weight_map", {{"embed", "/etc/passwd"}}}}), StatusCode::kCorruptFile, {"inside the folder"});
  expect(open_with(json{{"weight_map", {{"embed", 3}}}}), StatusCode::kCorruptFile, {"weight_map[\"embed\"]"});
  expect(open_with(json{{"metadata", {}}}), StatusCode::kCorruptFile, {"weight_map"});
  expect(open_with(json{{"weight_map", {}}, {"metadata", 1}}), StatusCode::kCorruptFile, {"\"metadata\""});
  expect(open_with(json::array()), StatusCode::kCorruptFile, {"expected a JSON object"});
  write_text(index, "{\"weight_map\": {");
  expect(SafetensorsModel::open(dir.string()), StatusCode::kCorruptFile, {"invalid JSON at byte"});
  // A corrupt shard: the error names the shard and the index.
  write_text(index, json{{"weight_map", {{"embed", "model-00001-of-00002.safetensors"}}}}.dump());
  write_bytes(dir / "model-00001-of-00002.safetensors", std::vector<uint8_t>(4, 0));
  expect(SafetensorsModel::open(dir.string()), StatusCode::kCorruptFile, {"model-00001-of-00002.safetensors", "header length"});
}

TEST(SafetensorsModel, FolderWithoutIndex) {
  const fs::path dir = sharded_folder("st_no_index");
  fs::remove(dir / "model.safetensors.index.json");
  auto m = SafetensorsModel::open(dir.string());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->files().size(), 2u);
  EXPECT_EQ(m->n_tensors(), 4u);
  EXPECT_NE(m->file_of("layer.1")->path().find("00002"), std::string::npos);

  // The same tensor in two files is an error naming both.
  write_bytes(dir / "extra.safetensors", make_file_json(json{{"head", entry("F32", {1}, 0, 4)}}, filled(4, 0)));
  auto dup = SafetensorsModel::open(dir.string());
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kCorruptFile);
  EXPECT_NE(dup.status().message().find("'head'"), std::string::npos) << dup.status().message();
  EXPECT_NE(dup.status().message().find("extra.safetensors"), std::string::npos);

  const fs::path empty = fresh_dir("st_empty");
  auto none = SafetensorsModel::open(empty.string());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("safetensors"), std::string::npos);
  EXPECT_EQ(SafetensorsModel::open((empty / "absent").string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace saker
