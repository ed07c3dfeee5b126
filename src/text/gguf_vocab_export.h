#pragma once
// Writes a Hugging Face tokenizer into GGUF `tokenizer.ggml.*` metadata (plus the chat template), in the
// form llama.cpp and saker both load: `gpt2` with merges and a `pre` name, or `llama` with scores.
#include <string>

#include "core/status.h"
#include "formats/gguf.h"
#include "text/vocab.h"

namespace saker::text {

// The llama.cpp `tokenizer.ggml.pre` name whose preset has exactly these regexes ("qwen2", "llama-bpe",
// "gpt-2", ...), or "" when none does.
std::string pre_name_for_regexes(const std::vector<std::string>& regexes);

Status export_vocab_to_gguf(const VocabSpec& spec, GgufWriter* writer);

// Reads tokenizer.json (+ tokenizer_config.json: chat_template) from `folder`. A folder without a tokenizer
// gets `tokenizer.ggml.model = "none"`, which llama.cpp accepts and saker reports as "no tokenizer".
Status export_hf_tokenizer_to_gguf(const std::string& folder, GgufWriter* writer);

}  // namespace saker::text
