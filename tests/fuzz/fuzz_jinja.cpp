// Fuzz target: a chat template is code inside a downloaded model file, so the Jinja lexer, parser and
// interpreter run on arbitrary text here. The input is the template; bytes after its first NUL, when they
// parse as a JSON object, add or replace variables of a fixed chat context (messages with tool calls, tools,
// the special tokens). Every outcome must be a render within the limits or a Status naming the problem:
// never a crash, a hang, a stack overflow or memory past the limits (kInternal would mean an exception the
// interpreter did not expect).
#include <ctime>
#include <string_view>

#include <nlohmann/json.hpp>

#include "formats/json_parse.h"
#include "fuzz_target.h"
#include "text/jinja/template.h"

namespace {

using namespace saker;
namespace jinja = saker::text::jinja;

const char* const kContext = R"({
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi there, caf\u00e9 \ud83d\ude00 <|im_start|>"},
    {"role": "assistant", "content": "<think>x</think>Hello", "reasoning_content": "x",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [true, null]}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"r\": 2}"},
    {"role": "user", "content": ""}
  ],
  "tools": [{"type": "function", "function": {"name": "f", "description": "F.",
             "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}],
  "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>",
  "d": {"b": 1, "a": [1, 2.5, "x"]}, "x": null, "n": -3, "big": 9223372036854775807, "f": 1e300, "s": "a\nb"
})";

// Small limits keep each run fast; they are the same checks the default limits make, just sooner.
jinja::RenderOptions fuzz_render_options() {
  jinja::RenderOptions o;
  o.limits.max_output_bytes = size_t(1) << 20;
  o.limits.max_call_depth = 64;
  o.limits.max_steps = 200'000;
  o.limits.max_memory_bytes = size_t(16) << 20;
  o.strftime = [](const std::string& format) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 15;
    tm.tm_hour = 9;
    tm.tm_min = 30;
    return jinja::format_time(format, tm);
  };
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json base_context = nlohmann::ordered_json::parse(kContext);
  static const jinja::RenderOptions options = fuzz_render_options();

  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);

  auto parsed = jinja::Template::parse(source);
  if (!parsed.ok()) {
    SAKER_FUZZ_CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    saker::fuzz::consume(parsed.status().message().size());
    return 0;
  }

  nlohmann::ordered_json context = base_context;
  if (nul != std::string_view::npos) {
    // The extra variables go through the same depth-limited parser as a request body.
    auto extra = parse_json(input.substr(nul + 1), "context", 0, {.max_depth = 64});
    if (extra.ok() && extra->is_object()) {
      for (const auto& [key, value] : extra->items()) context[key] = value;
    }
  }
  jinja::Value value;
  try {
    value = jinja::from_json(context);
  } catch (const jinja::Error&) {
    return 0;  // nested deeper than the interpreter takes: refused before rendering
  }

  auto rendered = (*parsed)->render(value, options);
  if (rendered.ok()) {
    SAKER_FUZZ_CHECK(rendered->size() <= options.limits.max_output_bytes);
    saker::fuzz::consume(rendered->size());
  } else {
    // kInvalidArgument: a template error or raise_exception(); kOutOfRange: out of memory. kInternal would be
    // an exception the interpreter did not expect (std::out_of_range from a library call, say).
    SAKER_FUZZ_CHECK(rendered.status().code() == StatusCode::kInvalidArgument ||
                     rendered.status().code() == StatusCode::kOutOfRange);
    saker::fuzz::consume(rendered.status().message().size());
  }
  return 0;
}
