#include "engine/stop_matcher.h"

#include <algorithm>

namespace saker {

namespace {
// Keeps a UTF-8 character whole: never cut right before a continuation byte.
size_t utf8_safe_cut(const std::string& s, size_t cut) {
  while (cut > 0 && cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}
}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  // The earliest complete stop string wins.
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    if (at < best) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  const size_t cut = utf8_safe_cut(held_, held_.size() - keep);
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace saker
