#pragma once
// Splits text into the pieces that BPE then encodes one by one, with a list of PCRE2 regexes (UTF + Unicode
// properties) applied in sequence. Each regex re-splits every piece from the previous step: matches become
// pieces and so does the unmatched text between them, so no byte is ever dropped.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace saker::text {

class Pretokenizer {
 public:
  // Compiles the regexes (JIT when available). A pattern error is an internal error naming the pattern.
  static Result<Pretokenizer> create(const std::vector<std::string>& regexes);

  // `text` must be valid UTF-8 (see utf8_sanitize). The pieces are views into `text`, in order, and
  // concatenate back to it. `$` matches only at the end of a piece, as in llama.cpp's splitter.
  std::vector<std::string_view> split(std::string_view text) const;

  size_t n_regexes() const { return regexes_.size(); }

 private:
  struct Regex;
  void split_one(const Regex& regex, std::string_view piece, std::vector<std::string_view>& out) const;

  std::vector<std::shared_ptr<const Regex>> regexes_;  // shared: compiled code is immutable
};

}  // namespace saker::text
