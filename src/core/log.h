#pragma once
// Logging goes through spdlog to stderr, so stdout stays clean for program output (token ids, text).
#include <spdlog/spdlog.h>

namespace saker {

// level: "trace", "debug", "info", "warn", "error", "off". Unknown names keep the current level.
void set_log_level(const std::string& level);
void init_logging();

}  // namespace saker

#define SAKER_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define SAKER_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define SAKER_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define SAKER_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
