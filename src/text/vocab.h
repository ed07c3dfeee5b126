#pragma once
// A tokenizer's vocabulary: token texts, scores, types, BPE merges and the special token ids, read from
// GGUF `tokenizer.ggml.*` metadata (or built directly by tests). Lookups are by text without allocating.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace saker {
class GgufFile;
}

namespace saker::text {

// GGUF `tokenizer.ggml.token_type` values.
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // BOS, EOS, chat markers: written in text only when parse_special is on
  kUserDefined = 4,  // added tokens: always matched as a whole in the input text
  kUnused = 5,
  kByte = 6,         // SentencePiece byte fallback "<0xNN>"
};

enum class VocabKind {
  kBpe,  // GGUF model "gpt2": byte-level BPE ranked by merges
  kSpm,  // GGUF model "llama": SentencePiece BPE ranked by scores, byte fallback
};

inline constexpr int32_t kNoToken = -1;

// Everything a Vocab is built from. Missing optional fields keep the defaults below.
struct VocabSpec {
  VocabKind kind = VocabKind::kBpe;
  std::string pre;                  // pre-tokenizer name (`tokenizer.ggml.pre`), BPE only
  // Regexes taken from a tokenizer.json; when set they replace the preset named by `pre`.
  std::vector<std::string> pre_regexes;
  bool ignore_merges = false;       // with pre_regexes: look whole pieces up before merging
  std::vector<std::string> tokens;  // [n_vocab]
  std::vector<float> scores;        // [n_vocab] or empty (all zero)
  std::vector<TokenType> types;     // [n_vocab] or empty (all normal)
  std::vector<std::string> merges;  // BPE: "left right", best first
  int32_t bos_id = kNoToken;
  int32_t eos_id = kNoToken;
  int32_t unk_id = kNoToken;
  int32_t pad_id = kNoToken;
  int32_t eot_id = kNoToken;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SPM: prepend a space to text at the start and after special tokens
};

class Vocab {
 public:
  // Validates sizes and ids (ids out of range are dropped with a warning) and builds the indexes.
  static Result<Vocab> create(VocabSpec spec);
  // Reads `tokenizer.ggml.*`; errors name the key and what was expected.
  static Result<Vocab> from_gguf(const GgufFile& file);

  VocabKind kind() const { return spec_.kind; }
  const std::string& pre() const { return spec_.pre; }
  const std::vector<std::string>& pre_regexes() const { return spec_.pre_regexes; }
  bool ignore_merges() const { return spec_.ignore_merges; }
  int32_t n_tokens() const { return static_cast<int32_t>(spec_.tokens.size()); }
  bool valid_id(int32_t id) const { return id >= 0 && id < n_tokens(); }

  const std::string& text(int32_t id) const { return spec_.tokens[id]; }
  float score(int32_t id) const { return spec_.scores[id]; }
  TokenType type(int32_t id) const { return spec_.types[id]; }

  // Token id whose text is exactly `text`, or kNoToken.
  int32_t find(std::string_view text) const;
  // Rank of the merge "left right" (lower merges first), or -1 when there is no such merge.
  int32_t merge_rank(std::string_view left, std::string_view right) const;
  // SPM byte-fallback token "<0xNN>", or kNoToken.
  int32_t byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

  int32_t bos_id() const { return spec_.bos_id; }
  int32_t eos_id() const { return spec_.eos_id; }
  int32_t unk_id() const { return spec_.unk_id; }
  int32_t pad_id() const { return spec_.pad_id; }
  int32_t eot_id() const { return spec_.eot_id; }
  bool add_bos() const { return spec_.add_bos; }
  bool add_eos() const { return spec_.add_eos; }
  bool add_space_prefix() const { return spec_.add_space_prefix; }

 private:
  // Lets unordered_map look up a string_view without building a std::string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Index = std::unordered_map<std::string, int32_t, Hash, std::equal_to<>>;

  VocabSpec spec_;
  Index token_index_;
  Index merge_index_;                 // key "left right"
  std::vector<int32_t> byte_tokens_;  // [256]
};

}  // namespace saker::text
