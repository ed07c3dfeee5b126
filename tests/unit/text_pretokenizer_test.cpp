// Pre-tokenizer regex sequences and the name -> preset resolution.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/pretokenizer.h"
#include "text/pretokenizer_presets.h"

namespace saker::text {
namespace {

std::vector<std::string> split(const std::string& preset_name, const std::string& text) {
  bool exact = false;
  const PretokenizerPreset preset = resolve_pretokenizer(preset_name, &exact);
  EXPECT_TRUE(exact) << preset_name;
  auto p = Pretokenizer::create(preset.regexes);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  std::vector<std::string> out;
  for (std::string_view piece : p->split(text)) out.emplace_back(piece);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(TextPretokenizer, EveryPresetCompiles) {
  for (const std::string& name : pretokenizer_preset_names()) {
    bool exact = false;
    const PretokenizerPreset preset = resolve_pretokenizer(name, &exact);
    EXPECT_TRUE(exact) << name;
    EXPECT_EQ(preset.name, name);
    auto p = Pretokenizer::create(preset.regexes);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().to_string();
    // Pieces always concatenate back to the input.
    const std::string text = "Hello,  wörld!\n\n 123456 🦙 it's\t東京 'RE";
    std::string joined;
    for (std::string_view piece : p->split(text)) {
      EXPECT_FALSE(piece.empty()) << name;
      joined += piece;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(TextPretokenizer, Gpt2) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Pieces{"Hello", " world"}));
  // \s+(?!\S) leaves the last space to lead the next word.
  EXPECT_EQ(split("gpt-2", "   Hello"), (Pieces{"  ", " Hello"}));
  EXPECT_EQ(split("gpt-2", "it's 3.14!!"), (Pieces{"it", "'s", " 3", ".", "14", "!!"}));
  // Whitespace the regex cannot take (a tab before a letter) stays as its own piece.
  EXPECT_EQ(split("gpt-2", "\tHi"), (Pieces{"\t", "Hi"}));
  EXPECT_EQ(split("gpt-2", ""), (Pieces{}));
}

TEST(TextPretokenizer, Llama3AndQwen2Numbers) {
  EXPECT_EQ(split("llama-bpe", "1234567 I'M"), (Pieces{"123", "456", "7", " I", "'M"}));
  EXPECT_EQ(split("qwen2", "1234"), (Pieces{"1", "2", "3", "4"}));
  EXPECT_EQ(split("llama3", "a\n\n  b"), (Pieces{"a", "\n\n", " ", " b"}));
}

TEST(TextPretokenizer, SequencesResplitEveryPiece) {
  // starcoder: digits one by one first, then the GPT-2 rules inside each piece.
  EXPECT_EQ(split("starcoder", "ab 123"), (Pieces{"ab", " ", "1", "2", "3"}));
  // falcon: punctuation runs, GPT-2 rules, then digit triples.
  EXPECT_EQ(split("falcon", "x 12345..."), (Pieces{"x", " ", "123", "45", "..."}));
  EXPECT_EQ(split("deepseek-llm", "a  \n"), (Pieces{"a", "  ", "\n"}));
}

TEST(TextPretokenizer, DollarMatchesOnlyAtTheEnd) {
  // deepseek-llm uses `\s+$`; like std::regex, `$` must not match before a final newline.
  auto p = Pretokenizer::create({"x$"});
  ASSERT_TRUE(p.ok());
  const auto pieces = p->split("x\n");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], "x\n");
}

TEST(TextPretokenizer, InvalidPatternIsAnError) {
  auto p = Pretokenizer::create({"(unclosed"});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("unclosed"), std::string::npos);
}

TEST(TextPretokenizer, LongRunsDoNotFail) {
  bool exact = false;
  auto p = Pretokenizer::create(resolve_pretokenizer("llama3", &exact).regexes);
  ASSERT_TRUE(p.ok());
  const std::string spaces(200000, ' ');
  const std::string text = spaces + "x" + std::string(200000, 'a');
  std::string joined;
  for (std::string_view piece : p->split(text)) joined += piece;
  EXPECT_EQ(joined, text);
}

TEST(TextPretokenizerPresets, AliasesAndFallbacks) {
  bool exact = false;
  EXPECT_EQ(resolve_pretokenizer("llama-bpe", &exact).name, "llama3");
  EXPECT_TRUE(exact);
  EXPECT_TRUE(resolve_pretokenizer("llama-bpe", &exact).ignore_merges);
  EXPECT_EQ(resolve_pretokenizer("smollm", &exact).name, "starcoder");
  EXPECT_EQ(resolve_pretokenizer("command-r", &exact).name, "starcoder");
  EXPECT_EQ(resolve_pretokenizer("refact", &exact).name, "starcoder");
  EXPECT_EQ(resolve_pretokenizer("olmo", &exact).name, "gpt-2");
  EXPECT_EQ(resolve_pretokenizer("jina-v2-de", &exact).name, "gpt-2");
  EXPECT_EQ(resolve_pretokenizer("dbrx", &exact).regexes, resolve_pretokenizer("llama3", &exact).regexes);
  EXPECT_EQ(resolve_pretokenizer("poro-chat", &exact).name, "poro");
  EXPECT_EQ(resolve_pretokenizer("llama4", &exact).name, "gpt-4o");
  EXPECT_EQ(resolve_pretokenizer("tekken", &exact).name, "tekken");
  EXPECT_EQ(resolve_pretokenizer("", &exact).name, "default");
  EXPECT_TRUE(exact);

  EXPECT_EQ(resolve_pretokenizer("qwen9", &exact).name, "qwen2");
  EXPECT_FALSE(exact);
  EXPECT_EQ(resolve_pretokenizer("deepseek-coder-v9", &exact).name, "deepseek-coder");
  EXPECT_EQ(resolve_pretokenizer("deepseek-r1-distill", &exact).name, "deepseek-v3");
  EXPECT_EQ(resolve_pretokenizer("something-new", &exact).name, "llama3");
  EXPECT_FALSE(exact);
}

}  // namespace
}  // namespace saker::text
