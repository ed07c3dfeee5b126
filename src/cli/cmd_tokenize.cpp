// `saker tokenize --model FILE [--ids]`: tokenizes all of stdin with the model's tokenizer and prints the
// ids on one line (--ids) or one "id<TAB>piece" line per token.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "formats/gguf.h"
#include "text/tokenizer.h"

namespace saker::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  bool ids_only = false;
  bool add_special = false;
  bool no_parse_special = false;
};

// Shows a piece on one line: backslash escapes for controls and backslash, \xNN for bytes that are not
// valid UTF-8 (half of a character split across tokens).
std::string escape_piece(const std::string& piece) {
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    const auto c = static_cast<unsigned char>(piece[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // Copy a whole valid multi-byte character, or escape the stray byte.
      size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
      bool valid = n > 0 && i + n <= piece.size();
      for (size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(piece[i + k]) & 0xC0) == 0x80;
      if (valid) {
        out.append(piece, i, n);
        i += n;
        continue;
      }
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  return out;
}

int run_tokenize(const TokenizeOptions& opt) {
  auto file = GgufFile::open(opt.model);
  if (!file.ok()) return fail(file.status().to_string());
  auto tokenizer = text::Tokenizer::from_gguf(*file);
  if (!tokenizer.ok()) return fail(tokenizer.status().to_string());

  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (std::cin.bad()) return fail("could not read stdin");

  const std::vector<int32_t> ids = (*tokenizer)->encode(input, opt.add_special, !opt.no_parse_special);
  if (opt.ids_only) {
    fmt::print("{}\n", fmt::join(ids, " "));
  } else {
    for (int32_t id : ids) fmt::print("{}\t{}\n", id, escape_piece((*tokenizer)->token_to_piece(id)));
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

Command make_tokenize_command() {
  auto opt = std::make_shared<TokenizeOptions>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  Command c;
  c.setup = [opt, sub](CLI::App& app) {
    CLI::App* s = app.add_subcommand(
        "tokenize",
        "Tokenize stdin with a model's tokenizer. The text is all of stdin, byte for byte: a trailing newline "
        "(as `echo` writes) is tokenized too; use `printf` or `echo -n` to avoid it. Prints one "
        "\"id<TAB>piece\" line per token (pieces escaped: \\n, \\t, \\\\, \\xNN for a partial character), or "
        "with --ids the ids on one line.");
    s->add_option("-m,--model", opt->model, "GGUF file whose tokenizer to use")->required();
    s->add_flag("--ids", opt->ids_only, "Print only the token ids, space-separated on one line");
    s->add_flag("--add-special", opt->add_special, "Add BOS/EOS as the model's tokenizer asks (off by default)");
    s->add_flag("--no-parse-special", opt->no_parse_special,
                "Tokenize special tokens written in the text (e.g. <|im_start|>) as plain text");
    *sub = s;
  };
  c.is_selected = [sub] { return *sub != nullptr && (*sub)->parsed(); };
  c.run = [opt] { return run_tokenize(*opt); };
  return c;
}

}  // namespace saker::cli
