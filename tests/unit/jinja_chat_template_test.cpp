// ChatTemplate: the text/ facade over the Jinja interpreter.
#include <gtest/gtest.h>

#include "text/chat_template.h"

namespace saker::text {
namespace {

TEST(JinjaChatTemplate, RendersMessages) {
  auto t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
      "{% if add_generation_prompt %}<|assistant|>{% endif %}");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  nlohmann::json ctx = {{"bos_token", "<s>"},
                        {"add_generation_prompt", true},
                        {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  auto r = t->render(ctx);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value(), "<s><|user|>Hi\n<|assistant|>");
}

TEST(JinjaChatTemplate, SyntaxErrorNamesLine) {
  auto t = ChatTemplate::parse("ok\n{% for m in messages %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 2"), std::string::npos) << t.status().message();
}

TEST(JinjaChatTemplate, RaiseExceptionIsInvalidArgument) {
  auto t = ChatTemplate::parse("{% if messages|length == 0 %}{{ raise_exception('No messages!') }}{% endif %}");
  ASSERT_TRUE(t.ok());
  auto r = t->render(nlohmann::json{{"messages", nlohmann::json::array()}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("No messages!"), std::string::npos);
}

TEST(JinjaChatTemplate, FrozenClock) {
  auto t = ChatTemplate::parse("{{ strftime_now('%Y-%m-%d %H:%M:%S %d %B') }}");
  ASSERT_TRUE(t.ok());
  t->set_now(std::chrono::system_clock::from_time_t(1768469400));  // 2026-01-15 09:30:00 UTC
  auto r = t->render(nlohmann::json::object());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value(), "2026-01-15 09:30:00 15 January");
}

TEST(JinjaChatTemplate, OrderedContextKeepsKeyOrder) {
  auto t = ChatTemplate::parse("{{ tool|tojson }}");
  ASSERT_TRUE(t.ok());
  const char* json = R"({"tool": {"type": "function", "function": {"name": "f"}}})";
  auto ordered = t->render_ordered(nlohmann::ordered_json::parse(json));
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ(ordered.value(), R"({"type": "function", "function": {"name": "f"}})");
  auto sorted = t->render(nlohmann::json::parse(json));
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(sorted.value(), R"({"function": {"name": "f"}, "type": "function"})");
}

TEST(JinjaChatTemplate, ContextMustBeAnObject) {
  auto t = ChatTemplate::parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->render(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace saker::text
