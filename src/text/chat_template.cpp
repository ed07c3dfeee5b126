#include "text/chat_template.h"

#include <ctime>

#include "text/jinja/template.h"

namespace saker::text {

Result<ChatTemplate> ChatTemplate::parse(const std::string& source) {
  auto compiled = jinja::Template::parse(source);
  if (!compiled.ok()) return compiled.status().with_context("chat template");
  ChatTemplate t;
  t.source_ = source;
  t.compiled_ = std::move(compiled).value();
  return t;
}

Result<std::string> ChatTemplate::render_value(const jinja::Value& context) const {
  if (!compiled_) return make_error(StatusCode::kInvalidArgument, "chat template: nothing parsed");
  if (!context.is_dict()) return make_error(StatusCode::kInvalidArgument, "chat template: context must be an object");
  jinja::RenderOptions options;
  if (now_) {
    // A frozen clock is read as UTC so renders do not depend on the machine's time zone.
    const std::time_t t = std::chrono::system_clock::to_time_t(*now_);
    options.strftime = [t](const std::string& fmt) {
      struct tm tm {};
      gmtime_r(&t, &tm);
      return jinja::format_time(fmt, tm);
    };
  }
  auto out = compiled_->render(context, options);
  if (!out.ok()) return out.status().with_context("chat template");
  return out;
}

template <typename Json>
static Result<jinja::Value> context_value(const Json& context) {
  try {
    return jinja::from_json(context);
  } catch (const jinja::Error& e) {
    return make_error(StatusCode::kInvalidArgument, "chat template context: {}", e.what());
  }
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context) const {
  SAKER_ASSIGN_OR_RETURN(jinja::Value value, context_value(context));
  return render_value(value);
}

Result<std::string> ChatTemplate::render_ordered(const nlohmann::ordered_json& context) const {
  SAKER_ASSIGN_OR_RETURN(jinja::Value value, context_value(context));
  return render_value(value);
}

}  // namespace saker::text
