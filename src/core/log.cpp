#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/env.h"

namespace saker {

void init_logging() {
  static bool done = false;
  if (done) return;
  done = true;
  auto logger = spdlog::stderr_color_mt("saker");
  logger->set_pattern("%^[%L %H:%M:%S.%e]%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  if (const char* level = debug_env().log_level) set_log_level(level);
}

void set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") return;
  spdlog::set_level(parsed);
}

}  // namespace saker
