// `saker synth --arch qwen3|qwen2|llama|gemma3 --preset tiny|tiny-gqa|0.6b|... --type TYPE -o F.gguf`: a
// random-weight model of a real geometry, for tests and speed runs without downloads.
#include <fmt/format.h>

#include <chrono>

#include "cli/commands.h"
#include "models/synth.h"

namespace saker::cli {

Command make_synth_command() {
  auto o = std::make_shared<SynthOptions>();
  auto out = std::make_shared<std::string>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [o, out, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("synth", "Write a random-weight model of a real geometry (GGUF)");
        *sub = s;
        s->add_option("--arch", o->arch, "Architecture: qwen3, qwen2, llama, gemma3")->capture_default_str();
        s->add_option("--preset", o->preset,
                      "Geometry: tiny; tiny-gqa (splits over 2 and 4 tensor-parallel ranks); qwen3 0.6b, 8b, 32b; "
                      "qwen2 1.5b, 7b")
            ->capture_default_str();
        s->add_option("--type", o->type,
                      "Weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl q4_k q5_k q6_k iq4_xs q4_k_m q5_k_m")
            ->capture_default_str();
        s->add_option("--seed", o->seed, "Random seed")->capture_default_str();
        s->add_option("-o,--output", *out, "Output .gguf file")->required();
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [o, out] {
        const auto t0 = std::chrono::steady_clock::now();
        o->progress = [](size_t done, size_t total) {
          if (done == total || done % 16 == 0) fmt::print(stderr, "\rsynth: {}/{} tensors", done, total);
          if (done == total) fmt::print(stderr, "\n");
        };
        const Status s = write_synthetic_model(*o, *out);
        if (!s.ok()) return fail(s.to_string());
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print("wrote {} ({} {} {}) in {:.1f} s\n", *out, o->arch, o->preset, o->type, sec);
        return 0;
      },
  };
}

}  // namespace saker::cli
