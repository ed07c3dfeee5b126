#pragma once
// GPT-2's byte-level alphabet: every byte 0..255 is shown as a printable code point so that a byte-level
// BPE vocabulary can be stored as text. Printable Latin-1 bytes map to themselves; the other 68 bytes
// (controls, space, DEL, NBSP, soft hyphen) take U+0100 upwards in byte order, so space is 'Ġ' (U+0120).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace saker::text {

// UTF-8 of the code point that stands for `byte`.
const std::string& byte_to_unicode(uint8_t byte);

// The byte a code point stands for, or nullopt when it is outside the alphabet.
std::optional<uint8_t> unicode_to_byte(uint32_t cp);

// Maps every byte of `bytes` to its stand-in; the result is what vocabularies and merges contain.
std::string bytes_to_byte_level(std::string_view bytes);

// The inverse for a token's text. Code points outside the alphabet (rare tokens that were stored raw)
// are copied unchanged rather than dropped.
std::string byte_level_to_bytes(std::string_view text);

}  // namespace saker::text
