#include "server/output_parser/mistral_call_parser.h"

#include <string_view>

namespace saker::server {
namespace {

constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

CallBodyParser::Status MistralNamedCallParser::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

CallBodyParser::Status MistralNamedCallParser::push(char c) {
  switch (state_) {
    case State::kName:
      if (c == '[' && !name_.empty()) {
        has_name_ = true;
        token_.assign(1, '[');
        state_ = State::kTag;
        return Status::kRunning;
      }
      if (!is_name_char(c)) return fail("expected a function name after [TOOL_CALLS]");
      name_ += c;
      return Status::kRunning;
    case State::kTag:
      token_ += c;
      if (token_ == kArgs) {
        state_ = State::kArgumentsStart;
      } else if (token_ == kCallId) {
        state_ = State::kCallId;
      } else if (!starts_with(kArgs, token_) && !starts_with(kCallId, token_)) {
        return fail("expected [ARGS] after the function name");
      }
      return Status::kRunning;
    case State::kCallId:
      if (c == '[') {
        token_.assign(1, '[');
        state_ = State::kTag;
        return Status::kRunning;
      }
      if (!is_name_char(c)) return fail("unexpected character in [CALL_ID]");
      return Status::kRunning;
    case State::kArgumentsStart:
      if (is_ws(c)) return Status::kRunning;
      if (c != '{') return fail("the tool call's arguments are not a JSON object");
      state_ = State::kArguments;
      [[fallthrough]];
    case State::kArguments:
      switch (scanner_.push(c, arguments_)) {
        case JsonScanner::Step::kAccepted: return Status::kRunning;
        case JsonScanner::Step::kComplete: state_ = State::kDone; return Status::kDone;
        default: return fail("the tool call's arguments are not valid JSON");
      }
    case State::kDone:
      return fail("text after the tool call");
  }
  return fail("internal state");
}

}  // namespace saker::server
