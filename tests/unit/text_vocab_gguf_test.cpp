// Loading a tokenizer from GGUF metadata (files written in memory by GgufWriter).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "text/tokenizer.h"
#include "text_test_vocabs.h"

namespace saker::text {
namespace {

GgufWriter writer_for(const VocabSpec& spec, const std::string& model) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::from_string("llama"));
  w.set("tokenizer.ggml.model", GgufValue::from_string(model));
  w.set("tokenizer.ggml.pre", GgufValue::from_string(spec.pre));
  w.set("tokenizer.ggml.tokens", GgufValue::from_strings(spec.tokens));
  if (!spec.scores.empty()) w.set("tokenizer.ggml.scores", GgufValue::from_f32s(spec.scores));
  std::vector<int32_t> types;
  for (TokenType t : spec.types) types.push_back(static_cast<int32_t>(t));
  w.set("tokenizer.ggml.token_type", GgufValue::from_i32s(types));
  if (!spec.merges.empty()) w.set("tokenizer.ggml.merges", GgufValue::from_strings(spec.merges));
  if (spec.bos_id >= 0) w.set("tokenizer.ggml.bos_token_id", GgufValue::from_u32(spec.bos_id));
  if (spec.eos_id >= 0) w.set("tokenizer.ggml.eos_token_id", GgufValue::from_u32(spec.eos_id));
  return w;
}

Result<std::unique_ptr<Tokenizer>> load(const GgufWriter& w, std::vector<uint8_t>& storage) {
  storage = w.to_bytes();
  auto file = GgufFile::parse({storage.data(), storage.size()});
  if (!file.ok()) return file.status();
  return Tokenizer::from_gguf(*file);
}

TEST(TextVocabGguf, LoadsBpeAndSpm) {
  std::vector<uint8_t> bytes;
  auto bpe = load(writer_for(testing::tiny_bpe_spec(), "gpt2"), bytes);
  ASSERT_TRUE(bpe.ok()) << bpe.status().to_string();
  EXPECT_EQ((*bpe)->kind(), VocabKind::kBpe);
  EXPECT_FALSE((*bpe)->vocab().add_bos());
  EXPECT_EQ((*bpe)->decode((*bpe)->encode("hello world", false, false)), "hello world");

  GgufWriter w = writer_for(testing::tiny_spm_spec(), "llama");
  auto spm = load(w, bytes);
  ASSERT_TRUE(spm.ok()) << spm.status().to_string();
  const Tokenizer& t = **spm;
  EXPECT_EQ(t.kind(), VocabKind::kSpm);
  // SentencePiece defaults: BOS added, dummy prefix on, <unk> = 0.
  EXPECT_TRUE(t.vocab().add_bos());
  EXPECT_TRUE(t.vocab().add_space_prefix());
  EXPECT_EQ(t.vocab().unk_id(), 0);
  EXPECT_EQ(t.encode("hello", true, false), (std::vector<int32_t>{1, *t.find_token("▁hello")}));

  w.set("tokenizer.ggml.add_bos_token", GgufValue::from_bool(false));
  w.set("tokenizer.ggml.add_space_prefix", GgufValue::from_bool(false));
  auto spm2 = load(w, bytes);
  ASSERT_TRUE(spm2.ok());
  EXPECT_EQ((*spm2)->encode("hello", true, false).front(), *(*spm2)->find_token("h"));
}

TEST(TextVocabGguf, ErrorsNameTheProblem) {
  std::vector<uint8_t> bytes;
  GgufWriter w = writer_for(testing::tiny_bpe_spec(), "bert");
  auto r = load(w, bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("bert"), std::string::npos);

  GgufWriter no_merges;
  no_merges.set("tokenizer.ggml.model", GgufValue::from_string("gpt2"));
  no_merges.set("tokenizer.ggml.tokens", GgufValue::from_strings({"a", "b"}));
  r = load(no_merges, bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("merges"), std::string::npos);

  GgufWriter bad_types = writer_for(testing::tiny_spm_spec(), "llama");
  bad_types.set("tokenizer.ggml.token_type", GgufValue::from_i32s({1, 2, 3}));
  r = load(bad_types, bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token_type"), std::string::npos);

  GgufWriter none;
  none.set("general.architecture", GgufValue::from_string("llama"));
  r = load(none, bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace saker::text
