#pragma once
// Each subcommand lives in its own cmd_NAME.cpp and exposes make_NAME_command().
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace saker::cli {

struct Command {
  std::function<void(CLI::App&)> setup;  // adds the subcommand and its options
  std::function<bool()> is_selected;
  std::function<int()> run;              // exit code
};

Command make_info_command();
Command make_tokenize_command();
Command make_run_command();
Command make_synth_command();
Command make_convert_command();
Command make_serve_command();
Command make_template_command();
Command make_bench_command();
Command make_pull_command();

inline std::vector<Command> all_commands() {
  return {make_info_command(), make_tokenize_command(), make_run_command(), make_synth_command(),
          make_convert_command(), make_serve_command(), make_template_command(), make_bench_command(),
          make_pull_command()};
}

// Prints "error: <message>" to stderr and returns the exit code for a failed command.
int fail(const std::string& message);

}  // namespace saker::cli
