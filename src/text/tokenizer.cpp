// Tokenizer facade (see tokenizer.h).
#include "text/tokenizer.h"

#include "formats/gguf.h"
#include "text/byte_level.h"
#include "text/hf_tokenizer.h"

namespace saker::text {
namespace {

// "<0x41>" -> 0x41.
std::optional<uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return static_cast<uint8_t>(value);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& file) {
  auto vocab = Vocab::from_gguf(file);
  if (!vocab.ok()) return vocab.status().with_context(file.path().empty() ? "tokenizer" : file.path());
  return from_vocab(std::move(vocab).value());
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_folder(const std::string& path) {
  SAKER_ASSIGN_OR_RETURN(VocabSpec spec, vocab_spec_from_hf_folder(path));
  auto vocab = Vocab::create(std::move(spec));
  if (!vocab.ok()) return vocab.status().with_context(path);
  return from_vocab(std::move(vocab).value());
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(Vocab vocab) {
  std::unique_ptr<Tokenizer> t(new Tokenizer(std::move(vocab)));
  if (t->vocab_.kind() == VocabKind::kBpe) {
    SAKER_ASSIGN_OR_RETURN(BpeTokenizer bpe, BpeTokenizer::create(t->vocab_));
    t->bpe_.emplace(std::move(bpe));
  } else {
    t->spm_.emplace(t->vocab_);
  }
  t->specials_ = SpecialTokenMatcher(t->vocab_);
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_fragments(specials_.split(text, parse_special), text.size(), add_special);
}

std::vector<int32_t> Tokenizer::encode_untrusted_as_text(std::string_view text, std::span<const ByteRange> untrusted,
                                                         bool add_special) const {
  if (well_formed(untrusted, text.size())) {
    return encode_fragments(specials_.split(text, untrusted), text.size(), add_special);
  }
  const ByteRanges ranges = normalized(untrusted, text.size());
  return encode_fragments(specials_.split(text, std::span<const ByteRange>(ranges)), text.size(), add_special);
}

std::vector<int32_t> Tokenizer::encode_fragments(const std::vector<TextFragment>& fragments, size_t text_bytes,
                                                 bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text_bytes / 3 + 2);
  if (add_special && vocab_.add_bos() && vocab_.bos_id() != kNoToken) out.push_back(vocab_.bos_id());
  // SentencePiece adds its dummy space to each text that starts the input or follows a special token.
  bool after_special = true;
  for (const TextFragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    if (bpe_) {
      bpe_->encode(f.text, out);
    } else {
      spm_->encode(f.text, vocab_.add_space_prefix() && after_special, out);
    }
    after_special = false;
  }
  if (add_special && vocab_.add_eos() && vocab_.eos_id() != kNoToken) out.push_back(vocab_.eos_id());
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!vocab_.valid_id(id)) return {};
  const std::string& text = vocab_.text(id);
  const bool spm = vocab_.kind() == VocabKind::kSpm;
  switch (vocab_.type(id)) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
      return render_special ? text : std::string();
    case TokenType::kByte:
      if (auto b = parse_byte_token(text)) return std::string(1, static_cast<char>(*b));
      return spm ? spm_unescape_spaces(text) : byte_level_to_bytes(text);
    case TokenType::kUserDefined:
      // Added tokens are stored as plain text, not in the byte-level alphabet.
      return spm ? spm_unescape_spaces(text) : text;
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  return spm ? spm_unescape_spaces(text) : byte_level_to_bytes(text);
}

std::string Tokenizer::decode_piece(int32_t id, const DecodeOptions& options, bool* strip_pending) const {
  std::string piece = token_to_piece(id, !options.skip_special);
  if (*strip_pending && vocab_.valid_id(id)) {
    const TokenType type = vocab_.type(id);
    if (type == TokenType::kNormal || type == TokenType::kUserDefined || type == TokenType::kUndefined) {
      if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      *strip_pending = false;
    } else if (type == TokenType::kByte) {
      *strip_pending = false;  // text started without the dummy space
    }
  }
  return piece;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  std::string out;
  bool strip = options.strip_leading_space && vocab_.kind() == VocabKind::kSpm && vocab_.add_space_prefix();
  for (int32_t id : ids) out += decode_piece(id, options, &strip);
  return out;
}

std::string Tokenizer::pretokenizer_name() const { return bpe_ ? bpe_->pretokenizer_name() : "spm"; }

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = vocab_.find(text);
  if (id == kNoToken) return std::nullopt;
  return id;
}

bool Tokenizer::is_control(int32_t id) const {
  return vocab_.valid_id(id) && vocab_.type(id) == TokenType::kControl;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return id != kNoToken && (id == vocab_.eos_id() || id == vocab_.eot_id());
}

}  // namespace saker::text
