#pragma once
// JsonScanner: checks one JSON value byte by byte as it streams in, so a tool call's arguments can be passed on
// while the model is still writing them and a syntax error is seen at the byte that causes it. It accepts what
// nlohmann::json parses (a \u escape of a UTF-16 surrogate must be half of a pair) and no value nested deeper
// than kMaxDepth, so that nothing recursive later (serializing the arguments, say) meets a deeper one.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace saker::server {

class JsonScanner {
 public:
  static constexpr size_t kMaxDepth = 128;  // nested objects and arrays, like a request body

  enum class Step {
    kAccepted,        // the byte belongs to the value, which is not finished
    kComplete,        // the byte finished the value
    kCompleteBefore,  // the value (a top-level number) ended before this byte, which is not consumed
    kRejected,        // the byte cannot continue a JSON value
  };

  // Feeds one byte. For accepted bytes appends the text to pass on to `out`: the byte itself, except that a raw
  // control character inside a string (a common model slip) is appended escaped ("\n"), so the text stays JSON.
  Step push(char c, std::string& out);
  // True when the bytes so far form a whole value (a finished value, or a top-level number cut by the end).
  bool complete_at_end() const;
  bool done() const { return state_ == State::kDone; }
  // True while inside a string (key or value).
  bool in_string() const;
  void reset();

  // True when `text` is one whole JSON value that push() accepts, whitespace around it allowed: the check to
  // make before handing model-written text to nlohmann::json, whose parser would take any nesting depth.
  static bool accepts(std::string_view text);

 private:
  enum class State : uint8_t {
    kValue, kArrayFirst, kObjectFirst, kObjectKey, kColon, kAfterValue,
    kString, kEscape, kHex, kNumber, kLiteral, kDone,
  };
  enum class Num : uint8_t { kSign, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };

  Step start_value(char c, std::string& out);
  Step end_value(bool before);
  Step after_value(char c, std::string& out);
  static bool number_terminal(Num n);

  State state_ = State::kValue;
  Num num_ = Num::kSign;
  bool string_is_key_ = false;
  int hex_left_ = 0;
  uint32_t hex_value_ = 0;   // the \u escape being read
  bool expect_low_ = false;  // a high surrogate was read: the next thing must be its low half's \u escape
  const char* literal_ = nullptr;
  int literal_pos_ = 0;
  std::vector<char> stack_;  // '{' or '['
};

}  // namespace saker::server
