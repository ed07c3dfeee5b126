// `saker info FILE`: architecture, hyper-parameters, tensor table and tokenizer summary of a GGUF file.
#include <fmt/format.h>

#include <map>

#include "cli/commands.h"
#include "formats/gguf.h"

namespace saker::cli {
namespace {

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, units[u]);
}

int run_info(const std::string& path, bool all_tensors) {
  auto file = GgufFile::open(path);
  if (!file.ok()) return fail(file.status().to_string());
  const GgufFile& g = *file;
  const std::string arch = g.architecture();
  fmt::print("file          {}\n", path);
  fmt::print("format        GGUF v{} (alignment {}, data at byte {})\n", g.version(), g.alignment(), g.data_offset());
  fmt::print("architecture  {}\n", arch.empty() ? "(none)" : arch);
  if (auto name = g.get_string("general.name")) fmt::print("name          {}\n", *name);

  fmt::print("\nhyper-parameters\n");
  const std::string prefix = arch + ".";
  for (const auto& [key, value] : g.metadata()) {
    if (!arch.empty() && key.rfind(prefix, 0) == 0) fmt::print("  {:<40} {}\n", key.substr(prefix.size()), value.to_display_string());
  }

  fmt::print("\ntokenizer\n");
  if (auto model = g.get_string("tokenizer.ggml.model")) {
    fmt::print("  model {}, pre-tokenizer {}\n", *model, g.get_string("tokenizer.ggml.pre").value_or("(none)"));
    if (const GgufArray* tokens = g.get_array("tokenizer.ggml.tokens")) fmt::print("  vocab {} tokens\n", tokens->size());
    if (const GgufArray* merges = g.get_array("tokenizer.ggml.merges")) fmt::print("  merges {}\n", merges->size());
    for (const char* k : {"bos_token_id", "eos_token_id", "padding_token_id", "unknown_token_id"}) {
      if (auto id = g.get_int(std::string("tokenizer.ggml.") + k)) fmt::print("  {} {}\n", k, *id);
    }
    if (auto tmpl = g.get_string("tokenizer.chat_template")) fmt::print("  chat template: {} bytes\n", tmpl->size());
  } else {
    fmt::print("  (none)\n");
  }

  fmt::print("\nother metadata\n");
  for (const auto& [key, value] : g.metadata()) {
    if ((!arch.empty() && key.rfind(prefix, 0) == 0) || key.rfind("tokenizer.", 0) == 0) continue;
    fmt::print("  {:<42} {}\n", key, value.to_display_string());
  }

  uint64_t total = 0;
  std::map<std::string, std::pair<int, uint64_t>> by_type;
  for (const auto& t : g.tensors()) {
    total += t.n_bytes;
    auto& e = by_type[std::string(dtype_name(t.dtype))];
    e.first++;
    e.second += t.n_bytes;
  }
  fmt::print("\ntensors: {} ({})\n", g.tensors().size(), human_bytes(total));
  for (const auto& [type, e] : by_type) fmt::print("  {:<8} {:>5} tensors {:>12}\n", type, e.first, human_bytes(e.second));
  const size_t limit = all_tensors ? g.tensors().size() : std::min<size_t>(g.tensors().size(), 40);
  if (limit) fmt::print("\n  {:<40} {:<8} {:<24} {:>12}\n", "name", "type", "shape", "bytes");
  for (size_t i = 0; i < limit; ++i) {
    const auto& t = g.tensors()[i];
    std::string shape = "[";
    for (size_t d = 0; d < t.shape().size(); ++d) shape += fmt::format("{}{}", d ? ", " : "", t.shape()[d]);
    shape += "]";
    fmt::print("  {:<40} {:<8} {:<24} {:>12}\n", t.name, dtype_name(t.dtype), shape, human_bytes(t.n_bytes));
  }
  if (limit < g.tensors().size()) fmt::print("  ... {} more (--all-tensors lists them)\n", g.tensors().size() - limit);
  return 0;
}

}  // namespace

Command make_info_command() {
  struct State {
    CLI::App* sub = nullptr;
    std::string path;
    bool all_tensors = false;
  };
  auto st = std::make_shared<State>();
  return {
      [st](CLI::App& app) {
        st->sub = app.add_subcommand("info", "Show a model file's architecture, hyper-parameters, tensors and tokenizer");
        st->sub->add_option("file", st->path, "GGUF file")->required();
        st->sub->add_flag("--all-tensors", st->all_tensors, "List every tensor (default: the first 40)");
      },
      [st] { return st->sub && st->sub->parsed(); },
      [st] { return run_info(st->path, st->all_tensors); },
  };
}

}  // namespace saker::cli
