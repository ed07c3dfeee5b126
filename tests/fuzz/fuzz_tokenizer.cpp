// Fuzz target: the tokenizers on arbitrary bytes (the text of every request is tokenized). The first byte
// picks the tokenizer and the flags; the rest is the text, and is also read as token ids to decode.
// Tokenizers: saker-mini's byte-level BPE read from its GGUF and from its tokenizer.json (two loaders, one
// vocabulary), a small SentencePiece vocabulary with byte fallback and a user-defined token, and, when
// ../shared/data/vocab is present, llama.cpp's llama-spm and gpt-2 vocabularies.
// Checks: every id is in range; without parse_special no control token comes out of the text (only the
// BOS/EOS add_special asks for); encode -> decode gives the text back where the tokenizer promises it; the
// incremental detokenizer streams valid UTF-8 that adds up to the sanitized decode.
#include <filesystem>
#include <memory>
#include <string_view>

#include "formats/gguf.h"
#include "fuzz_target.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "unit/text_test_vocabs.h"

namespace {

using namespace saker;
using saker::fuzz::consume;
namespace fs = std::filesystem;

struct NamedTokenizer {
  std::string name;
  std::unique_ptr<text::Tokenizer> tokenizer;
};

std::unique_ptr<text::Tokenizer> from_gguf_file(const fs::path& path) {
  auto file = GgufFile::open(path.string());
  if (!file.ok()) return nullptr;
  auto t = text::Tokenizer::from_gguf(*file);
  return t.ok() ? std::move(t).value() : nullptr;
}

std::vector<NamedTokenizer> load_tokenizers() {
  std::vector<NamedTokenizer> out;
  const fs::path root = saker::fuzz::source_dir();
  const fs::path mini = root / "models" / "saker-mini";
  // The project's own files must load: a failure here is a bug, not a missing optional file.
  auto mini_gguf = from_gguf_file(mini / "saker-mini-q8_0.gguf");
  if (!mini_gguf) saker::fuzz::invariant_failed("saker-mini's GGUF tokenizer does not load (SAKER_TEST_SOURCE_DIR?)");
  out.push_back({"saker-mini gguf", std::move(mini_gguf)});
  auto mini_hf = text::Tokenizer::from_hf_folder(mini.string());
  if (!mini_hf.ok()) saker::fuzz::invariant_failed("saker-mini's tokenizer.json does not load");
  out.push_back({"saker-mini tokenizer.json", std::move(mini_hf).value()});
  auto tiny_vocab = text::Vocab::create(text::testing::tiny_spm_spec());
  if (!tiny_vocab.ok()) saker::fuzz::invariant_failed("the small SentencePiece vocabulary does not build");
  auto tiny = text::Tokenizer::from_vocab(std::move(tiny_vocab).value());
  if (!tiny.ok()) saker::fuzz::invariant_failed("the small SentencePiece tokenizer does not build");
  out.push_back({"tiny spm", std::move(tiny).value()});
  // Optional outside vocabularies (absent on a user's machine).
  const fs::path shared = root.parent_path() / "shared" / "data" / "vocab";
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
    if (!fs::exists(shared / name)) continue;
    if (auto t = from_gguf_file(shared / name)) out.push_back({name, std::move(t)});
  }
  return out;
}

bool has_type(const text::Tokenizer& t, const std::vector<int32_t>& ids, text::TokenType type) {
  for (int32_t id : ids) {
    if (t.vocab().type(id) == type) return true;
  }
  return false;
}

void check_encode(const text::Tokenizer& t, std::string_view input, bool add_special, bool parse_special) {
  const std::vector<int32_t> ids = t.encode(input, add_special, parse_special);
  for (int32_t id : ids) SAKER_FUZZ_CHECK(t.vocab().valid_id(id));
  const text::Vocab& v = t.vocab();
  const bool spm = t.kind() == text::VocabKind::kSpm;

  // Only the BOS / EOS add_special asks for may be control tokens when the text's specials are not parsed:
  // this is what keeps user text from becoming chat markup.
  size_t first = 0, last = ids.size();
  if (add_special && v.add_bos() && v.bos_id() != text::kNoToken) {
    SAKER_FUZZ_CHECK(!ids.empty() && ids.front() == v.bos_id());
    first = 1;
  }
  if (add_special && v.add_eos() && v.eos_id() != text::kNoToken) {
    SAKER_FUZZ_CHECK(last > first && ids.back() == v.eos_id());
    --last;
  }
  const std::vector<int32_t> text_ids(ids.begin() + static_cast<std::ptrdiff_t>(first),
                                      ids.begin() + static_cast<std::ptrdiff_t>(last));
  if (!parse_special) SAKER_FUZZ_CHECK(!has_type(t, text_ids, text::TokenType::kControl));
  SAKER_FUZZ_CHECK(input.empty() == text_ids.empty());

  // Round trip. Byte-level BPE keeps every byte of valid UTF-8. SentencePiece writes spaces as U+2581, so a
  // U+2581 in the text comes back as a space, and a special token starts a new dummy-prefixed text (the
  // space after it stays): check it where neither happens.
  const std::string decoded = t.decode(text_ids);
  if (text::utf8_is_valid(input)) {
    const bool spm_exempt = spm && (input.find("\xE2\x96\x81") != std::string_view::npos ||
                                    has_type(t, text_ids, text::TokenType::kControl) ||
                                    has_type(t, text_ids, text::TokenType::kUserDefined) ||
                                    has_type(t, text_ids, text::TokenType::kUnknown));
    if (!spm_exempt) SAKER_FUZZ_CHECK(decoded == input);
  }
  consume(decoded.size());
}

// Arbitrary ids (some out of range) through decode, token_to_piece and the incremental detokenizer.
void check_decode(const text::Tokenizer& t, std::string_view bytes, bool skip_special) {
  std::vector<int32_t> ids;
  const int32_t n = t.n_vocab();
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const uint32_t raw = static_cast<uint8_t>(bytes[i]) | (static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8);
    // Mostly in range; a few just past the end and a few negative.
    const int32_t id = raw >= 0xFFF0 ? -static_cast<int32_t>(raw - 0xFFEF) : static_cast<int32_t>(raw % (n + 4));
    ids.push_back(id);
  }
  text::DecodeOptions options;
  options.skip_special = skip_special;
  options.strip_leading_space = !skip_special;
  const std::string whole = t.decode(ids, options);
  text::IncrementalDetokenizer detok(t, options);
  std::string streamed;
  for (int32_t id : ids) {
    consume(t.token_to_piece(id, true).size() + t.token_to_piece(id, false).size());
    const std::string piece = detok.push(id);
    SAKER_FUZZ_CHECK(text::utf8_is_valid(piece));
    streamed += piece;
  }
  const std::string tail = detok.flush();
  SAKER_FUZZ_CHECK(text::utf8_is_valid(tail));
  streamed += tail;
  SAKER_FUZZ_CHECK(detok.pending_bytes() == 0);
  SAKER_FUZZ_CHECK(streamed == text::utf8_sanitize(whole));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<NamedTokenizer> tokenizers = load_tokenizers();
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const text::Tokenizer& t = *tokenizers[(flags & 0x07) % tokenizers.size()].tokenizer;
  const bool add_special = flags & 0x08;
  const bool parse_special = flags & 0x10;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  check_encode(t, input, add_special, parse_special);
  if (flags & 0x20) check_decode(t, input, flags & 0x40);
  return 0;
}
