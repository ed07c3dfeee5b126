// Special-token matching in input text (see special_tokens.h).
#include "text/special_tokens.h"

#include <algorithm>

namespace saker::text {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    const TokenType type = vocab.type(id);
    const bool user = type == TokenType::kUserDefined;
    if (!user && type != TokenType::kControl && type != TokenType::kUnknown) continue;
    const std::string& text = vocab.text(id);
    if (text.empty()) continue;
    by_first_byte_[static_cast<uint8_t>(text[0])].push_back({text, id, user});
    ++n_tokens_;
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const Candidate& a, const Candidate& b) { return a.text.size() > b.text.size(); });
  }
}

std::vector<TextFragment> SpecialTokenMatcher::split(std::string_view text, bool parse_special) const {
  return split_impl(text, parse_special, {});
}

std::vector<TextFragment> SpecialTokenMatcher::split(std::string_view text,
                                                     std::span<const ByteRange> untrusted) const {
  return split_impl(text, true, untrusted);
}

std::vector<TextFragment> SpecialTokenMatcher::split_impl(std::string_view text, bool parse_special,
                                                          std::span<const ByteRange> untrusted) const {
  std::vector<TextFragment> out;
  size_t plain_begin = 0;
  size_t next_range = 0;  // the first untrusted range that ends after pos (the scan only moves forward)
  for (size_t pos = 0; pos < text.size();) {
    while (next_range < untrusted.size() && untrusted[next_range].end <= pos) ++next_range;
    // A control token may not take a byte of untrusted text: [pos, pos + size) must end before the next range.
    const size_t control_limit = next_range < untrusted.size() ? untrusted[next_range].begin : text.size();
    const Candidate* found = nullptr;
    for (const Candidate& c : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      if (!c.always && (!parse_special || pos + c.text.size() > control_limit)) continue;
      if (text.compare(pos, c.text.size(), c.text) == 0) {
        found = &c;
        break;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    if (pos > plain_begin) out.push_back({text.substr(plain_begin, pos - plain_begin), kNoToken});
    out.push_back({text.substr(pos, found->text.size()), found->id});
    pos += found->text.size();
    plain_begin = pos;
  }
  if (plain_begin < text.size()) out.push_back({text.substr(plain_begin), kNoToken});
  return out;
}

}  // namespace saker::text
