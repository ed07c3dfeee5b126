// UTF-8 decoding and encoding (see utf8.h).
#include "text/utf8.h"

namespace saker::text {

size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;  // continuation byte, or C0/C1 which only start overlong forms
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;  // F5..FF would encode beyond U+10FFFF
}

size_t utf8_decode(std::string_view text, size_t pos, uint32_t* cp) {
  if (pos >= text.size()) return 0;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte(0);
  const size_t n = utf8_sequence_length(lead);
  if (n == 0 || pos + n > text.size()) return 0;
  if (n == 1) {
    *cp = lead;
    return 1;
  }
  uint32_t value = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    const uint8_t b = byte(i);
    if ((b & 0xC0) != 0x80) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  // Overlong forms (E0 80.., F0 80..), surrogates and values past U+10FFFF are invalid.
  if ((n == 3 && value < 0x800) || (n == 4 && value < 0x10000)) return 0;
  if ((value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) return 0;
  *cp = value;
  return n;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementChar;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

bool utf8_is_valid(std::string_view text) {
  uint32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8_decode(text, pos, &cp);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  uint32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8_decode(text, pos, &cp);
    if (n == 0) {
      utf8_append(out, kReplacementChar);
      ++pos;
    } else {
      out.append(text.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

namespace {

// Whether `tail` (a lead byte and fewer continuation bytes than it announces) can still become a valid
// character. The second byte has tighter bounds after E0, ED, F0 and F4 (no overlongs, no surrogates,
// nothing past U+10FFFF).
bool is_valid_partial(std::string_view tail) {
  const uint8_t lead = static_cast<uint8_t>(tail[0]);
  for (size_t i = 1; i < tail.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(tail[i]);
    uint8_t lo = 0x80, hi = 0xBF;
    if (i == 1) {
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    }
    if (b < lo || b > hi) return false;
  }
  return true;
}

}  // namespace

size_t utf8_complete_prefix(std::string_view text) {
  // Only the last three bytes can belong to an unfinished character: find the last lead byte there.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t b = static_cast<uint8_t>(text[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for its lead
    const size_t need = utf8_sequence_length(b);
    if (need > back && is_valid_partial(text.substr(n - back))) return n - back;
    return n;
  }
  return n;
}

}  // namespace saker::text
