// The byte-level alphabet tables (see byte_level.h).
#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace saker::text {
namespace {

struct Tables {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 0x100 + 68> cp_to_byte{};  // -1: not in the alphabet
};

bool maps_to_itself(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

const Tables& tables() {
  static const Tables t = [] {
    Tables tb;
    uint32_t next = 0x100;
    tb.cp_to_byte.fill(-1);
    for (int b = 0; b < 256; ++b) {
      tb.byte_to_cp[b] = maps_to_itself(b) ? static_cast<uint32_t>(b) : next++;
      tb.byte_to_utf8[b] = utf8_encode(tb.byte_to_cp[b]);
      tb.cp_to_byte[tb.byte_to_cp[b]] = static_cast<int16_t>(b);
    }
    return tb;
  }();
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return tables().byte_to_utf8[byte]; }

std::optional<uint8_t> unicode_to_byte(uint32_t cp) {
  const auto& map = tables().cp_to_byte;
  if (cp >= map.size() || map[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(map[cp]);
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_to_unicode(static_cast<uint8_t>(c));
  return out;
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  uint32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8_decode(text, pos, &cp);
    if (n == 0) {  // not UTF-8 at all: keep the byte
      out += text[pos++];
      continue;
    }
    if (auto b = unicode_to_byte(cp)) {
      out += static_cast<char>(*b);
    } else {
      out.append(text.substr(pos, n));
    }
    pos += n;
  }
  return out;
}

}  // namespace saker::text
