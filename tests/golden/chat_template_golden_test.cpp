// Chat templates against Python jinja2: every case in ../shared/data/chat_templates/golden reproduced byte for
// byte (rendered cases) or refused (error cases; a SecurityError, an artefact of jinja2's sandbox, may render).
#include <gtest/gtest.h>

#include <filesystem>

#include "test_paths.h"
#include "text/chat_template.h"

namespace saker::testing {
namespace {

TEST(ChatTemplateGolden, EveryCaseMatchesJinja2) {
  SAKER_REQUIRE_SHARED(dir, "chat_templates");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir / "golden"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  int total = 0, total_pass = 0;
  for (const auto& file : files) {
    const auto golden = nlohmann::ordered_json::parse(read_file(file));
    const std::string name = golden.at("template").get<std::string>();
    SCOPED_TRACE(name);
    auto t = text::ChatTemplate::parse(read_file(dir / "templates" / name));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    t->set_now(std::chrono::system_clock::from_time_t(1768469400));  // 2026-01-15 09:30:00, as render.py
    int pass = 0, n = 0;
    for (const auto& c : golden.at("cases")) {
      ++n;
      const std::string case_name = c.at("name").get<std::string>();
      auto r = t->render_ordered(c.at("context"));
      if (c.contains("rendered")) {
        if (!r.ok()) {
          ADD_FAILURE() << name << " / " << case_name << ": " << r.status().to_string();
        } else if (r.value() != c.at("rendered").get<std::string>()) {
          ADD_FAILURE() << name << " / " << case_name << " differs\n--- got\n"
                        << r.value() << "\n--- want\n"
                        << c.at("rendered").get<std::string>();
        } else {
          ++pass;
        }
      } else {
        const std::string error = c.at("error").get<std::string>();
        if (!r.ok() || error.rfind("SecurityError", 0) == 0) ++pass;
        else ADD_FAILURE() << name << " / " << case_name << " rendered, but jinja2 failed: " << error;
      }
    }
    std::printf("%-55s %d/%d\n", name.c_str(), pass, n);
    total += n;
    total_pass += pass;
  }
  std::printf("chat template golden: %d/%d cases\n", total_pass, total);
}

}  // namespace
}  // namespace saker::testing
