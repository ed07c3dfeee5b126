// `saker run -m MODEL -p PROMPT`: generate text on the CPU, streaming it, then report tokens/s.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/device_args.h"
#include "cli/model_loading.h"
#include "cli/speculation_args.h"
#include "engine/engine_generator.h"
#include "engine/generator.h"

namespace saker::cli {
namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  int32_t n_predict = 128;
  int64_t n_ctx = 0;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  int64_t seed = -1;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;
  std::vector<std::string> stop;
  bool print_ids = false;
  bool ignore_eos = false;
  bool no_special = false;
  DeviceArgs dev;  // --device, --tensor-parallel, --ref-ops, --no-cuda-graphs, --batch-invariant
  std::string logits_out;
  bool no_blas = false;
  SpeculationArgs spec;
};

Result<std::vector<int32_t>> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) {
    try {
      size_t used = 0;
      const long v = std::stol(tok, &used);
      if (used != tok.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(tok);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      return make_error(StatusCode::kInvalidArgument, "--prompt-ids: '{}' is not a token id", tok);
    }
  }
  return ids;
}

void print_ids(const std::vector<int32_t>& tokens) {
  std::string ids;
  for (int32_t id : tokens) ids += fmt::format("{}{}", ids.empty() ? "" : " ", id);
  fmt::print("ids: {}\n", ids);
}

// What speculation cannot honour yet is refused rather than ignored.
Status check_speculative_args(const RunArgs& a) {
  if (a.spec.any() && !a.logits_out.empty()) {
    return make_error(StatusCode::kInvalidArgument, "--logits-out is not supported with speculative decoding");
  }
  return check_speculation_args(a.spec);
}

SamplingParams sampling_from(const RunArgs& a) {
  SamplingParams p;
  p.temperature = a.temperature;
  p.top_k = a.top_k;
  p.top_p = a.top_p;
  p.min_p = a.min_p;
  p.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : std::random_device{}();
  p.repetition_penalty = a.repeat_penalty;
  p.presence_penalty = a.presence_penalty;
  p.frequency_penalty = a.frequency_penalty;
  p.penalty_last_n = a.repeat_last_n;
  return p;
}

int run(const RunArgs& a) {
  if (a.prompt.empty() == a.prompt_ids.empty()) return fail("give exactly one of -p/--prompt and --prompt-ids");
  if (Status st = check_speculative_args(a); !st.ok()) return fail(st.to_string());
  OpsOptions ops = a.dev.ops();
  ops.matmul.blas = !a.no_blas;
  auto loaded = load_model_on(a.model, ops, a.dev.device);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  LoadedModel& lm = *loaded;

  std::vector<int32_t> prompt;
  if (!a.prompt_ids.empty()) {
    auto ids = parse_ids(a.prompt_ids);
    if (!ids.ok()) return fail(ids.status().to_string());
    prompt = *ids;
  } else {
    if (!lm.tokenizer) return fail(fmt::format("{}: no tokenizer found; pass --prompt-ids", a.model));
    prompt = lm.tokenizer->encode(a.prompt, !a.no_special, true);
  }
  const ModelHParams& h = lm.model->hparams();
  const int64_t n_ctx = a.n_ctx > 0 ? a.n_ctx : std::min<int64_t>(h.n_ctx_train, 4096);
  std::unique_ptr<SequenceGenerator> gen;
  if (a.logits_out.empty()) {
    // Decoding on the batched engine (one sequence), the same step the server runs; with a proposer, each step
    // verifies its drafts: the same tokens as plain decoding with the same flags and seed.
    EngineOptions eo;
    eo.max_seqs = 1;
    eo.n_ctx = n_ctx;
    auto maker = make_proposer_maker(a.spec, {lm.weights, lm.model.get(), lm.tokenizer.get()}, ops);
    if (!maker.ok()) return fail(maker.status().to_string());
    if (*maker) {
      auto factory = (*maker)(n_ctx, eo.max_seqs);
      if (!factory.ok()) return fail(factory.status().to_string());
      eo.proposer = std::move(factory).value();
    }
    eo.adaptive_drafts = !a.spec.fixed_draft;
    eo.speculation_cost_policy = !a.spec.always_speculate;
    auto g = EngineGenerator::create(*lm.model, lm.tokenizer.get(), eo);
    if (!g.ok()) return fail(g.status().to_string());
    gen = std::move(g).value();
  }

  if (!a.logits_out.empty()) {
    // Teacher-forced logits of every prompt position, raw f32 [n_tokens, n_vocab], for comparison tools.
    auto teacher = Generator::create(*lm.model, lm.tokenizer.get(), n_ctx);
    if (!teacher.ok()) return fail(teacher.status().to_string());
    std::ofstream out(a.logits_out, std::ios::binary);
    const Status st = (*teacher)->prompt_logits(prompt, 256, [&](int64_t, std::span<const float> rows) {
      out.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size_bytes()));
    });
    if (!st.ok()) return fail(st.to_string());
    if (!out.flush()) return fail(fmt::format("{}: write error", a.logits_out));
    fmt::print(stderr, "wrote {} x {} logits to {}\n", prompt.size(), h.n_vocab, a.logits_out);
    return 0;
  }

  GenerateOptions opt;
  opt.max_tokens = a.n_predict;
  opt.stop = a.stop;
  opt.ignore_eos = a.ignore_eos;
  opt.sampling = sampling_from(a);

  if (!a.prompt.empty()) {
    fmt::print("{}", a.prompt);
    std::fflush(stdout);
  }
  auto result = gen->generate(prompt, opt, [](std::string_view s) {
    fmt::print("{}", s);
    std::fflush(stdout);
    return true;
  });
  if (!result.ok()) {
    fmt::print("\n");
    return fail(result.status().to_string());
  }
  const GenerateResult& r = *result;
  fmt::print("\n");
  if (a.print_ids) print_ids(r.tokens);
  const double n_gen_steps = r.tokens.empty() ? 0 : static_cast<double>(r.tokens.size()) - 1;
  fmt::print(stderr, "\nprompt: {} tokens in {:.1f} ms ({:.1f} tok/s) | generation: {} tokens in {:.1f} ms ({:.1f} tok/s) | "
             "finish: {}\n", r.n_prompt, r.prompt_ms, r.n_prompt * 1000.0 / std::max(r.prompt_ms, 1e-9),
             r.tokens.size(), r.generate_ms, n_gen_steps * 1000.0 / std::max(r.generate_ms, 1e-9),
             finish_reason_name(r.finish));
  if (r.draft) {
    fmt::print(stderr, "speculative: {} verify steps, mean accepted length {:.3f} ({}); tokens per step: {}\n",
               r.draft->verify_steps, r.draft->mean_accepted_length(), describe_speculation(a.spec),
               fmt::join(r.draft->tokens_per_step, " "));
  }
  return 0;
}

}  // namespace

Command make_run_command() {
  auto a = std::make_shared<RunArgs>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [a, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("run", "Generate text from a prompt (CPU backend)");
        *sub = s;
        s->add_option("-m,--model", a->model, "Model: a .gguf file or a Hugging Face folder")->required();
        s->add_option("-p,--prompt", a->prompt, "Prompt text");
        s->add_option("--prompt-ids", a->prompt_ids, "Prompt as space-separated token ids");
        s->add_option("-n,--n-predict", a->n_predict, "Tokens to generate")->capture_default_str();
        s->add_option("-c,--ctx", a->n_ctx, "Context size in tokens (default: the model's, at most 4096)");
        s->add_option("--temp", a->temperature, "Temperature (0: greedy)")->capture_default_str();
        s->add_option("--top-k", a->top_k, "Top-k (0: off)")->capture_default_str();
        s->add_option("--top-p", a->top_p, "Top-p (1: off)")->capture_default_str();
        s->add_option("--min-p", a->min_p, "Min-p (0: off)")->capture_default_str();
        s->add_option("--seed", a->seed, "Sampling seed (default: random)");
        s->add_option("--repeat-penalty", a->repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
        s->add_option("--presence-penalty", a->presence_penalty, "Presence penalty")->capture_default_str();
        s->add_option("--frequency-penalty", a->frequency_penalty, "Frequency penalty")->capture_default_str();
        s->add_option("--repeat-last-n", a->repeat_last_n, "Penalty window (-1: all)")->capture_default_str();
        s->add_option("--stop", a->stop, "Stop string (repeatable)");
        s->add_flag("--print-ids", a->print_ids, "End with a line 'ids: ...' of the generated token ids");
        s->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at end-of-generation tokens");
        s->add_flag("--no-special", a->no_special, "Do not add BOS/EOS to the prompt");
        s->add_option("--logits-out", a->logits_out,
                      "Write the prompt's teacher-forced logits (raw f32 [n_tokens, n_vocab]) to this file and exit");
        s->add_flag("--no-blas", a->no_blas,
                    "Prefill batches take the quantized-activation integer path too (as llama.cpp's CPU backend does)");
        add_device_options(s, &a->dev);
        add_speculation_options(s, &a->spec, "the generation");
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [a] { return run(*a); },
  };
}

}  // namespace saker::cli
