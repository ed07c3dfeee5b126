#include "server/output_parser/json_scanner.h"

#include <cstdio>

namespace saker::server {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
uint32_t hex_digit(char c) {
  return is_digit(c) ? uint32_t(c - '0') : (c >= 'a' && c <= 'f') ? uint32_t(c - 'a' + 10) : uint32_t(c - 'A' + 10);
}

}  // namespace

void JsonScanner::reset() { *this = JsonScanner(); }

bool JsonScanner::accepts(std::string_view text) {
  JsonScanner scanner;
  std::string sink;
  bool done = false;
  for (char c : text) {
    if (done) {
      if (!is_ws(c)) return false;
      continue;
    }
    switch (scanner.push(c, sink)) {
      case Step::kAccepted: break;
      case Step::kComplete: done = true; break;
      case Step::kCompleteBefore:  // a top-level number ended before c
        if (!is_ws(c)) return false;
        done = true;
        break;
      case Step::kRejected: return false;
    }
  }
  return done || scanner.complete_at_end();
}

bool JsonScanner::in_string() const {
  return state_ == State::kString || state_ == State::kEscape || state_ == State::kHex;
}

bool JsonScanner::number_terminal(Num n) {
  return n == Num::kZero || n == Num::kInt || n == Num::kFrac || n == Num::kExpDigits;
}

bool JsonScanner::complete_at_end() const {
  return state_ == State::kDone || (state_ == State::kNumber && stack_.empty() && number_terminal(num_));
}

JsonScanner::Step JsonScanner::end_value(bool before) {
  if (stack_.empty()) {
    state_ = State::kDone;
    return before ? Step::kCompleteBefore : Step::kComplete;
  }
  state_ = State::kAfterValue;
  return Step::kAccepted;
}

JsonScanner::Step JsonScanner::start_value(char c, std::string& out) {
  if ((c == '{' || c == '[') && stack_.size() >= kMaxDepth) return Step::kRejected;
  switch (c) {
    case '{': stack_.push_back('{'); state_ = State::kObjectFirst; break;
    case '[': stack_.push_back('['); state_ = State::kArrayFirst; break;
    case '"': string_is_key_ = false; state_ = State::kString; break;
    case '-': state_ = State::kNumber; num_ = Num::kSign; break;
    case 't': state_ = State::kLiteral; literal_ = "true"; literal_pos_ = 1; break;
    case 'f': state_ = State::kLiteral; literal_ = "false"; literal_pos_ = 1; break;
    case 'n': state_ = State::kLiteral; literal_ = "null"; literal_pos_ = 1; break;
    default:
      if (!is_digit(c)) return Step::kRejected;
      state_ = State::kNumber;
      num_ = c == '0' ? Num::kZero : Num::kInt;
  }
  out += c;
  return Step::kAccepted;
}

// Inside a container after a value: ',' or the closing bracket.
JsonScanner::Step JsonScanner::after_value(char c, std::string& out) {
  if (is_ws(c)) {
    out += c;
    return Step::kAccepted;
  }
  char top = stack_.back();
  if (c == ',') {
    state_ = top == '{' ? State::kObjectKey : State::kValue;
  } else if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
    stack_.pop_back();
    out += c;
    return end_value(false);
  } else {
    return Step::kRejected;
  }
  out += c;
  return Step::kAccepted;
}

JsonScanner::Step JsonScanner::push(char c, std::string& out) {
  switch (state_) {
    case State::kValue:
      if (is_ws(c)) {
        out += c;
        return Step::kAccepted;
      }
      return start_value(c, out);
    case State::kArrayFirst:
      if (c == ']') {
        stack_.pop_back();
        out += c;
        return end_value(false);
      }
      if (is_ws(c)) {
        out += c;
        return Step::kAccepted;
      }
      return start_value(c, out);
    case State::kObjectFirst:
      if (c == '}') {
        stack_.pop_back();
        out += c;
        return end_value(false);
      }
      [[fallthrough]];
    case State::kObjectKey:
      if (is_ws(c)) {
        out += c;
        return Step::kAccepted;
      }
      if (c != '"') return Step::kRejected;
      string_is_key_ = true;
      state_ = State::kString;
      out += c;
      return Step::kAccepted;
    case State::kColon:
      if (is_ws(c)) {
        out += c;
        return Step::kAccepted;
      }
      if (c != ':') return Step::kRejected;
      state_ = State::kValue;
      out += c;
      return Step::kAccepted;
    case State::kAfterValue:
      return after_value(c, out);
    case State::kString:
      if (expect_low_ && c != '\\') return Step::kRejected;  // a high surrogate alone
      if (c == '"') {
        out += c;
        if (string_is_key_) {
          state_ = State::kColon;
          return Step::kAccepted;
        }
        return end_value(false);
      }
      if (c == '\\') {
        state_ = State::kEscape;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        switch (c) {
          case '\n': out += "\\n"; break;
          case '\r': out += "\\r"; break;
          case '\t': out += "\\t"; break;
          default: {
            char escaped[8];
            std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
            out += escaped;
          }
        }
        return Step::kAccepted;
      }
      out += c;
      return Step::kAccepted;
    case State::kEscape:
      if (c == 'u') {
        state_ = State::kHex;
        hex_left_ = 4;
        hex_value_ = 0;
      } else if (expect_low_) {
        return Step::kRejected;
      } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
        state_ = State::kString;
      } else {
        return Step::kRejected;
      }
      out += c;
      return Step::kAccepted;
    case State::kHex:
      if (!is_hex(c)) return Step::kRejected;
      hex_value_ = hex_value_ * 16 + hex_digit(c);
      if (--hex_left_ == 0) {
        const bool high = hex_value_ >= 0xD800 && hex_value_ <= 0xDBFF;
        const bool low = hex_value_ >= 0xDC00 && hex_value_ <= 0xDFFF;
        if (expect_low_ != low) return Step::kRejected;  // a lone half of a surrogate pair
        expect_low_ = high;
        state_ = State::kString;
      }
      out += c;
      return Step::kAccepted;
    case State::kNumber: {
      Num next = num_;
      bool ok = true;
      switch (num_) {
        case Num::kSign: ok = is_digit(c); next = c == '0' ? Num::kZero : Num::kInt; break;
        case Num::kZero:
          if (c == '.') next = Num::kDot;
          else if (c == 'e' || c == 'E') next = Num::kExp;
          else ok = false;
          break;
        case Num::kInt:
          if (is_digit(c)) next = Num::kInt;
          else if (c == '.') next = Num::kDot;
          else if (c == 'e' || c == 'E') next = Num::kExp;
          else ok = false;
          break;
        case Num::kDot: ok = is_digit(c); next = Num::kFrac; break;
        case Num::kFrac:
          if (is_digit(c)) next = Num::kFrac;
          else if (c == 'e' || c == 'E') next = Num::kExp;
          else ok = false;
          break;
        case Num::kExp:
          if (c == '+' || c == '-') next = Num::kExpSign;
          else if (is_digit(c)) next = Num::kExpDigits;
          else ok = false;
          break;
        case Num::kExpSign: ok = is_digit(c); next = Num::kExpDigits; break;
        case Num::kExpDigits: ok = is_digit(c); break;
      }
      if (ok) {
        num_ = next;
        out += c;
        return Step::kAccepted;
      }
      if (!number_terminal(num_)) return Step::kRejected;
      if (stack_.empty()) return end_value(true);
      state_ = State::kAfterValue;
      return after_value(c, out);
    }
    case State::kLiteral:
      if (c != literal_[literal_pos_]) return Step::kRejected;
      out += c;
      if (literal_[++literal_pos_] == '\0') return end_value(false);
      return Step::kAccepted;
    case State::kDone:
      return Step::kRejected;
  }
  return Step::kRejected;
}

}  // namespace saker::server
