#include "server/output_parser/tool_object_parser.h"

#include <nlohmann/json.hpp>

namespace saker::server {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Decodes a complete JSON string literal; false when it is not one.
bool decode_string(const std::string& raw, std::string* value) {
  nlohmann::json j = nlohmann::json::parse(raw, nullptr, false);
  if (j.is_discarded() || !j.is_string()) return false;
  *value = j.get<std::string>();
  return true;
}

}  // namespace

ToolObjectParser::Status ToolObjectParser::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

std::string ToolObjectParser::final_arguments() const {
  if (!has_arguments_) return "{}";
  if (!arguments_is_string_) return arguments_;
  std::string decoded;
  if (!decode_string(arguments_, &decoded)) return arguments_;
  // A string that holds JSON was the arguments written twice encoded; any other string stays a JSON string.
  // The scanner's check comes first: it bounds the nesting of what later code parses and serializes.
  if (!JsonScanner::accepts(decoded)) return arguments_;
  nlohmann::json inner = nlohmann::json::parse(decoded, nullptr, false);
  return inner.is_discarded() ? arguments_ : decoded;
}

ToolObjectParser::Status ToolObjectParser::start_value(char c) {
  token_.clear();
  scanner_.reset();
  if (key_ == "name") {
    if (c != '"') return fail("the tool call's \"name\" is not a string");
    if (has_name_) return fail("the tool call has two \"name\" keys");
    state_ = State::kName;
  } else if (key_ == "arguments" || key_ == "parameters") {
    if (has_arguments_) return fail("the tool call has two argument objects");
    has_arguments_ = true;
    arguments_is_string_ = c == '"';
    streaming_ = has_name_ && !arguments_is_string_;
    state_ = State::kArguments;
  } else if (strict_keys_ && key_ != "type") {
    return fail("unexpected key \"" + key_ + "\" in a tool call");
  } else {
    state_ = State::kSkip;
  }
  std::string& sink = state_ == State::kArguments ? arguments_ : token_;
  return value_step(scanner_.push(c, sink), c);
}

ToolObjectParser::Status ToolObjectParser::value_step(JsonScanner::Step step, char c) {
  switch (step) {
    case JsonScanner::Step::kAccepted:
      return Status::kRunning;
    case JsonScanner::Step::kRejected:
      return fail(state_ == State::kArguments ? "the tool call's arguments are not valid JSON"
                                              : "a tool call value is not valid JSON");
    case JsonScanner::Step::kComplete:
    case JsonScanner::Step::kCompleteBefore:
      break;
  }
  if (state_ == State::kName) {
    if (!decode_string(token_, &name_) || name_.empty()) return fail("the tool call's name is empty or invalid");
    has_name_ = true;
  }
  state_ = State::kAfterValue;
  // A number value ends on the byte after it, which still has to be read as ',' or '}'.
  if (step == JsonScanner::Step::kCompleteBefore) return push(c);
  return Status::kRunning;
}

ToolObjectParser::Status ToolObjectParser::push(char c) {
  switch (state_) {
    case State::kOpen:
      if (c != '{') return fail("a tool call must be a JSON object");
      state_ = State::kKeyOrEnd;
      return Status::kRunning;
    case State::kKeyOrEnd:
      if (is_ws(c)) return Status::kRunning;
      if (c == '}') {
        state_ = State::kDone;
        return has_name_ ? Status::kDone : fail("the tool call has no \"name\"");
      }
      if (c != '"') return fail("expected a key in the tool call object");
      token_.clear();
      scanner_.reset();
      state_ = State::kKey;
      scanner_.push(c, token_);
      return Status::kRunning;
    case State::kKey: {
      JsonScanner::Step step = scanner_.push(c, token_);
      if (step == JsonScanner::Step::kRejected) return fail("a key in the tool call is not valid JSON");
      if (step == JsonScanner::Step::kComplete) {
        if (!decode_string(token_, &key_)) return fail("a key in the tool call is not valid JSON");
        state_ = State::kColon;
      }
      return Status::kRunning;
    }
    case State::kColon:
      if (is_ws(c)) return Status::kRunning;
      if (c != ':') return fail("expected ':' in the tool call object");
      state_ = State::kValueStart;
      return Status::kRunning;
    case State::kValueStart:
      if (is_ws(c)) return Status::kRunning;
      return start_value(c);
    case State::kName:
    case State::kSkip:
      return value_step(scanner_.push(c, token_), c);
    case State::kArguments:
      return value_step(scanner_.push(c, arguments_), c);
    case State::kAfterValue:
      if (is_ws(c)) return Status::kRunning;
      if (c == ',') {
        state_ = State::kKeyOrEnd;
        return Status::kRunning;
      }
      if (c == '}') {
        state_ = State::kDone;
        return has_name_ ? Status::kDone : fail("the tool call has no \"name\"");
      }
      return fail("expected ',' or '}' in the tool call object");
    case State::kDone:
      return fail("text after the tool call object");
  }
  return fail("internal state");
}

}  // namespace saker::server
