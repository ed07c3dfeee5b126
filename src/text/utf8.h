#pragma once
// UTF-8 helpers shared by the tokenizers and the detokenizer. Decoding is strict (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF) because PCRE2 rejects such input; callers decide what an
// invalid byte becomes (U+FFFD for regex pre-tokenization, a byte token for SentencePiece).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace saker::text {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the sequence announced by a lead byte: 1..4, or 0 for a continuation or invalid byte.
size_t utf8_sequence_length(uint8_t lead);

// Decodes one code point at text[pos]. Returns the bytes consumed (1..4) and stores the code point,
// or returns 0 when the bytes there are not a valid, complete UTF-8 sequence.
size_t utf8_decode(std::string_view text, size_t pos, uint32_t* cp);

void utf8_append(std::string& out, uint32_t cp);
std::string utf8_encode(uint32_t cp);

bool utf8_is_valid(std::string_view text);

// Replaces every byte that does not start a valid sequence with U+FFFD (one per byte, like llama.cpp's
// decoder), so the result is valid UTF-8 and the same length or longer.
std::string utf8_sanitize(std::string_view text);

// Length of the longest prefix that does not end inside a multi-byte character which later bytes could
// still complete. Used to stream text without splitting a character across pieces.
size_t utf8_complete_prefix(std::string_view text);

}  // namespace saker::text
