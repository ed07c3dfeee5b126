#pragma once
// The tokenizer facade: one object per model vocabulary, built from GGUF metadata or a Hugging Face
// tokenizer.json, that encodes text to token ids (with special-token parsing and BOS/EOS) and turns ids
// back into text. Thread-safe for concurrent encode/decode calls once built.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/bpe_tokenizer.h"
#include "text/special_tokens.h"
#include "text/spm_tokenizer.h"
#include "text/vocab.h"

namespace saker {
class GgufFile;
}

namespace saker::text {

struct DecodeOptions {
  // Control tokens (BOS, EOS, chat markers) and unknown/unused tokens produce no text.
  bool skip_special = false;
  // SentencePiece vocabularies with a dummy prefix: drop the leading space of the first text token, so
  // decode(encode(s)) == s. Turn off when decoding a continuation (generated tokens after a prompt).
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& file);
  // A Hugging Face model folder (or a file in it): tokenizer.json + tokenizer_config.json. kNotFound when
  // the folder has no tokenizer.json. See hf_tokenizer.h for what is supported.
  static Result<std::unique_ptr<Tokenizer>> from_hf_folder(const std::string& path);
  static Result<std::unique_ptr<Tokenizer>> from_vocab(Vocab vocab);

  Tokenizer(const Tokenizer&) = delete;  // the tokenizers point into vocab_
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token).
  // parse_special: control tokens written in the text ("<|im_start|>") become their ids; user-defined
  // tokens are always recognised. Any bytes are accepted; invalid UTF-8 never fails.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // encode(text, add_special, true), except that a control token written inside an `untrusted` byte range
  // (or reaching into one) is not recognised: those bytes are tokenized as text, the way
  // encode(..., parse_special = false) reads them (user-defined tokens still match). For a rendered chat
  // prompt: the template's markup becomes control tokens, what the request wrote never does. Text and
  // token boundaries are those of the plain call whenever the untrusted text holds no control-token text.
  // The ranges may come in any order (they are normalized); ranges past the end are clipped.
  std::vector<int32_t> encode_untrusted_as_text(std::string_view text, std::span<const ByteRange> untrusted,
                                                bool add_special) const;

  // The bytes a token stands for (may be part of a UTF-8 character). Control and unknown tokens give
  // their text when render_special, else nothing. An out-of-range id gives nothing.
  std::string token_to_piece(int32_t id, bool render_special = true) const;

  // Concatenated pieces: raw bytes, which can end inside a character (IncrementalDetokenizer streams
  // valid UTF-8 instead).
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  // The piece decode() appends for `id`, given and updating whether a leading space is still to be
  // stripped (shared with the detokenizer).
  std::string decode_piece(int32_t id, const DecodeOptions& options, bool* strip_pending) const;

  int32_t n_vocab() const { return vocab_.n_tokens(); }
  const Vocab& vocab() const { return vocab_; }
  VocabKind kind() const { return vocab_.kind(); }
  // "spm", or the resolved pre-tokenizer name for BPE.
  std::string pretokenizer_name() const;
  // Id of the token whose text is exactly `text` (e.g. "<|im_end|>"), or nullopt.
  std::optional<int32_t> find_token(std::string_view text) const;
  bool is_control(int32_t id) const;
  // EOS or end-of-turn: generation stops here.
  bool is_end_of_generation(int32_t id) const;

 private:
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  std::vector<int32_t> encode_fragments(const std::vector<TextFragment>& fragments, size_t text_bytes,
                                        bool add_special) const;

  Vocab vocab_;
  std::optional<BpeTokenizer> bpe_;
  std::optional<SpmTokenizer> spm_;
  SpecialTokenMatcher specials_;
};

}  // namespace saker::text
