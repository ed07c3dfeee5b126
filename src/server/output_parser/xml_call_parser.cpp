#include "server/output_parser/xml_call_parser.h"

#include <string_view>

#include "server/output_parser/json_scanner.h"

namespace saker::server {
namespace {

constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

CallBodyParser::Status XmlCallParser::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

bool XmlCallParser::schema_says_string(const std::string& param) const {
  if (tools_ == nullptr || !tools_->is_array()) return false;
  for (const nlohmann::json& tool : *tools_) {
    if (!tool.is_object()) continue;
    const nlohmann::json& fn = tool.contains("function") ? tool["function"] : tool;
    if (!fn.is_object() || fn.value("name", std::string()) != name_) continue;
    const nlohmann::json* params = nullptr;
    if (fn.contains("parameters")) params = &fn["parameters"];
    else if (fn.contains("input_schema")) params = &fn["input_schema"];  // Anthropic tools
    if (params == nullptr || !params->is_object() || !params->contains("properties")) return false;
    const nlohmann::json& props = (*params)["properties"];
    if (!props.is_object() || !props.contains(param) || !props[param].is_object()) return false;
    const nlohmann::json& type = props[param].contains("type") ? props[param]["type"] : nlohmann::json();
    if (type.is_string()) return type.get<std::string>() == "string";
    if (type.is_array()) {
      bool string = false, other = false;
      for (const nlohmann::json& t : type) {
        if (t == "string") string = true;
        else if (t != "null") other = true;
      }
      return string && !other;
    }
    return false;
  }
  return false;
}

void XmlCallParser::add_parameter() {
  std::string value = token_.substr(0, token_.size() - kParameterClose.size());
  if (!value.empty() && value.front() == '\n') value.erase(0, 1);
  if (!value.empty() && value.back() == '\n') value.pop_back();
  nlohmann::json j;
  if (!schema_says_string(param_) && JsonScanner::accepts(value)) j = nlohmann::json::parse(value, nullptr, false);
  if (j.is_discarded() || (j.is_null() && value != "null")) j = value;
  arguments_ += n_params_ == 0 ? "{" : ", ";
  arguments_ += dump(nlohmann::json(param_)) + ": " + dump(j);
  ++n_params_;
}

CallBodyParser::Status XmlCallParser::push(char c) {
  switch (state_) {
    case State::kOpen:
      token_ += c;
      if (!starts_with(kFunctionOpen, token_)) return fail("expected <function=NAME> in the tool call");
      if (token_.size() == kFunctionOpen.size()) {
        token_.clear();
        state_ = State::kName;
      }
      return Status::kRunning;
    case State::kName:
    case State::kParamName:
      if (c == '>') {
        if (token_.empty()) return fail("empty function or parameter name in the tool call");
        if (state_ == State::kName) {
          name_ = token_;
          has_name_ = true;
          state_ = State::kBetween;
        } else {
          param_ = token_;
          state_ = State::kValue;
        }
        token_.clear();
        return Status::kRunning;
      }
      if (c == '<' || c == '\n') return fail("unterminated function or parameter name in the tool call");
      token_ += c;
      return Status::kRunning;
    case State::kBetween:
      if (is_ws(c)) return Status::kRunning;
      if (c != '<') return fail("expected <parameter=NAME> or </function> in the tool call");
      token_.assign(1, '<');
      state_ = State::kTag;
      return Status::kRunning;
    case State::kTag:
      token_ += c;
      if (token_ == kParameterOpen) {
        token_.clear();
        state_ = State::kParamName;
      } else if (token_ == kFunctionClose) {
        token_.clear();
        state_ = State::kDone;
        return Status::kDone;
      } else if (!starts_with(kParameterOpen, token_) && !starts_with(kFunctionClose, token_)) {
        return fail("expected <parameter=NAME> or </function> in the tool call");
      }
      return Status::kRunning;
    case State::kValue:
      token_ += c;
      if (token_.size() >= kParameterClose.size() &&
          std::string_view(token_).substr(token_.size() - kParameterClose.size()) == kParameterClose) {
        add_parameter();
        token_.clear();
        state_ = State::kBetween;
      }
      return Status::kRunning;
    case State::kDone:
      return fail("text after </function>");
  }
  return fail("internal state");
}

}  // namespace saker::server
