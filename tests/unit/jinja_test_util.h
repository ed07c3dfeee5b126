#pragma once
// Helpers for the Jinja interpreter tests: render a template against a JSON context the way chat templates
// are rendered (trim_blocks, lstrip_blocks, strftime_now frozen at 2026-01-15 09:30:00).
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/template.h"

namespace saker::testing {

struct JinjaCase {
  const char* templ;
  const char* context;   // JSON object
  const char* expected;  // Python jinja2's render
};

inline text::jinja::RenderOptions frozen_render_options() {
  text::jinja::RenderOptions o;
  o.strftime = [](const std::string& fmt) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 15;
    tm.tm_hour = 9;
    tm.tm_min = 30;
    const std::time_t t = timegm(&tm);
    gmtime_r(&t, &tm);
    return text::jinja::format_time(fmt, tm);
  };
  return o;
}

inline Result<std::string> render_jinja(const std::string& templ, const std::string& context_json = "{}",
                                        const text::jinja::RenderOptions& options = frozen_render_options()) {
  auto t = text::jinja::Template::parse(templ);
  if (!t.ok()) return t.status();
  return t.value()->render(text::jinja::from_json(nlohmann::ordered_json::parse(context_json)), options);
}

// Renders each case and compares with jinja2's output byte for byte.
inline void expect_jinja_cases(const JinjaCase* cases, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    SCOPED_TRACE(std::string("template: ") + cases[k].templ);
    auto r = render_jinja(cases[k].templ, cases[k].context);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r.value(), cases[k].expected);
  }
}

}  // namespace saker::testing
