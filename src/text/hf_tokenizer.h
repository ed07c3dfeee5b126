#pragma once
// Reads a Hugging Face tokenizer (tokenizer.json, plus tokenizer_config.json for BOS/EOS settings) into a
// VocabSpec. Supported: model "BPE", either byte-level (a ByteLevel pre-tokenizer or decoder: GPT-2, Llama 3,
// Qwen, ...) or SentencePiece-style (Metaspace / "▁" normalizer with byte fallback: Llama 2, Mistral, ...).
// Pre-tokenizer Split/ByteLevel/Digits/Punctuation steps become regexes; normalizers such as NFC are not
// applied (a warning says so).
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/vocab.h"

namespace saker::text {

// `config` (tokenizer_config.json) may be null.
Result<VocabSpec> vocab_spec_from_hf_json(const nlohmann::json& tokenizer, const nlohmann::json* config);

// `path` is a model folder or a file in one. kNotFound when the folder has no tokenizer.json.
Result<VocabSpec> vocab_spec_from_hf_folder(const std::string& path);

}  // namespace saker::text
