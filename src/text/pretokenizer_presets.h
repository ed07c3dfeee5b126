#pragma once
// The pre-tokenizer of each byte-level BPE family, named by GGUF `tokenizer.ggml.pre`. A preset is a list of
// regexes applied one after another: each splits every piece the previous one produced (matches and the
// text between them both become pieces), which is how llama.cpp and HF `Sequence` pre-tokenizers behave.
#include <string>
#include <string_view>
#include <vector>

namespace saker::text {

struct PretokenizerPreset {
  std::string name;                  // canonical name, e.g. "llama3"
  std::vector<std::string> regexes;  // PCRE2 syntax, compiled with UTF and Unicode properties
  // tiktoken-derived vocabularies look a whole piece up before merging (HF `ignore_merges`).
  bool ignore_merges = false;
};

// Resolves a `tokenizer.ggml.pre` value or a canonical name, including aliases ("llama-bpe", "smollm", "dbrx", ...).
// An empty name gives "default" (old files without the key). An unknown name is matched by family
// ("qwen..." -> qwen2, "deepseek...coder" -> deepseek-coder, ...) or else gets the llama3 regex, the most
// common modern choice; `*exact` tells the caller whether to warn.
PretokenizerPreset resolve_pretokenizer(std::string_view pre, bool* exact);

// Canonical names, for tests and `--help` texts.
std::vector<std::string> pretokenizer_preset_names();

}  // namespace saker::text
