#pragma once
// Writes a Hugging Face tokenizer into GGUF `tokenizer.ggml.*` metadata (plus the chat template), in the
// form llama.cpp and saker both load: `gpt2` with merges and a `pre` name, or `llama` with scores.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "formats/gguf.h"
#include "text/vocab.h"

namespace saker::text {

// The llama.cpp `tokenizer.ggml.pre` name whose preset has exactly these regexes ("qwen2", "llama-bpe",
// "gpt-2", ...), or "" when none does.
std::string pre_name_for_regexes(const std::vector<std::string>& regexes);

Status export_vocab_to_gguf(const VocabSpec& spec, GgufWriter* writer);

// Gives ids without a token (gaps in the tokenizer's ids, and up to `n_vocab` when that is larger) the
// unused token "[PAD<id>]", so that the token list has one unique entry per embedding row as llama.cpp
// requires; more tokens than `n_vocab` rows is an error. `n_vocab` <= 0 only fills the gaps.
Status fit_vocab_to_model(VocabSpec* spec, int64_t n_vocab);

// Reads tokenizer.json (+ tokenizer_config.json: chat_template) from `folder`, its token list fitted to the
// model's `n_vocab` embedding rows (see fit_vocab_to_model). A folder without a tokenizer gets
// `tokenizer.ggml.model = "none"`, which llama.cpp accepts (with `<arch>.vocab_size` giving the row count)
// and saker reports as "no tokenizer".
Status export_hf_tokenizer_to_gguf(const std::string& folder, GgufWriter* writer, int64_t n_vocab = 0);

}  // namespace saker::text
