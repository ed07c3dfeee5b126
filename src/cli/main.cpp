// The `saker` executable: one subcommand per cmd_*.cpp file, registered through cli/commands.h.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/log.h"
#include "saker/version.h"

namespace saker::cli {
int fail(const std::string& message) {
  fmt::print(stderr, "error: {}\n", message);
  return 1;
}
}  // namespace saker::cli

int main(int argc, char** argv) {
  saker::init_logging();
  CLI::App app{"saker: LLM inference engine and server"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  std::string log_level;
  app.add_flag("--version", show_version, "Print the version and build features");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")->default_str("info");

  std::vector<saker::cli::Command> commands = saker::cli::all_commands();
  for (auto& c : commands) c.setup(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!log_level.empty()) saker::set_log_level(log_level);
  if (show_version) {
    fmt::print("saker {} (cuda backend: {})\n", SAKER_VERSION, SAKER_CUDA_ENABLED ? "compiled" : "not compiled");
    return 0;
  }
  for (auto& c : commands) {
    if (c.is_selected()) return c.run();
  }
  fmt::print("{}", app.help());
  return 0;
}
