// Loading tokenizers from Hugging Face tokenizer.json / tokenizer_config.json folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_paths.h"
#include "text/hf_tokenizer.h"
#include "text/tokenizer.h"
#include "text_test_vocabs.h"

namespace saker::text {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

std::filesystem::path write_folder(const std::string& name, const json& tokenizer, const json* config) {
  const auto dir = saker::testing::temp_dir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
  if (config != nullptr) std::ofstream(dir / "tokenizer_config.json") << config->dump();
  return dir;
}

// The tiny byte-level vocabulary as a GPT-2 style tokenizer.json.
json byte_level_json() {
  const VocabSpec spec = testing::tiny_bpe_spec();
  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.types[i] == TokenType::kNormal) {
      vocab[spec.tokens[i]] = i;
    } else {
      added.push_back({{"id", i}, {"content", spec.tokens[i]}, {"special", spec.types[i] == TokenType::kControl}});
    }
  }
  json merges = json::array();
  for (const std::string& m : spec.merges) merges.push_back(json::array({m.substr(0, m.find(' ', 1)), m.substr(m.find(' ', 1) + 1)}));
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"added_tokens", added},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}}};
}

TEST(TextHfTokenizer, ByteLevelMatchesTheGgufPath) {
  const auto dir = write_folder("hf-byte-level", byte_level_json(), nullptr);
  auto hf = Tokenizer::from_hf_folder((dir / "model.safetensors").string());  // a file in the folder works too
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  auto gguf = Tokenizer::from_vocab(Vocab::create(testing::tiny_bpe_spec()).value());
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ((*hf)->kind(), VocabKind::kBpe);
  for (const std::string text : {"hello world", "hello  world<tool>x", "<|endoftext|>hé 🦙", "lll\n\n"}) {
    EXPECT_EQ((*hf)->encode(text, false, true), (*gguf)->encode(text, false, true)) << text;
    EXPECT_EQ((*hf)->decode((*hf)->encode(text, false, false)), text);
  }
}

TEST(TextHfTokenizer, SplitRegexTemplateAndConfig) {
  json j = byte_level_json();
  // Llama 3 layout: the regex in a Split step, ByteLevel without its own regex, BOS from the template.
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", R"(\p{N}{1,3}|\p{L}+| ?[^\s\p{L}\p{N}]+|\s+)"}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  j["model"]["ignore_merges"] = true;
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
  json config = {{"bos_token", "<|endoftext|>"}, {"eos_token", {{"content", "<|endoftext|>"}}}};
  const auto dir = write_folder("hf-split", j, &config);
  auto t = Tokenizer::from_hf_folder(dir.string());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const Tokenizer& tok = **t;
  const int32_t eot = *tok.find_token("<|endoftext|>");
  EXPECT_EQ(tok.vocab().bos_id(), eot);
  EXPECT_TRUE(tok.vocab().add_bos());
  EXPECT_TRUE(tok.vocab().ignore_merges());
  // ignore_merges: "hellx" is one token although no merge makes it.
  EXPECT_EQ(tok.encode("hellx", true, false), (Ids{eot, *tok.find_token("hellx")}));

  config["add_bos_token"] = false;
  auto t2 = Tokenizer::from_hf_folder(write_folder("hf-split-nobos", j, &config).string());
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE((*t2)->vocab().add_bos());
}

TEST(TextHfTokenizer, SentencePieceStyle) {
  // Llama 2 layout: "▁" normalizer, byte fallback, merges in score order.
  const VocabSpec spec = testing::tiny_spm_spec();
  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.types[i] == TokenType::kControl) {
      added.push_back({{"id", i}, {"content", spec.tokens[i]}, {"special", true}});
    } else {
      vocab[spec.tokens[i]] = i;
    }
  }
  const json merges = {"▁hel lo", "▁wor ld", "▁h el", "▁w or", "▁ h", "▁ w", "e l", "o r", "l o", "l d"};
  const json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", true}, {"unk_token", "<unk>"}}},
                  {"added_tokens", added},
                  {"normalizer", {{"type", "Sequence"},
                                  {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}}},
                  {"pre_tokenizer", nullptr}};
  const json config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_bos_token", true}};
  auto t = Tokenizer::from_hf_folder(write_folder("hf-spm", j, &config).string());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const Tokenizer& tok = **t;
  EXPECT_EQ(tok.kind(), VocabKind::kSpm);
  EXPECT_EQ(tok.vocab().unk_id(), 0);
  EXPECT_EQ(tok.encode("hello world", true, false), (Ids{1, *tok.find_token("▁hello"), *tok.find_token("▁world")}));
  const Ids ids = tok.encode("hé", false, false);
  EXPECT_EQ(ids, (Ids{*tok.find_token("▁h"), *tok.find_token("<0xC3>"), *tok.find_token("<0xA9>")}));
  EXPECT_EQ(tok.decode(ids), "hé");
}

TEST(TextHfTokenizer, MissingAndUnsupported) {
  const auto empty = saker::testing::temp_dir() / "hf-empty";
  std::filesystem::create_directories(empty);
  auto none = Tokenizer::from_hf_folder(empty.string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);

  json wordpiece = {{"model", {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}}}};
  auto wp = Tokenizer::from_hf_folder(write_folder("hf-wordpiece", wordpiece, nullptr).string());
  ASSERT_FALSE(wp.ok());
  EXPECT_EQ(wp.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(wp.status().message().find("WordPiece"), std::string::npos);

  json bad = byte_level_json();
  bad["model"]["merges"] = json::array({42});
  auto b = Tokenizer::from_hf_folder(write_folder("hf-bad", bad, nullptr).string());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kCorruptFile);

  const auto broken = saker::testing::temp_dir() / "hf-broken";
  std::filesystem::create_directories(broken);
  std::ofstream(broken / "tokenizer.json") << "{\"model\": ";
  auto br = Tokenizer::from_hf_folder(broken.string());
  ASSERT_FALSE(br.ok());
  EXPECT_EQ(br.status().code(), StatusCode::kCorruptFile);
}

}  // namespace
}  // namespace saker::text
