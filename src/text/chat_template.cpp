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

Result<MarkedText> ChatTemplate::render_value(const jinja::Value& context) const {
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
  auto out = compiled_->render_marked(context, options);
  if (!out.ok()) return out.status().with_context("chat template");
  return out;
}

template <typename Json>
static Result<jinja::Value> context_value(const Json& context, jinja::Origin origin = jinja::Origin::kTemplate) {
  try {
    return jinja::from_json(context, origin);
  } catch (const jinja::Error& e) {
    return make_error(StatusCode::kInvalidArgument, "chat template context: {}", e.what());
  }
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context) const {
  SAKER_ASSIGN_OR_RETURN(jinja::Value value, context_value(context));
  SAKER_ASSIGN_OR_RETURN(MarkedText out, render_value(value));
  return std::move(out.text);
}

Result<std::string> ChatTemplate::render_ordered(const nlohmann::ordered_json& context) const {
  SAKER_ASSIGN_OR_RETURN(jinja::Value value, context_value(context));
  SAKER_ASSIGN_OR_RETURN(MarkedText out, render_value(value));
  return std::move(out.text);
}

// A message's role, when it is one of the standard names, is trusted: it is a closed set the server checks,
// not text the client wrote, and templates build turn markers from it ('<|' + role + '|>').
static void trust_standard_roles(jinja::Value& context) {
  if (!context.is_dict()) return;
  jinja::Value* messages = context.dict->find(std::string_view("messages"));
  if (!messages || !messages->is_list()) return;
  for (jinja::Value& m : messages->list->items) {
    if (!m.is_dict()) continue;
    jinja::Value* role = m.dict->find(std::string_view("role"));
    if (role && role->is_string() && is_standard_role(role->s)) role->untrusted.reset();
  }
}

template <typename Json>
static Result<jinja::Value> merged_context(const Json& request_context, const Json& template_context) {
  if (!request_context.is_object() && !request_context.is_null())
    return make_error(StatusCode::kInvalidArgument, "chat template: the request context must be an object");
  if (!template_context.is_object() && !template_context.is_null())
    return make_error(StatusCode::kInvalidArgument, "chat template: the template context must be an object");
  SAKER_ASSIGN_OR_RETURN(jinja::Value merged,
                         context_value(request_context.is_null() ? Json::object() : request_context,
                                       jinja::Origin::kRequest));
  trust_standard_roles(merged);
  if (template_context.is_null()) return merged;
  SAKER_ASSIGN_OR_RETURN(jinja::Value own, context_value(template_context));
  for (auto& [k, v] : own.dict->entries) merged.dict->set(k, v);
  return merged;
}

Result<MarkedText> ChatTemplate::render_marked(const nlohmann::json& request_context,
                                               const nlohmann::json& template_context) const {
  SAKER_ASSIGN_OR_RETURN(jinja::Value value, merged_context(request_context, template_context));
  return render_value(value);
}

Result<MarkedText> ChatTemplate::render_marked(const nlohmann::ordered_json& request_context,
                                               const nlohmann::ordered_json& template_context) const {
  SAKER_ASSIGN_OR_RETURN(jinja::Value value, merged_context(request_context, template_context));
  return render_value(value);
}

}  // namespace saker::text
