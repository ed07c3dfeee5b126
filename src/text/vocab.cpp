// Vocab: building the indexes and reading GGUF tokenizer metadata (see vocab.h).
#include "text/vocab.h"

#include <fmt/format.h>

#include "core/log.h"
#include "formats/gguf.h"

namespace saker::text {
namespace {

constexpr const char* kTokensKey = "tokenizer.ggml.tokens";

// Drops an id that points outside the vocabulary: a bad id in metadata must not crash the tokenizer.
void check_special_id(int32_t& id, int32_t n_tokens, const char* what) {
  if (id != kNoToken && (id < 0 || id >= n_tokens)) {
    SAKER_LOG_WARN("tokenizer: {} id {} is outside the vocabulary of {} tokens; ignored", what, id, n_tokens);
    id = kNoToken;
  }
}

Result<int32_t> read_id(const GgufFile& file, const std::string& key, int32_t fallback) {
  if (file.find(key) == nullptr) return fallback;
  auto v = file.get_int(key);
  if (!v) return make_error(StatusCode::kCorruptFile, "{}: expected an integer token id", key);
  if (*v < 0 || *v > INT32_MAX) return kNoToken;  // some converters write -1 or u32 max for "none"
  return static_cast<int32_t>(*v);
}

Result<bool> read_flag(const GgufFile& file, const std::string& key, bool fallback) {
  if (file.find(key) == nullptr) return fallback;
  auto v = file.get_bool(key);
  if (!v) return make_error(StatusCode::kCorruptFile, "{}: expected a bool", key);
  return *v;
}

}  // namespace

Result<Vocab> Vocab::create(VocabSpec spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return make_error(StatusCode::kInvalidArgument, "tokenizer: the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return make_error(StatusCode::kOutOfRange, "tokenizer: {} tokens is too many", n);
  if (spec.scores.empty()) spec.scores.assign(n, 0.0f);
  if (spec.types.empty()) spec.types.assign(n, TokenType::kNormal);
  if (spec.scores.size() != n) {
    return make_error(StatusCode::kInvalidArgument, "tokenizer: {} scores for {} tokens", spec.scores.size(), n);
  }
  if (spec.types.size() != n) {
    return make_error(StatusCode::kInvalidArgument, "tokenizer: {} token types for {} tokens", spec.types.size(), n);
  }
  const int32_t n_tokens = static_cast<int32_t>(n);
  check_special_id(spec.bos_id, n_tokens, "BOS");
  check_special_id(spec.eos_id, n_tokens, "EOS");
  check_special_id(spec.unk_id, n_tokens, "unknown-token");
  check_special_id(spec.pad_id, n_tokens, "padding");
  check_special_id(spec.eot_id, n_tokens, "end-of-turn");

  Vocab v;
  v.spec_ = std::move(spec);
  v.token_index_.reserve(n);
  // The first of duplicate texts wins: duplicates are padding entries appended after the real token.
  for (int32_t id = 0; id < n_tokens; ++id) v.token_index_.emplace(v.spec_.tokens[id], id);

  v.merge_index_.reserve(v.spec_.merges.size());
  for (size_t rank = 0; rank < v.spec_.merges.size(); ++rank) {
    const std::string& m = v.spec_.merges[rank];
    // The separator is the first space after the first character ("Ġ Ġ" and "  x" style merges are
    // impossible in byte-level vocabularies, but a leading space must not produce an empty left side).
    const size_t sep = m.find(' ', 1);
    if (sep == std::string::npos || sep + 1 >= m.size()) {
      return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.merges[{}]: expected \"left right\", got \"{}\"", rank, m);
    }
    v.merge_index_.emplace(m, static_cast<int32_t>(rank));
  }

  v.byte_tokens_.assign(256, kNoToken);
  for (int b = 0; b < 256; ++b) {
    const int32_t id = v.find(fmt::format("<0x{:02X}>", b));
    if (id != kNoToken && v.spec_.types[id] == TokenType::kByte) v.byte_tokens_[b] = id;
  }
  return v;
}

int32_t Vocab::find(std::string_view text) const {
  auto it = token_index_.find(text);
  return it == token_index_.end() ? kNoToken : it->second;
}

int32_t Vocab::merge_rank(std::string_view left, std::string_view right) const {
  thread_local std::string key;  // reused so that a lookup does not allocate
  key.assign(left);
  key += ' ';
  key.append(right);
  auto it = merge_index_.find(std::string_view(key));
  return it == merge_index_.end() ? -1 : it->second;
}

Result<Vocab> Vocab::from_gguf(const GgufFile& file) {
  VocabSpec spec;
  const auto model = file.get_string("tokenizer.ggml.model");
  if (!model) return make_error(StatusCode::kNotFound, "{}: no tokenizer (tokenizer.ggml.model is missing)", file.path());
  if (*model == "none" || model->empty()) {
    // llama.cpp's marker for a model without a tokenizer.
    return make_error(StatusCode::kNotFound, "{}: no tokenizer (tokenizer.ggml.model = \"{}\")", file.path(), *model);
  }
  if (*model == "gpt2") {
    spec.kind = VocabKind::kBpe;
  } else if (*model == "llama") {
    spec.kind = VocabKind::kSpm;
  } else {
    return make_error(StatusCode::kUnsupported,
                      "tokenizer.ggml.model = \"{}\": supported are \"gpt2\" (byte-level BPE) and \"llama\" (SentencePiece)",
                      *model);
  }
  spec.pre = file.get_string("tokenizer.ggml.pre").value_or("");

  const GgufArray* tokens = file.get_array(kTokensKey);
  if (tokens == nullptr || tokens->elem_type != GgufType::kString) {
    return make_error(StatusCode::kCorruptFile, "{}: expected an array of strings", kTokensKey);
  }
  spec.tokens = tokens->strings;
  const size_t n = spec.tokens.size();

  if (const GgufArray* scores = file.get_array("tokenizer.ggml.scores")) {
    if (scores->elem_type != GgufType::kF32 && scores->elem_type != GgufType::kF64) {
      return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.scores: expected an array of floats");
    }
    if (scores->floats.size() != n) {
      return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.scores: {} entries for {} tokens", scores->floats.size(), n);
    }
    spec.scores.assign(scores->floats.begin(), scores->floats.end());
  }
  if (const GgufArray* types = file.get_array("tokenizer.ggml.token_type")) {
    if (types->size() != n) {
      return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.token_type: {} entries for {} tokens", types->size(), n);
    }
    spec.types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t t = 0;
      if (!types->ints.empty()) {
        t = types->ints[i];
      } else if (!types->uints.empty()) {
        t = static_cast<int64_t>(types->uints[i]);
      } else {
        return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.token_type: expected an array of integers");
      }
      // Unknown type codes are treated as normal tokens rather than rejected.
      spec.types.push_back(t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kNormal);
    }
  }
  if (const GgufArray* merges = file.get_array("tokenizer.ggml.merges")) {
    if (merges->elem_type != GgufType::kString) {
      return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.merges: expected an array of strings");
    }
    spec.merges = merges->strings;
  }
  if (spec.kind == VocabKind::kBpe && spec.merges.empty()) {
    return make_error(StatusCode::kCorruptFile, "tokenizer.ggml.merges: a \"gpt2\" (BPE) tokenizer needs merges");
  }

  // SentencePiece files conventionally put <unk>, <s>, </s> at 0, 1, 2 and may omit the ids.
  const bool spm = spec.kind == VocabKind::kSpm;
  SAKER_ASSIGN_OR_RETURN(spec.bos_id, read_id(file, "tokenizer.ggml.bos_token_id", spm ? 1 : kNoToken));
  SAKER_ASSIGN_OR_RETURN(spec.eos_id, read_id(file, "tokenizer.ggml.eos_token_id", spm ? 2 : kNoToken));
  SAKER_ASSIGN_OR_RETURN(spec.unk_id, read_id(file, "tokenizer.ggml.unknown_token_id", spm ? 0 : kNoToken));
  SAKER_ASSIGN_OR_RETURN(spec.pad_id, read_id(file, "tokenizer.ggml.padding_token_id", kNoToken));
  SAKER_ASSIGN_OR_RETURN(spec.eot_id, read_id(file, "tokenizer.ggml.eot_token_id", kNoToken));
  if (spec.eot_id == kNoToken) {
    // Files often leave the end-of-turn id out (Gemma's <end_of_turn>): find it by its text, as llama.cpp
    // does, among control tokens that are not already EOS.
    static const char* kEndOfTurn[] = {"<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|end|>"};
    for (const char* text : kEndOfTurn) {
      for (size_t i = 0; i < spec.tokens.size() && spec.eot_id == kNoToken; ++i) {
        const bool control = spec.types.empty() || spec.types[i] == TokenType::kControl ||
                             spec.types[i] == TokenType::kUserDefined;
        if (control && spec.tokens[i] == text && static_cast<int32_t>(i) != spec.eos_id) {
          spec.eot_id = static_cast<int32_t>(i);
        }
      }
      if (spec.eot_id != kNoToken) break;
    }
  }
  SAKER_ASSIGN_OR_RETURN(spec.add_bos, read_flag(file, "tokenizer.ggml.add_bos_token", spm));
  SAKER_ASSIGN_OR_RETURN(spec.add_eos, read_flag(file, "tokenizer.ggml.add_eos_token", false));
  SAKER_ASSIGN_OR_RETURN(spec.add_space_prefix, read_flag(file, "tokenizer.ggml.add_space_prefix", spm));
  return create(std::move(spec));
}

}  // namespace saker::text
