#pragma once
// CallBodyParser: what the output parser needs from a parser of one tool call's body, whatever its syntax.
#include <string>

namespace saker::server {

class CallBodyParser {
 public:
  enum class Status {
    kRunning,  // the byte was consumed, the call is not finished
    kDone,     // the byte finished the call
    kError,    // the byte does not fit; it is not consumed and error() says why
  };

  virtual ~CallBodyParser() = default;
  virtual Status push(char c) = 0;
  virtual bool has_name() const = 0;
  virtual const std::string& name() const = 0;
  // True once the arguments can be passed on as they grow: arguments_text() then only ever grows, and
  // final_arguments() starts with it.
  virtual bool arguments_streaming() const = 0;
  virtual const std::string& arguments_text() const = 0;
  // After kDone: the whole arguments JSON text.
  virtual std::string final_arguments() const = 0;
  virtual const std::string& error() const = 0;
};

}  // namespace saker::server
