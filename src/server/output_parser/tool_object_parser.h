#pragma once
// ToolObjectParser: reads one JSON tool-call object, {"name": "f", "arguments": {...}} (or "parameters"),
// byte by byte. It learns the name as soon as it is written and exposes the arguments' text while it streams,
// so the caller can send a tool-call start and argument deltas before the object is finished.
#include <string>

#include "server/output_parser/call_body_parser.h"
#include "server/output_parser/json_scanner.h"

namespace saker::server {

class ToolObjectParser : public CallBodyParser {
 public:

  // strict_keys: any key other than name / type / arguments / parameters is an error (for output that is
  // only guessed to be a tool call, like Llama 3's bare JSON); otherwise unknown keys are skipped.
  explicit ToolObjectParser(bool strict_keys = false) : strict_keys_(strict_keys) {}

  // Feeds one byte; the first must be '{' (leading whitespace is the caller's).
  Status push(char c) override;

  bool has_name() const override { return has_name_; }
  const std::string& name() const override { return name_; }
  // True once the arguments value has begun after the name was known and is JSON text that can be passed
  // on as it grows (not a string that will be decoded): arguments_text() then only ever grows.
  bool arguments_streaming() const override { return streaming_; }
  const std::string& arguments_text() const override { return arguments_; }
  // After kDone: the arguments as a JSON text ("{}" when the object had none; a JSON-encoded string value is
  // decoded when it holds JSON).
  std::string final_arguments() const override;
  // Why the last kError happened.
  const std::string& error() const override { return error_; }

 private:
  enum class State { kOpen, kKeyOrEnd, kKey, kColon, kValueStart, kName, kArguments, kSkip, kAfterValue, kDone };

  Status fail(std::string message);
  Status start_value(char c);
  Status value_step(JsonScanner::Step step, char c);

  bool strict_keys_;
  State state_ = State::kOpen;
  JsonScanner scanner_;
  std::string token_;  // raw text of the key or name string, or of a skipped value
  std::string key_;
  bool has_name_ = false;
  bool has_arguments_ = false;
  bool streaming_ = false;
  bool arguments_is_string_ = false;
  std::string name_;
  std::string arguments_;
  std::string error_;
};

}  // namespace saker::server
