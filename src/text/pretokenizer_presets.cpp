// The regex lists of the known pre-tokenizers (see pretokenizer_presets.h). The patterns are the ones the
// models' own tokenizer.json files use, written with \x{...} escapes instead of literal non-ASCII text.
#include "text/pretokenizer_presets.h"

#include <algorithm>
#include <utility>

namespace saker::text {
namespace {

// GPT-2: contractions, letters, numbers, other symbols, each optionally led by one space.
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

// Llama 3 (tiktoken cl100k style): case-insensitive contractions, numbers in groups of up to three.
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: as llama3 but every digit is its own piece.
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Punctuation runs (Unicode P plus the ASCII symbols HF's Punctuation pre-tokenizer also counts).
constexpr const char* kPunctuationRuns = R"([\p{P}\$\+<=>\^~\|]+)";
constexpr const char* kPunctuationRunsBacktick = R"([\p{P}\$\+<=>\^~\|`]+)";
constexpr const char* kDigitTriples = R"([0-9][0-9][0-9])";

// DeepSeek LLM: letters with case (an explicit list from the model's tokenizer.json), ASCII and
// full-width punctuation, trailing whitespace, CJK runs and digit runs.
constexpr const char* kDeepseekCasedLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
    R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
    R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
    R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
    R"(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
    R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
constexpr const char* kDeepseekPunctuation =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
constexpr const char* kCjkHangul = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

// DeepSeek V3: numbers by three, CJK and kana runs, then a llama3-like rule that keeps marks with letters.
constexpr const char* kDeepseekV3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// BLOOM / Poro: everything but whitespace and a few sentence marks, led by an optional space.
constexpr const char* kPoro = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";

// Mistral Tekken: splits CamelCase words, one digit per piece.
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S))";

// GPT-4o / Llama 4 (tiktoken o200k style): case-aware words with trailing contractions.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Entry {
  PretokenizerPreset preset;
  std::vector<std::string> aliases;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = {
      {{"default", {kPunctuationRuns, kGpt2, R"(\p{N}+)", kDigitTriples}, false}, {"default"}},
      {{"gpt-2", {kGpt2}, false},
       {"gpt-2", "gpt2", "mpt", "olmo", "jais", "phi-2", "trillion", "roberta-bpe", "jina-v1-en", "jina-v2-code",
        "jina-v2-es", "jina-v2-de"}},
      {{"llama3", {kLlama3}, true},
       {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"}},
      // Same regex as llama3, but their merges are authoritative (HF ignore_merges is off).
      {{"llama3-merges", {kLlama3}, false}, {"smaug-bpe", "dbrx", "chatglm-bpe", "glm4"}},
      {{"qwen2", {kQwen2}, false}, {"qwen2", "stablelm2", "megrez"}},
      {{"deepseek-llm", {"[\\r\\n]", kDeepseekCasedLetters, kDeepseekPunctuation, R"(\s+$)", kCjkHangul, R"(\p{N}+)"}, false},
       {"deepseek-llm"}},
      {{"deepseek-coder", {"[\\r\\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHangul, R"(\p{N})"}, false},
       {"deepseek-coder"}},
      {{"deepseek-v3", {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)", kDeepseekV3Main}, false},
       {"deepseek-v3"}},
      {{"falcon", {kPunctuationRunsBacktick, kGpt2, kDigitTriples}, false}, {"falcon"}},
      {{"starcoder", {R"(\p{N})", kGpt2}, false},
       {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}},
      {{"poro", {kPoro}, false}, {"poro-chat", "bloom"}},
      {{"viking", {kPoro, R"(\p{N})"}, false}, {"viking"}},
      {{"tekken", {kTekken}, true}, {"tekken"}},
      {{"gpt-4o", {kGpt4o}, true}, {"gpt-4o", "llama4"}},
  };
  return kEntries;
}

const PretokenizerPreset* find_alias(std::string_view name) {
  for (const Entry& e : entries()) {
    if (e.preset.name == name || std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) {
      return &e.preset;
    }
  }
  return nullptr;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

PretokenizerPreset resolve_pretokenizer(std::string_view pre, bool* exact) {
  *exact = true;
  if (pre.empty()) return *find_alias("default");
  if (const PretokenizerPreset* p = find_alias(pre)) return *p;
  *exact = false;
  // Families whose later members renamed the pre-tokenizer but kept its rules; checked in order.
  const bool deepseek = contains(pre, "deepseek");
  if (deepseek && (contains(pre, "v3") || contains(pre, "r1"))) return *find_alias("deepseek-v3");
  if (deepseek && contains(pre, "coder")) return *find_alias("deepseek-coder");
  if (deepseek) return *find_alias("deepseek-llm");
  const std::pair<const char*, const char*> kFamilies[] = {
      {"qwen", "qwen2"},   {"starcoder", "starcoder"}, {"gpt-4o", "gpt-4o"}, {"llama4", "llama4"},
      {"llama", "llama3"}, {"jina", "gpt-2"},          {"gpt2", "gpt-2"},    {"gpt-2", "gpt-2"},
  };
  for (const auto& [part, alias] : kFamilies) {
    if (contains(pre, part)) return *find_alias(alias);
  }
  return *find_alias("llama3");
}

std::vector<std::string> pretokenizer_preset_names() {
  std::vector<std::string> names;
  for (const Entry& e : entries()) names.push_back(e.preset.name);
  return names;
}

}  // namespace saker::text
