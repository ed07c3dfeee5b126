#pragma once
// StopMatcher: finds stop strings in streamed text without ever releasing part of a stop string. Text that
// could still grow into a stop string is held back until it can't (or until the end of the stream).
#include <string>
#include <string_view>
#include <vector>

namespace saker {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds text; returns what can be released now. After a stop string is found, stopped() is true, the
  // returned text ends right before it and everything later is dropped.
  std::string push(std::string_view text);
  // The held-back tail at the end of the stream (no stop string was completed).
  std::string flush();
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace saker
