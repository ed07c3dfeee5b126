#include "cli/bench_prompts.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>

#include "cli/bench_stats.h"
#include "core/clock.h"
#include "engine/engine.h"

namespace saker::cli {
namespace {

using Clock = std::chrono::steady_clock;


struct Run {
  double wall_s = 0, tps = 0, stream_tps = 0;
  int64_t generated = 0;
  int64_t generated_all_runs = 0;  // measure(): every counted run's tokens (the drafts are merged over them)
  DraftStats drafts;
  StepCosts costs;  // measure(): over the counted runs (the warm-up left out)
  std::vector<std::vector<int32_t>> outputs;
};

// Every prompt submitted at once to an engine with `n` slots, stepped on this thread until all are done.
Result<Run> run_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int64_t gen_tokens) {
  struct Request {
    std::optional<Clock::time_point> first, last;
    int64_t tokens = 0;
    bool done = false;
    Status error;
    std::vector<int32_t> output;
    std::optional<DraftStats> drafts;
  };
  std::vector<Request> reqs(prompts.size());
  size_t n_done = 0;
  const Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request& r = reqs[i];
    GenerateOptions o;
    o.max_tokens = static_cast<int32_t>(gen_tokens);
    o.ignore_eos = true;
    o.sampling.temperature = 0;
    o.on_token = [&r](const GeneratedToken&) {
      const Clock::time_point now = Clock::now();
      if (!r.first) r.first = now;
      r.last = now;
      ++r.tokens;
      return true;
    };
    engine.submit(prompts[i], std::move(o), nullptr, [&r, &n_done](Result<GenerateResult> res) {
      if (res.ok()) {
        r.output = res->tokens;
        r.drafts = res->draft;
      } else {
        r.error = res.status();
      }
      r.done = true;
      ++n_done;
    });
  }
  while (n_done < prompts.size()) {
    auto stepped = engine.step();
    if (!stepped.ok() || !*stepped) {
      engine.cancel_all();
      while (n_done < prompts.size()) {
        auto r = engine.step();
        if (!r.ok() || !*r) break;
      }
      return stepped.ok() ? make_error(StatusCode::kInternal, "the engine went idle with requests unfinished")
                          : stepped.status();
    }
  }
  Run run;
  run.wall_s = seconds_between(t0, Clock::now());
  std::vector<double> stream;
  for (Request& r : reqs) {
    if (!r.error.ok()) return r.error;
    run.generated += r.tokens;
    if (r.tokens > 1) stream.push_back(static_cast<double>(r.tokens - 1) / seconds_between(*r.first, *r.last));
    if (r.drafts) run.drafts.merge(*r.drafts);
    run.outputs.push_back(std::move(r.output));
  }
  run.tps = static_cast<double>(run.generated) / run.wall_s;
  run.stream_tps = median_of(std::move(stream));
  return run;
}

// -r runs on one engine (after a short warm-up request), the medians, the last run's outputs.
Result<Run> measure(Model& model, const text::Tokenizer* tokenizer, const std::vector<std::vector<int32_t>>& prompts,
                    const PromptBenchArgs& a, const EngineOptions& eo) {
  auto engine = Engine::create(model, tokenizer, eo);
  if (!engine.ok()) return engine.status();
  {
    const std::vector<std::vector<int32_t>> warm = {prompts.front()};
    SAKER_RETURN_IF_ERROR(run_all(**engine, warm, std::min<int64_t>(8, a.gen_tokens)).status());
  }
  const EngineStats before = (*engine)->stats();
  std::vector<Run> runs;
  for (int i = 0; i < a.reps; ++i) {
    SAKER_ASSIGN_OR_RETURN(Run r, run_all(**engine, prompts, a.gen_tokens));
    runs.push_back(std::move(r));
  }
  Run out = std::move(runs.back());
  std::vector<double> wall, tps, stream;
  for (const Run& r : runs) {
    wall.push_back(r.wall_s);
    tps.push_back(r.tps);
    stream.push_back(r.stream_tps);
  }
  out.wall_s = median_of(wall);
  out.tps = median_of(tps);
  out.stream_tps = median_of(stream);
  out.drafts = DraftStats{};
  out.generated_all_runs = 0;
  for (const Run& r : runs) {
    out.drafts.merge(r.drafts);
    out.generated_all_runs += r.generated;
  }
  out.costs = StepCosts::between(before, (*engine)->stats());
  return out;
}

std::string read_file(const std::string& path, Status* st) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *st = make_error(StatusCode::kNotFound, "--prompts {}: cannot read the file", path);
    return {};
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::vector<std::vector<int32_t>>> read_bench_prompts(const std::string& path, const text::Tokenizer* tok) {
  Status st;
  const std::string text = read_file(path, &st);
  SAKER_RETURN_IF_ERROR(st);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array() || j.empty()) {
    return make_error(StatusCode::kInvalidArgument, "--prompts {}: expected a JSON list of prompts", path);
  }
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& p = j[i];
    std::vector<int32_t> ids;
    if (p.is_object() && p.contains("ids") && p["ids"].is_array()) {
      for (const auto& id : p["ids"]) {
        if (!id.is_number_integer()) {
          return make_error(StatusCode::kInvalidArgument, "--prompts {}: entry {} has a non-integer id", path, i);
        }
        ids.push_back(id.get<int32_t>());
      }
    } else if (p.is_string() || (p.is_object() && p.contains("text") && p["text"].is_string())) {
      if (!tok) {
        return make_error(StatusCode::kInvalidArgument,
                          "--prompts {}: entry {} is text, but the model has no tokenizer (give \"ids\")", path, i);
      }
      ids = tok->encode(p.is_string() ? p.get<std::string>() : p["text"].get<std::string>(), true, true);
    } else {
      return make_error(StatusCode::kInvalidArgument,
                        "--prompts {}: entry {} is neither a string nor an object with \"ids\" or \"text\"", path, i);
    }
    if (ids.empty()) return make_error(StatusCode::kInvalidArgument, "--prompts {}: entry {} is empty", path, i);
    out.push_back(std::move(ids));
  }
  return out;
}

Result<nlohmann::json> run_prompt_bench(const LoadedModel& lm, const OpsOptions& ops, const PromptBenchArgs& a) {
  if (a.reps < 1) return make_error(StatusCode::kInvalidArgument, "--reps must be >= 1");
  if (a.gen_tokens < 1) return make_error(StatusCode::kInvalidArgument, "--gen-tokens must be >= 1");
  SAKER_ASSIGN_OR_RETURN(const std::vector<std::vector<int32_t>> prompts,
                         read_bench_prompts(a.prompts_file, lm.tokenizer.get()));
  Model& model = *lm.model;
  const int64_t V = model.hparams().n_vocab;
  size_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    longest = std::max(longest, prompts[i].size());
    for (int32_t id : prompts[i]) {
      if (id < 0 || id >= V) {
        return make_error(StatusCode::kInvalidArgument, "--prompts {}: entry {} has token {} outside the {} ids",
                          a.prompts_file, i, id, V);
      }
    }
  }
  SAKER_ASSIGN_OR_RETURN(ProposerMaker maker, make_proposer_maker(a.spec, {lm.weights, &model, lm.tokenizer.get()}, ops));
  const std::string proposer = a.spec.any() ? describe_speculation(a.spec) : "";
  fmt::print(stderr, "bench: {} prompts (longest {} tokens) x {} generated tokens{}{}\n", prompts.size(), longest,
             a.gen_tokens, proposer.empty() ? "" : "; speculating with ", proposer);

  nlohmann::json rows = nlohmann::json::array();
  std::string table =
      "| N | proposer | requests x tokens | wall s | tok/s | stream tok/s (median) | x plain | tokens / verify step | "
      "same tokens as plain | tokens from verify steps |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (int64_t n : a.concurrency) {
    if (n < 1) return make_error(StatusCode::kInvalidArgument, "--concurrency values must be >= 1");
    EngineOptions eo;
    eo.max_seqs = static_cast<int32_t>(n);
    // Room for the longest prompt, its generation and a verify block past it.
    eo.n_ctx = static_cast<int64_t>(longest) + a.gen_tokens + 64 + a.kv_block;
    eo.kv_block = a.kv_block;
    eo.prefill_chunk = a.prefill_chunk;
    eo.prefix_cache = false;  // every prompt prefilled in full, both ways
    SAKER_ASSIGN_OR_RETURN(Run plain, measure(model, lm.tokenizer.get(), prompts, a, eo));
    fmt::print(stderr, "  N={:<4} plain: {:.1f} tok/s, {:.1f} tok/s per stream\n", n, plain.tps, plain.stream_tps);
    const std::string shape = fmt::format("{} x {}", prompts.size(), a.gen_tokens);
    table += fmt::format("| {} | none | {} | {:.2f} | {:.1f} | {:.1f} | 1.00 | - | - | - |\n", n, shape, plain.wall_s,
                         plain.tps, plain.stream_tps);
    nlohmann::json row = {{"concurrency", n},
                          {"prompts", prompts.size()},
                          {"gen_tokens", a.gen_tokens},
                          {"plain",
                           {{"wall_s", plain.wall_s},
                            {"tokens_per_s", plain.tps},
                            {"stream_tokens_per_s", plain.stream_tps},
                            {"decode_steps", plain.costs.plain_decode_steps},
                            {"decode_step_ms", plain.costs.plain_step_ms()}}}};
    if (maker) {
      SAKER_ASSIGN_OR_RETURN(eo.proposer, maker(eo.n_ctx, eo.max_seqs));
      eo.adaptive_drafts = !a.spec.fixed_draft;
      eo.speculation_cost_policy = !a.spec.always_speculate;
      SAKER_ASSIGN_OR_RETURN(Run spec, measure(model, lm.tokenizer.get(), prompts, a, eo));
      int64_t same = 0;
      for (size_t i = 0; i < prompts.size(); ++i) same += spec.outputs[i] == plain.outputs[i];
      // The share of generated tokens that verify steps committed: under the cost policy a proposer may draft in
      // few steps, and its tokens per verify step then describe those steps only.
      const double verified_share = spec.generated_all_runs > 0 ? static_cast<double>(spec.drafts.committed_tokens) /
                                                                      static_cast<double>(spec.generated_all_runs)
                                                                : 0.0;
      fmt::print(stderr,
                 "  N={:<4} {}: {:.1f} tok/s ({:.2f}x), {:.1f} per stream, {:.2f} tokens per verify step, {:.1f}% of "
                 "tokens from verify steps; steps with drafts {:.2f} ms ({}), without {:.2f} ms ({}, {} held back "
                 "by the cost policy)\n",
                 n, proposer, spec.tps, spec.tps / plain.tps, spec.stream_tps, spec.drafts.mean_accepted_length(),
                 100.0 * verified_share, spec.costs.drafting_step_ms(), spec.costs.drafting_steps,
                 spec.costs.plain_step_ms(), spec.costs.plain_decode_steps, spec.costs.undrafted_steps);
      table += fmt::format("| {} | {} | {} | {:.2f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} | {} of {} | {:.1f}% |\n", n,
                           proposer, shape, spec.wall_s, spec.tps, spec.stream_tps, spec.tps / plain.tps,
                           spec.drafts.mean_accepted_length(), same, prompts.size(), 100.0 * verified_share);
      row["speculative"] = {{"proposer", proposer},
                            {"wall_s", spec.wall_s},
                            {"tokens_per_s", spec.tps},
                            {"stream_tokens_per_s", spec.stream_tps},
                            {"relative_to_plain", spec.tps / plain.tps},
                            {"tokens_per_verify_step", spec.drafts.mean_accepted_length()},
                            {"verify_steps", spec.drafts.verify_steps},
                            {"tokens_from_verify_steps", verified_share},
                            // What the cost policy weighed, over the counted runs: decode-only steps and steps
                            // with drafts (their mean wall time, proposer and verify walk included), and the
                            // steps in which it held drafts back.
                            {"plain_decode_steps", spec.costs.plain_decode_steps},
                            {"plain_decode_step_ms", spec.costs.plain_step_ms()},
                            {"drafting_steps", spec.costs.drafting_steps},
                            {"drafting_step_ms", spec.costs.drafting_step_ms()},
                            {"undrafted_steps", spec.costs.undrafted_steps},
                            {"same_tokens_as_plain", same}};
    }
    rows.push_back(row);
  }
  fmt::print("{}", table);
  return rows;
}

}  // namespace saker::cli
