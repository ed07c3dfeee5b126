#pragma once
// XmlCallParser: one Qwen3-Coder style call body,
//   <function=NAME>\n<parameter=P>\nvalue\n</parameter>\n...</function>
// Each parameter becomes a JSON member when its </parameter> arrives. A value is a JSON string when the
// tool's schema says "string"; otherwise it is read as JSON when it parses (numbers, booleans, objects) and
// kept as a string when it does not.
#include <string>

#include <nlohmann/json.hpp>

#include "server/output_parser/call_body_parser.h"

namespace saker::server {

class XmlCallParser : public CallBodyParser {
 public:
  // tools: the request's OpenAI "tools" array (may be null or empty), used for parameter types.
  explicit XmlCallParser(const nlohmann::json* tools) : tools_(tools) {}

  Status push(char c) override;
  bool has_name() const override { return has_name_; }
  const std::string& name() const override { return name_; }
  bool arguments_streaming() const override { return has_name_; }
  const std::string& arguments_text() const override { return arguments_; }
  std::string final_arguments() const override { return n_params_ == 0 ? "{}" : arguments_ + "}"; }
  const std::string& error() const override { return error_; }

 private:
  enum class State { kOpen, kName, kBetween, kTag, kParamName, kValue, kDone };

  Status fail(std::string message);
  bool schema_says_string(const std::string& param) const;
  void add_parameter();

  const nlohmann::json* tools_;
  State state_ = State::kOpen;
  std::string token_;  // the tag or value being read
  std::string param_;
  bool has_name_ = false;
  int n_params_ = 0;
  std::string name_;
  std::string arguments_;
  std::string error_;
};

}  // namespace saker::server
