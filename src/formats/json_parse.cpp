// parse_json: depth scan, then nlohmann's parser; parse errors are mapped to file byte offsets.
#include "formats/json_parse.h"

#include <set>
#include <vector>

namespace saker {
namespace {

// Scans the text once for the nesting depth (strings and escapes skipped) so that nothing recursive ever
// sees a deeper document. Returns the offset of the first bracket past the limit, or -1.
int64_t find_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[': case '{':
        if (++depth > max_depth) return static_cast<int64_t>(i);
        break;
      case ']': case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return -1;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the code adds nothing for a user.
std::string strip_exception_id(const std::string& what) {
  if (!what.empty() && what[0] == '[') {
    const size_t end = what.find("] ");
    if (end != std::string::npos) return what.substr(end + 2);
  }
  return what;
}

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text, const std::string& what, uint64_t base_offset,
                                  const JsonParseOptions& options) {
  if (const int64_t at = find_too_deep(text, options.max_depth); at >= 0) {
    return make_error(StatusCode::kCorruptFile, "{}: JSON nested deeper than {} levels at byte {}", what,
                      options.max_depth, base_offset + static_cast<uint64_t>(at));
  }
  // Duplicate keys: one set of seen keys per open object.
  std::vector<std::set<std::string>> seen;
  std::string duplicate;
  nlohmann::json::parser_callback_t callback = nullptr;
  if (options.reject_duplicate_keys) {
    callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      switch (event) {
        case nlohmann::json::parse_event_t::object_start: seen.emplace_back(); break;
        case nlohmann::json::parse_event_t::object_end:
          if (!seen.empty()) seen.pop_back();
          break;
        case nlohmann::json::parse_event_t::key:
          if (!seen.empty() && parsed.is_string() && !seen.back().insert(parsed.get<std::string>()).second &&
              duplicate.empty()) {
            duplicate = parsed.get<std::string>();
          }
          break;
        default: break;
      }
      return true;
    };
  }
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                  /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 (the first character); 0 when unknown.
    const uint64_t at = base_offset + (e.byte > 0 ? e.byte - 1 : 0);
    return make_error(StatusCode::kCorruptFile, "{}: invalid JSON at byte {}: {}", what, at,
                      strip_exception_id(e.what()));
  } catch (const nlohmann::json::exception& e) {
    return make_error(StatusCode::kCorruptFile, "{}: invalid JSON: {}", what, strip_exception_id(e.what()));
  }
  if (!duplicate.empty()) {
    return make_error(StatusCode::kCorruptFile, "{}: key \"{}\" appears twice in one JSON object (bytes {}..{})",
                      what, duplicate, base_offset, base_offset + text.size());
  }
  return value;
}

std::string json_brief(const nlohmann::json& value) {
  std::string dump = value.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  if (dump.size() > 60) dump = dump.substr(0, 57) + "...";
  return fmt::format("{} {}", value.type_name(), dump);
}

}  // namespace saker
