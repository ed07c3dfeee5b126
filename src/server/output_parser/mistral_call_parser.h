#pragma once
// MistralNamedCallParser: one call in the newer Mistral syntax that follows [TOOL_CALLS]:
//   NAME[ARGS]{...}     or     NAME[CALL_ID]ID[ARGS]{...}
// (The older syntax, a JSON array of {"name", "arguments"} objects, goes through ToolObjectParser.)
#include <string>

#include "server/output_parser/call_body_parser.h"
#include "server/output_parser/json_scanner.h"

namespace saker::server {

class MistralNamedCallParser : public CallBodyParser {
 public:
  Status push(char c) override;
  bool has_name() const override { return has_name_; }
  const std::string& name() const override { return name_; }
  bool arguments_streaming() const override { return state_ == State::kArguments || state_ == State::kDone; }
  const std::string& arguments_text() const override { return arguments_; }
  std::string final_arguments() const override { return arguments_; }
  const std::string& error() const override { return error_; }

 private:
  enum class State { kName, kTag, kCallId, kArgumentsStart, kArguments, kDone };

  Status fail(std::string message);

  State state_ = State::kName;
  JsonScanner scanner_;
  std::string token_;
  bool has_name_ = false;
  std::string name_;
  std::string arguments_;
  std::string error_;
};

}  // namespace saker::server
