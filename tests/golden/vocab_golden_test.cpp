// llama.cpp's tokenizer test vectors (../shared/data/vocab): every ggml-vocab-NAME.gguf must turn each test
// string of NAME.gguf.inp into exactly the ids on the matching line of NAME.gguf.out (no BOS, special tokens
// not parsed: the reference ran with add_special = false, parse_special = false).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "test_paths.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace saker::text {
namespace {

// The .inp file is "case\n__ggml_vocab_test__\ncase\n__ggml_vocab_test__\n": every case, the last one
// included, is followed by the separator.
std::vector<std::string> split_cases(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t begin = 0;
  for (size_t pos; (pos = text.find(sep, begin)) != std::string::npos; begin = pos + sep.size()) {
    cases.push_back(text.substr(begin, pos - begin));
  }
  if (begin < text.size()) cases.push_back(text.substr(begin));  // tolerate a missing final separator
  return cases;
}

std::vector<std::vector<int32_t>> read_expected(const std::filesystem::path& path) {
  std::vector<std::vector<int32_t>> lines;
  std::ifstream in(path, std::ios::binary);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    std::vector<int32_t> ids;
    for (int32_t id; ss >> id;) ids.push_back(id);
    lines.push_back(std::move(ids));
  }
  return lines;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::vector<std::filesystem::path> vocab_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("ggml-vocab-") && name.ends_with(".gguf")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(VocabGolden, EveryFileReproducesItsOutput) {
  SAKER_REQUIRE_SHARED(dir, "vocab");
  const auto files = vocab_files(dir);
  ASSERT_FALSE(files.empty()) << "no ggml-vocab-*.gguf in " << dir;
  size_t n_cases = 0;
  for (const auto& gguf_path : files) {
    SCOPED_TRACE(gguf_path.filename().string());
    const auto inp = std::filesystem::path(gguf_path.string() + ".inp");
    const auto out = std::filesystem::path(gguf_path.string() + ".out");
    if (!std::filesystem::exists(inp) || !std::filesystem::exists(out)) continue;

    auto file = GgufFile::open(gguf_path.string());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto tokenizer = Tokenizer::from_gguf(*file);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
    const Tokenizer& tok = **tokenizer;

    const auto cases = split_cases(testing::read_file(inp));
    const auto expected = read_expected(out);
    ASSERT_EQ(cases.size(), expected.size()) << "test strings and expected lines differ in number";
    size_t mismatches = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::vector<int32_t> ids = tok.encode(cases[i], /*add_special=*/false, /*parse_special=*/false);
      if (ids != expected[i]) ++mismatches;
      EXPECT_EQ(ids, expected[i]) << gguf_path.filename().string() << " case " << i << " \"" << escaped(cases[i])
                                  << "\"\n  got:      " << fmt::format("{}", fmt::join(ids, " "))
                                  << "\n  expected: " << fmt::format("{}", fmt::join(expected[i], " "));
      // Byte-level BPE and SentencePiece with byte fallback are lossless.
      EXPECT_EQ(tok.decode(expected[i]), cases[i]) << "decode, case " << i << " \"" << escaped(cases[i]) << "\"";
    }
    n_cases += cases.size();
    std::cout << "[          ] " << gguf_path.filename().string() << " (" << tok.pretokenizer_name() << "): "
              << cases.size() - mismatches << "/" << cases.size() << " cases match\n";
  }
  EXPECT_GT(n_cases, 0u);
}

// Streaming the expected ids one at a time gives back every test string (they are all valid UTF-8), and
// each chunk is valid UTF-8 on its own even where a character is split over several tokens.
TEST(VocabGolden, StreamingDetokenizerReassemblesEveryCase) {
  SAKER_REQUIRE_SHARED(dir, "vocab");
  for (const auto& gguf_path : vocab_files(dir)) {
    const auto inp = std::filesystem::path(gguf_path.string() + ".inp");
    const auto out = std::filesystem::path(gguf_path.string() + ".out");
    if (!std::filesystem::exists(inp) || !std::filesystem::exists(out)) continue;
    auto file = GgufFile::open(gguf_path.string());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto tokenizer = Tokenizer::from_gguf(*file);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
    const auto cases = split_cases(testing::read_file(inp));
    const auto expected = read_expected(out);
    ASSERT_EQ(cases.size(), expected.size());
    IncrementalDetokenizer detok(**tokenizer);
    for (size_t i = 0; i < cases.size(); ++i) {
      detok.reset();
      std::string text;
      for (int32_t id : expected[i]) {
        const std::string chunk = detok.push(id);
        EXPECT_TRUE(utf8_is_valid(chunk)) << gguf_path.filename().string() << " case " << i;
        text += chunk;
      }
      text += detok.flush();
      EXPECT_EQ(text, cases[i]) << gguf_path.filename().string() << " case " << i << " \"" << escaped(cases[i]) << "\"";
    }
  }
}

}  // namespace
}  // namespace saker::text
