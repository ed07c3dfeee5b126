// PCRE2-backed pre-tokenizer (see pretokenizer.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/pretokenizer.h"

#include <pcre2.h>

#include "core/log.h"
#include "text/utf8.h"

namespace saker::text {

struct Pretokenizer::Regex {
  std::string pattern;
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: match data and a JIT stack larger than PCRE2's 32 KiB default, so long runs of
// whitespace or letters do not hit the stack limit. Compiled patterns are shared between threads.
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(32, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Result<Pretokenizer> Pretokenizer::create(const std::vector<std::string>& regexes) {
  Pretokenizer p;
  for (const std::string& pattern : regexes) {
    auto regex = std::make_shared<Regex>();
    regex->pattern = pattern;
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    // DOLLAR_ENDONLY: `\s+$` must not stop before a final newline (std::regex semantics, which
    // llama.cpp's reference outputs were produced with).
    regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &error_offset, nullptr);
    if (regex->code == nullptr) {
      return make_error(StatusCode::kInternal, "pre-tokenizer regex /{}/ at offset {}: {}", pattern, error_offset,
                        pcre2_message(error));
    }
    // Without JIT support PCRE2 interprets the pattern: slower, same result.
    pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);
    p.regexes_.push_back(std::move(regex));
  }
  return p;
}

std::vector<std::string_view> Pretokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    next.clear();
    next.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) split_one(*regex, piece, next);
    pieces.swap(next);
  }
  return pieces;
}

void Pretokenizer::split_one(const Regex& regex, std::string_view piece, std::vector<std::string_view>& out) const {
  MatchState& state = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  size_t last = 0;  // end of the previous match: text from here to the next match is a gap piece
  size_t pos = 0;   // where the next search starts
  while (pos < piece.size()) {
    const int rc = pcre2_match(regex.code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      // Resource limits on pathological input: keep the rest as one piece rather than fail.
      SAKER_LOG_WARN("pre-tokenizer regex /{}/ stopped on a {}-byte piece: {}", regex.pattern, piece.size(),
                     pcre2_message(rc));
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end <= begin) {
      // An empty match consumes nothing: step over one character and search again.
      if (begin >= piece.size()) break;
      const size_t n = utf8_sequence_length(static_cast<uint8_t>(piece[begin]));
      pos = begin + (n == 0 ? 1 : n);
      continue;
    }
    if (begin > last) out.push_back(piece.substr(last, begin - last));
    out.push_back(piece.substr(begin, end - begin));
    last = pos = end;
  }
  if (last < piece.size()) out.push_back(piece.substr(last));
}

}  // namespace saker::text
