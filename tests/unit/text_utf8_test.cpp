// UTF-8 helpers and the byte-level alphabet.
#include <gtest/gtest.h>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace saker::text {
namespace {

TEST(TextUtf8, DecodesAndRejectsInvalidForms) {
  uint32_t cp = 0;
  EXPECT_EQ(utf8_decode("A", 0, &cp), 1u);
  EXPECT_EQ(cp, 0x41u);
  EXPECT_EQ(utf8_decode("\xC3\x84", 0, &cp), 2u);
  EXPECT_EQ(cp, 0xC4u);
  EXPECT_EQ(utf8_decode("\xF0\x9F\xA6\x99", 0, &cp), 4u);
  EXPECT_EQ(cp, 0x1F999u);
  EXPECT_EQ(utf8_decode("\xC0\x80", 0, &cp), 0u);          // overlong
  EXPECT_EQ(utf8_decode("\xE0\x80\x80", 0, &cp), 0u);      // overlong
  EXPECT_EQ(utf8_decode("\xED\xA0\x80", 0, &cp), 0u);      // surrogate
  EXPECT_EQ(utf8_decode("\xF4\x90\x80\x80", 0, &cp), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_decode("\x80", 0, &cp), 0u);              // stray continuation
  EXPECT_EQ(utf8_decode("\xE2\x96", 0, &cp), 0u);          // truncated
  EXPECT_TRUE(utf8_is_valid("héllo 🦙"));
  EXPECT_FALSE(utf8_is_valid("a\xFF"));
}

TEST(TextUtf8, SanitizeReplacesEachBadByte) {
  EXPECT_EQ(utf8_sanitize("ok"), "ok");
  EXPECT_EQ(utf8_sanitize("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_sanitize("\xE2\x96"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_encode(0x2581), "\xE2\x96\x81");
}

TEST(TextUtf8, CompletePrefixHoldsBackUnfinishedCharacters) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\xA6"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\xA6\x99"), 6u);
  EXPECT_EQ(utf8_complete_prefix("\xC3"), 0u);
  // Bytes that no continuation can make valid are released (the caller replaces them).
  EXPECT_EQ(utf8_complete_prefix("a\x80"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xE0\x80"), 3u);  // E0 80 would be overlong
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);
}

TEST(TextByteLevel, MapsEveryByteAndBack) {
  EXPECT_EQ(byte_to_unicode(' '), "Ġ");
  EXPECT_EQ(byte_to_unicode('\n'), "Ċ");
  EXPECT_EQ(byte_to_unicode('\t'), "ĉ");
  EXPECT_EQ(byte_to_unicode('a'), "a");
  EXPECT_EQ(byte_to_unicode(0xC3), "\xC3\x83");  // Ã: Latin-1 printable maps to itself
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level_to_bytes(bytes_to_byte_level(all)), all);
  EXPECT_FALSE(unicode_to_byte(0x2581).has_value());
  EXPECT_EQ(byte_level_to_bytes("x\xE2\x96\x81"), "x\xE2\x96\x81");  // outside the alphabet: kept
}

}  // namespace
}  // namespace saker::text
