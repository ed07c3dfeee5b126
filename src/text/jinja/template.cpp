#include "text/jinja/template.h"

#include <ctime>

#include "text/jinja/parser.h"

namespace saker::text::jinja {

static std::string located(const Error& e, const std::string& what) {
  if (e.line <= 0) return what + ": " + e.what();
  return what + " line " + std::to_string(e.line) + ", column " + std::to_string(e.column) + ": " + e.what();
}

Result<std::shared_ptr<const Template>> Template::parse(std::string_view source, const LexOptions& options) {
  try {
    auto t = std::make_shared<Template>();
    t->body_ = jinja::parse(tokenize(source, options));
    return std::shared_ptr<const Template>(std::move(t));
  } catch (const Error& e) {
    return make_error(StatusCode::kInvalidArgument, "{}", located(e, "template syntax error at"));
  } catch (const std::bad_alloc&) {
    return make_error(StatusCode::kOutOfRange, "template too large to parse");
  } catch (const std::exception& e) {
    return make_error(StatusCode::kInternal, "template parser: {}", e.what());
  }
}

std::string format_time(const std::string& format, const struct tm& tm) {
  if (format.empty()) return "";
  std::string buf(format.size() * 4 + 64, '\0');
  for (int attempt = 0; attempt < 6; ++attempt) {
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
    if (n > 0) return buf.substr(0, n);
    buf.resize(buf.size() * 4);
  }
  return "";  // a format that expands to nothing (e.g. "%p" in some locales)
}

Result<std::string> Template::render(const Value& context, const RenderOptions& options) const {
  SAKER_ASSIGN_OR_RETURN(MarkedText out, render_marked(context, options));
  return std::move(out.text);
}

Result<MarkedText> Template::render_marked(const Value& context, const RenderOptions& options) const {
  auto strftime = options.strftime;
  if (!strftime) {
    strftime = [](const std::string& fmt) {
      const std::time_t now = std::time(nullptr);
      struct tm tm {};
      localtime_r(&now, &tm);
      return format_time(fmt, tm);
    };
  }
  try {
    Interpreter in(options.limits, strftime);
    return in.render_marked(body_, context);
  } catch (const RaisedError& e) {
    return make_error(StatusCode::kInvalidArgument, "{}", located(e, "template raised an exception at"));
  } catch (const Error& e) {
    return make_error(StatusCode::kInvalidArgument, "{}", located(e, "template error at"));
  } catch (const std::bad_alloc&) {
    return make_error(StatusCode::kOutOfRange, "template rendering ran out of memory");
  } catch (const std::exception& e) {
    return make_error(StatusCode::kInternal, "template interpreter: {}", e.what());
  }
}

}  // namespace saker::text::jinja
