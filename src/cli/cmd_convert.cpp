// `saker convert MODEL -o OUT.gguf --type TYPE`: an HF folder (or a GGUF, to re-quantise) to GGUF.
#include <fmt/format.h>

#include <chrono>

#include "cli/commands.h"
#include "models/convert.h"

namespace saker::cli {

Command make_convert_command() {
  struct Args {
    std::string input, output;
    ConvertOptions options;
  };
  auto a = std::make_shared<Args>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [a, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("convert", "Convert a Hugging Face folder (or re-quantise a GGUF) to GGUF");
        *sub = s;
        s->add_option("model", a->input, "HF folder (config.json + safetensors) or .gguf file")->required();
        s->add_option("-o,--output", a->output, "Output .gguf file")->required();
        s->add_option("--type", a->options.type,
                      "f32 f16 bf16 q8_0 q4_0 q4_k q5_k q6_k iq4_xs q4_k_m q5_k_m (norms stay f32)")
            ->capture_default_str();
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [a] {
        const auto t0 = std::chrono::steady_clock::now();
        auto w = ModelWeights::open(a->input);
        if (!w.ok()) return fail(w.status().to_string());
        a->options.progress = [](size_t done, size_t total) {
          fmt::print(stderr, "\rconvert: {}/{} tensors", done, total);
          if (done == total) fmt::print(stderr, "\n");
        };
        const Status s = convert_to_gguf(**w, a->options, a->output);
        if (!s.ok()) return fail(s.to_string());
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print("wrote {} ({}, {}) in {:.1f} s\n", a->output, (*w)->hparams().summary(), a->options.type, sec);
        return 0;
      },
  };
}

}  // namespace saker::cli
