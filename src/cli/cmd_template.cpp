// `saker template FILE.jinja [--context CONTEXT.json] [--now ISO8601]`: renders a chat template the way the
// server does, for template authors. CONTEXT.json is an object of template variables (messages, tools,
// add_generation_prompt, bos_token, ...). Prints the render, or the template's error and exits non-zero.
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "text/chat_template.h"

namespace saker::cli {
namespace {

struct TemplateOptions {
  std::string file;
  std::string context;
  std::string now;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(StatusCode::kIoError, "cannot open {}", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "2026-01-15T09:30:00", "2026-01-15 09:30", optionally with a trailing "Z": read as UTC.
Result<std::chrono::system_clock::time_point> parse_iso8601(const std::string& text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char sep = 0;
  int consumed = 0;
  const int n = std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &year, &month, &day, &sep, &hour, &minute,
                            &second, &consumed);
  bool ok = false;
  if (n == 7) {
    ok = true;
  } else {
    consumed = 0;
    second = 0;
    const int m = std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d%n", &year, &month, &day, &sep, &hour, &minute,
                              &consumed);
    if (m == 6) ok = true;
    else if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &year, &month, &day, &consumed) == 3) ok = true, sep = 'T';
  }
  const std::string rest = ok ? text.substr(size_t(consumed)) : text;
  if (!ok || (sep != 'T' && sep != ' ') || !(rest.empty() || rest == "Z") || month < 1 || month > 12 || day < 1 ||
      day > 31 || hour > 23 || minute > 59 || second > 60)
    return make_error(StatusCode::kInvalidArgument, "--now: expected ISO 8601 like 2026-01-15T09:30:00, got '{}'",
                      text);
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

int run_template(const TemplateOptions& o) {
  auto source = read_text(o.file);
  if (!source.ok()) return fail(source.status().message());
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  if (!o.context.empty()) {
    auto text = read_text(o.context);
    if (!text.ok()) return fail(text.status().message());
    try {
      context = nlohmann::ordered_json::parse(text.value());
    } catch (const nlohmann::json::exception& e) {
      return fail(fmt::format("{}: not valid JSON: {}", o.context, e.what()));
    }
    if (!context.is_object()) return fail(o.context + ": expected a JSON object of template variables");
  }
  auto t = text::ChatTemplate::parse(source.value());
  if (!t.ok()) return fail(fmt::format("{}: {}", o.file, t.status().message()));
  if (!o.now.empty()) {
    auto now = parse_iso8601(o.now);
    if (!now.ok()) return fail(now.status().message());
    t->set_now(now.value());
  }
  auto out = t->render_ordered(context);
  if (!out.ok()) return fail(fmt::format("{}: {}", o.file, out.status().message()));
  std::fwrite(out.value().data(), 1, out.value().size(), stdout);
  return 0;
}

}  // namespace

Command make_template_command() {
  auto o = std::make_shared<TemplateOptions>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [o, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("template", "Render a Jinja chat template with a JSON context");
        *sub = s;
        s->add_option("file", o->file, "Template file (.jinja)")->required();
        s->add_option("--context", o->context, "JSON object of template variables (messages, tools, ...)");
        s->add_option("--now", o->now, "Freeze strftime_now() at this UTC time, e.g. 2026-01-15T09:30:00");
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [o] { return run_template(*o); },
  };
}

}  // namespace saker::cli
