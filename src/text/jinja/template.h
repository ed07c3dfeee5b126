#pragma once
// Template: a parsed Jinja template, rendered any number of times (const, thread-safe to share).
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "text/jinja/ast.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/lexer.h"
#include "text/jinja/value.h"

namespace saker::text::jinja {

struct RenderOptions {
  RenderLimits limits;
  // strftime_now(format); when empty, strftime_now() formats the current local time.
  std::function<std::string(const std::string&)> strftime;
};

class Template {
 public:
  // A syntax error is kInvalidArgument: "template line L, column C: message".
  static Result<std::shared_ptr<const Template>> parse(std::string_view source, const LexOptions& options = {});

  // context: a dict of variables. A raise_exception() in the template or a runtime error is kInvalidArgument
  // naming the line and column; nothing the template does aborts the process.
  Result<std::string> render(const Value& context, const RenderOptions& options = {}) const;
  // The same text, with the byte ranges that came from untrusted strings of the context (from_json with
  // Origin::kRequest), carried through the template's expressions as value.h describes.
  Result<MarkedText> render_marked(const Value& context, const RenderOptions& options = {}) const;

 private:
  Body body_;
};

// Python's time.strftime on a broken-down time (glibc's formats, including %-d).
std::string format_time(const std::string& format, const struct tm& tm);

}  // namespace saker::text::jinja
