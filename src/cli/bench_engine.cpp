#include "cli/bench_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "cli/bench_stats.h"
#include "core/clock.h"
#include "engine/engine.h"
#include "spec/dflash_drafter.h"
#include "spec/dflash_proposer.h"
#include "spec/replay_proposer.h"
#include "spec/shadowed_proposer.h"

namespace saker::cli {
namespace {

using Clock = std::chrono::steady_clock;


double per_s(double count, double ms) { return ms > 0 ? count * 1e3 / ms : 0.0; }

struct Level {
  int64_t n = 0, p = 0, g = 0;
};

struct RunFigures {
  double wall_ms = 0;
  double prefill_ms = 0;       // first submit to the end of the step that gave the last request its first token
  double decode_ms = 0;        // from then to the end
  int64_t decode_tokens = 0;   // tokens decided after that step
  int64_t generated = 0;       // every generated token
  int64_t steps = 0, step_tokens = 0, preemptions = 0;
  StepCosts costs;  // what the speculation cost policy weighed
  std::vector<double> ttft_ms;
  std::vector<std::vector<int32_t>> prompts, outputs;  // per request
  DraftStats drafts;                                   // summed over the requests (speculating runs)

  double prefill_tps(const Level& l) const { return per_s(static_cast<double>(l.n * l.p), prefill_ms); }
  double decode_tps() const { return per_s(static_cast<double>(decode_tokens), decode_ms); }
  double total_tps() const { return per_s(static_cast<double>(generated), wall_ms); }
  double tokens_per_step() const { return steps ? static_cast<double>(step_tokens) / static_cast<double>(steps) : 0; }
};

struct Request {
  Clock::time_point submitted;
  std::optional<Clock::time_point> first;
  int64_t first_step = -1;
  int64_t tokens = 0;
  bool done = false;
  Status error;
  std::vector<int32_t> output;
  std::optional<DraftStats> drafts;
};

EngineOptions engine_options(const Level& l, const EngineBenchArgs& a) {
  EngineOptions o;
  o.max_seqs = static_cast<int32_t>(l.n);
  // TokenOutput ends a sequence when prompt + generated reaches n_ctx: leave a page of room past P + G.
  o.n_ctx = l.p + l.g + a.kv_block;
  o.kv_tokens = 0;  // max_seqs * n_ctx: every request fits, nothing is preempted
  o.kv_block = a.kv_block;
  o.prefill_chunk = a.prefill_chunk;
  // Every decode token plus at least one prefill chunk (the scheduler raises a smaller budget to that).
  o.step_tokens = a.step_tokens > 0 ? a.step_tokens : 4 * static_cast<int64_t>(a.prefill_chunk) + l.n;
  o.prefix_cache = false;  // random prompts, measured in full
  return o;
}

std::vector<std::vector<int32_t>> random_prompts(const Level& l, int64_t n_vocab, std::mt19937_64& rng) {
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(l.n));
  for (auto& prompt : prompts) {
    prompt.resize(static_cast<size_t>(l.p));
    for (auto& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(n_vocab));
  }
  return prompts;
}

// N requests (these prompts) submitted at once, stepped on this thread until every one is done.
Result<RunFigures> run_once(Engine& engine, const Level& l, std::vector<std::vector<int32_t>> prompts) {
  std::vector<Request> reqs(static_cast<size_t>(l.n));
  int64_t step_index = 0;               // the step() now running (callbacks run inside it, on this thread)
  std::vector<int64_t> tokens_in_step;  // [step] tokens decided in that step
  std::vector<Clock::time_point> step_end;
  int64_t n_done = 0;

  const EngineStats before = engine.stats();
  const Clock::time_point t0 = Clock::now();
  for (int64_t i = 0; i < l.n; ++i) {
    Request& r = reqs[static_cast<size_t>(i)];
    GenerateOptions o;
    o.max_tokens = static_cast<int32_t>(l.g);
    o.ignore_eos = true;
    o.sampling.temperature = 0;  // greedy: the engine copies argmax ids, not logits
    o.on_token = [&r, &step_index, &tokens_in_step](const GeneratedToken&) {
      if (!r.first) {
        r.first = Clock::now();
        r.first_step = step_index;
      }
      ++r.tokens;
      if (static_cast<int64_t>(tokens_in_step.size()) <= step_index) tokens_in_step.resize(step_index + 1, 0);
      ++tokens_in_step[static_cast<size_t>(step_index)];
      return true;
    };
    r.submitted = Clock::now();
    engine.submit(prompts[static_cast<size_t>(i)], std::move(o), nullptr, [&r, &n_done](Result<GenerateResult> res) {
      if (!res.ok()) {
        r.error = res.status();
      } else {
        r.output = res->tokens;
        r.drafts = res->draft;
      }
      r.done = true;
      ++n_done;
    });
  }
  // On an error the requests still inside must end before `reqs` goes: cancel them and step until their
  // on_done callbacks have run (the engine is not used again after an error).
  auto abandon = [&](Status st) {
    engine.cancel_all();
    for (int i = 0; i < 1000000 && n_done < l.n; ++i) {
      auto r = engine.step();
      if (!r.ok() || !*r) break;
    }
    return st;
  };
  while (n_done < l.n) {
    auto stepped = engine.step();
    step_end.push_back(Clock::now());
    if (!stepped.ok()) return abandon(stepped.status());
    if (!*stepped && n_done < l.n) {
      return abandon(make_error(StatusCode::kInternal, "the engine went idle with {} of {} requests unfinished",
                                l.n - n_done, l.n));
    }
    ++step_index;
  }
  const Clock::time_point t_end = step_end.empty() ? Clock::now() : step_end.back();
  for (const Request& r : reqs) {
    if (!r.error.ok()) return r.error;
    if (!r.first) return make_error(StatusCode::kInternal, "a request finished without generating a token");
  }
  const EngineStats after = engine.stats();

  RunFigures f;
  f.wall_ms = ms_between(t0, t_end);
  int64_t last_first_step = 0;
  for (const Request& r : reqs) {
    f.ttft_ms.push_back(ms_between(r.submitted, *r.first));
    f.generated += r.tokens;
    last_first_step = std::max(last_first_step, r.first_step);
  }
  f.prefill_ms = ms_between(t0, step_end[static_cast<size_t>(last_first_step)]);
  f.decode_ms = ms_between(step_end[static_cast<size_t>(last_first_step)], t_end);
  for (size_t s = static_cast<size_t>(last_first_step) + 1; s < tokens_in_step.size(); ++s) {
    f.decode_tokens += tokens_in_step[s];
  }
  f.steps = after.steps - before.steps;
  f.step_tokens = after.step_tokens - before.step_tokens;
  f.preemptions = after.preemptions - before.preemptions;
  f.costs = StepCosts::between(before, after);
  f.prompts = std::move(prompts);
  for (Request& r : reqs) {
    f.outputs.push_back(std::move(r.output));
    if (r.drafts) f.drafts.merge(*r.drafts);
  }
  return f;
}

struct ReplayRow {
  double mean_commit = 0;
  double decode_tps = 0, tokens_per_verify = 0;
  int64_t steps = 0;               // summed over the timed runs
  StepCosts costs;                 // summed over the timed runs
  double plain_level_step_ms = 0;  // the plain level's decode steps
  bool exact = true;
  spec::DFlashDrafter::Stats drafter;  // over the timed runs (no drafter: zeros)
};

// What a drafter did between two snapshots of its counters.
spec::DFlashDrafter::Stats stats_since(const spec::DFlashDrafter::Stats& before,
                                       const spec::DFlashDrafter::Stats& now) {
  spec::DFlashDrafter::Stats d = now;
  d.context_forwards -= before.context_forwards;
  d.context_rows -= before.context_rows;
  d.block_forwards -= before.block_forwards;
  d.blocks -= before.blocks;
  d.runs -= before.runs;
  d.cached_positions -= before.cached_positions;
  d.context_ms -= before.context_ms;
  d.block_ms -= before.block_ms;
  return d;
}

// The replay proposers of a level: each sequence replays its reference, shadowed by a slot of one drafter of
// real size when the bench has one (its drafts dropped, its cost kept).
Result<ProposerFactory> replay_factory(Model& model, const EngineBenchArgs& a, const RunFigures& plain,
                                       double mean_commit, const EngineOptions& eo,
                                       std::shared_ptr<spec::DFlashDrafter>* drafter) {
  SAKER_ASSIGN_OR_RETURN(ProposerFactory replay, spec::ReplayProposer::factory(
                                                     spec::ReplayProposer::references(plain.prompts, plain.outputs),
                                                     mean_commit, a.max_draft,
                                                     static_cast<int32_t>(model.hparams().n_vocab)));
  if (!a.replay_drafter) return replay;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<spec::DFlashDrafter> d,
                         spec::DFlashDrafter::create(a.replay_drafter, eo.n_ctx + a.replay_drafter->config.block_size,
                                                     a.drafter_ops, eo.max_seqs));
  *drafter = std::move(d);
  return spec::ShadowedProposer::factory(replay, [shared = *drafter]() -> Result<std::unique_ptr<Proposer>> {
    SAKER_ASSIGN_OR_RETURN(auto slot, spec::DFlashProposer::create(shared, 0));
    return std::unique_ptr<Proposer>(std::move(slot));
  });
}

// The level's prompts again, every sequence replaying its plain continuation at acceptance L (see the header).
Result<ReplayRow> run_replay(Model& model, const text::Tokenizer* tokenizer, const Level& l, const EngineBenchArgs& a,
                             const RunFigures& plain, double mean_commit, nlohmann::json* runs_json) {
  EngineOptions eo = engine_options(l, a);
  eo.n_ctx += a.max_draft + 1;  // a verify block may reach past the last generated token
  std::shared_ptr<spec::DFlashDrafter> drafter;
  SAKER_ASSIGN_OR_RETURN(eo.proposer, replay_factory(model, a, plain, mean_commit, eo, &drafter));
  eo.adaptive_drafts = false;   // always the whole block: the acceptance is the proposer's to set
  eo.speculation_cost_policy = !a.always_speculate;
  auto engine = Engine::create(model, tokenizer, eo);
  if (!engine.ok()) return engine.status();
  std::vector<RunFigures> runs;
  spec::DFlashDrafter::Stats before;
  for (int i = 0; i < a.warmup + a.reps; ++i) {
    if (i == a.warmup && drafter) before = drafter->stats();
    SAKER_ASSIGN_OR_RETURN(RunFigures f, run_once(**engine, l, plain.prompts));
    if (i >= a.warmup) runs.push_back(std::move(f));
  }
  ReplayRow row;
  row.mean_commit = mean_commit;
  std::vector<double> tps;
  DraftStats all;
  for (const RunFigures& f : runs) {
    tps.push_back(f.decode_tps());
    all.merge(f.drafts);
    row.steps += f.steps;
    row.costs += f.costs;
    const bool same = f.outputs == plain.outputs;
    row.exact = row.exact && same;
    runs_json->push_back({{"mean_commit", mean_commit},
                          {"decode_ms", f.decode_ms},
                          {"decode_tokens", f.decode_tokens},
                          {"decode_tokens_per_s", f.decode_tps()},
                          {"verify_steps", f.drafts.verify_steps},
                          {"committed_tokens", f.drafts.committed_tokens},
                          {"steps", f.steps},
                          {"undrafted_steps", f.costs.undrafted_steps},
                          {"same_tokens_as_plain", same}});
  }
  row.decode_tps = median_of(std::move(tps));
  row.tokens_per_verify = all.mean_accepted_length();
  if (drafter) row.drafter = stats_since(before, drafter->stats());
  row.plain_level_step_ms = plain.costs.plain_step_ms();
  return row;
}

}  // namespace

Status check_engine_bench_args(const EngineBenchArgs& a) {
  if (a.concurrency.empty()) return make_error(StatusCode::kInvalidArgument, "--concurrency needs at least one value");
  for (int64_t n : a.concurrency) {
    if (n < 1 || n > 65536) {
      return make_error(StatusCode::kInvalidArgument, "--concurrency values must be in 1..65536 (got {})", n);
    }
  }
  if (a.prompt_tokens < 1 || a.prompt_tokens > (int64_t{1} << 24)) {
    return make_error(StatusCode::kInvalidArgument, "--prompt-tokens must be in 1..{} (got {})", int64_t{1} << 24,
                      a.prompt_tokens);
  }
  if (a.gen_tokens < 1 || a.gen_tokens > (int64_t{1} << 24)) {
    return make_error(StatusCode::kInvalidArgument, "--gen-tokens must be in 1..{} (got {})", int64_t{1} << 24,
                      a.gen_tokens);
  }
  if (a.kv_block < 1 || a.kv_block > 4096) {
    return make_error(StatusCode::kInvalidArgument, "--kv-block must be in 1..4096 (got {})", a.kv_block);
  }
  if (a.prefill_chunk < 1) {
    return make_error(StatusCode::kInvalidArgument, "--prefill-chunk must be >= 1 (got {})", a.prefill_chunk);
  }
  if (a.step_tokens < 0) {
    return make_error(StatusCode::kInvalidArgument, "--step-tokens must be >= 0 (got {})", a.step_tokens);
  }
  if (a.reps < 1) return make_error(StatusCode::kInvalidArgument, "--reps must be >= 1 (got {})", a.reps);
  if (a.warmup < 0) return make_error(StatusCode::kInvalidArgument, "--warmup must be >= 0 (got {})", a.warmup);
  return {};
}

Result<nlohmann::json> run_engine_bench(Model& model, const text::Tokenizer* tokenizer, const EngineBenchArgs& a) {
  SAKER_RETURN_IF_ERROR(check_engine_bench_args(a));
  const int64_t n_vocab = model.hparams().n_vocab;
  if (n_vocab < 1) return make_error(StatusCode::kInvalidArgument, "the model has no vocabulary");
  std::mt19937_64 rng(a.seed);

  // One short single-request run first: lazily loaded kernels, allocator arenas, thread pools.
  {
    const Level w{1, std::min<int64_t>(a.prompt_tokens, 32), std::min<int64_t>(a.gen_tokens, 4)};
    auto engine = Engine::create(model, tokenizer, engine_options(w, a));
    if (!engine.ok()) return make_error(engine.status().code(), "warm-up engine: {}", engine.status().message());
    auto r = run_once(**engine, w, random_prompts(w, n_vocab, rng));
    if (!r.ok()) return make_error(r.status().code(), "warm-up run: {}", r.status().message());
  }

  nlohmann::json rows = nlohmann::json::array();
  struct Summary {
    Level l;
    double wall_ms, ttft_p50, ttft_p99, prefill_tps, decode_tps, total_tps, steps, tokens_per_step, preemptions;
  };
  std::vector<Summary> table;
  struct ReplaySummary {
    int64_t n;
    double plain_tps;
    ReplayRow row;
  };
  std::vector<ReplaySummary> replay_table;
  for (int64_t n : a.concurrency) {
    const Level l{n, a.prompt_tokens, a.gen_tokens};
    const EngineOptions eo = engine_options(l, a);
    auto engine = Engine::create(model, tokenizer, eo);
    if (!engine.ok()) {
      return make_error(engine.status().code(), "concurrency {}: {}", n, engine.status().message());
    }
    for (int i = 0; i < a.warmup; ++i) {
      auto r = run_once(**engine, l, random_prompts(l, n_vocab, rng));
      if (!r.ok()) return make_error(r.status().code(), "concurrency {} (warm-up): {}", n, r.status().message());
    }
    std::vector<RunFigures> runs;
    for (int i = 0; i < a.reps; ++i) {
      auto r = run_once(**engine, l, random_prompts(l, n_vocab, rng));
      if (!r.ok()) return make_error(r.status().code(), "concurrency {}: {}", n, r.status().message());
      runs.push_back(std::move(*r));
    }

    auto med = [&](auto&& fn) {
      std::vector<double> v;
      for (const RunFigures& f : runs) v.push_back(static_cast<double>(fn(f)));
      return median_of(std::move(v));
    };
    std::vector<double> ttft;
    nlohmann::json run_rows = nlohmann::json::array();
    for (const RunFigures& f : runs) {
      ttft.insert(ttft.end(), f.ttft_ms.begin(), f.ttft_ms.end());
      run_rows.push_back({{"wall_ms", f.wall_ms}, {"prefill_ms", f.prefill_ms}, {"decode_ms", f.decode_ms},
                          {"decode_tokens", f.decode_tokens}, {"generated_tokens", f.generated},
                          {"steps", f.steps}, {"step_tokens", f.step_tokens}, {"preemptions", f.preemptions},
                          {"prefill_tokens_per_s", f.prefill_tps(l)}, {"decode_tokens_per_s", f.decode_tps()},
                          {"total_tokens_per_s", f.total_tps()}, {"ttft_ms", f.ttft_ms}});
    }
    Summary s{l,
              med([](const RunFigures& f) { return f.wall_ms; }),
              percentile(ttft, 0.50),
              percentile(ttft, 0.99),
              med([&](const RunFigures& f) { return f.prefill_tps(l); }),
              med([](const RunFigures& f) { return f.decode_tps(); }),
              med([](const RunFigures& f) { return f.total_tps(); }),
              med([](const RunFigures& f) { return f.steps; }),
              med([](const RunFigures& f) { return f.tokens_per_step(); }),
              med([](const RunFigures& f) { return f.preemptions; })};
    table.push_back(s);
    fmt::print(stderr, "  N={:<4} wall {:>9.1f} ms  TTFT p50 {:>8.1f} ms  decode {:>9.1f} tok/s  total {:>9.1f} tok/s\n",
               n, s.wall_ms, s.ttft_p50, s.decode_tps, s.total_tps);
    nlohmann::json replay_rows = nlohmann::json::array(), replay_runs = nlohmann::json::array();
    for (double L : a.replay) {
      engine->reset();  // one engine's pool at a time
      auto r = run_replay(model, tokenizer, l, a, runs.back(), L, &replay_runs);
      if (!r.ok()) return make_error(r.status().code(), "concurrency {}, replay:{}: {}", n, L, r.status().message());
      replay_table.push_back({n, s.decode_tps, *r});
      fmt::print(stderr, "  N={:<4} replay:{:<4} decode {:>9.1f} tok/s ({:.2f}x plain), {:.2f} tokens per verify step{}\n", n,
                 L, r->decode_tps, r->decode_tps / s.decode_tps, r->tokens_per_verify,
                 r->exact ? "" : ", tokens differ from plain decoding");
      replay_rows.push_back({{"mean_commit", L},
                             {"max_draft", a.max_draft},
                             {"decode_tokens_per_s", r->decode_tps},
                             {"relative_to_plain", r->decode_tps / s.decode_tps},
                             {"tokens_per_verify_step", r->tokens_per_verify},
                             {"same_tokens_as_plain", r->exact},
                             {"cost_policy", !a.always_speculate},
                             {"steps", r->steps},
                             {"undrafted_steps", r->costs.undrafted_steps},
                             {"plain_decode_steps", r->costs.plain_decode_steps},
                             {"plain_decode_ms", r->costs.plain_decode_ms},
                             {"drafting_steps", r->costs.drafting_steps},
                             {"drafting_ms", r->costs.drafting_ms},
                             {"plain_level_step_ms", r->plain_level_step_ms},
                             {"drafter", a.replay_drafter ? a.replay_drafter_name : "none"},
                             {"drafter_blocks", r->drafter.blocks},
                             {"drafter_block_forwards", r->drafter.block_forwards},
                             {"drafter_context_forwards", r->drafter.context_forwards},
                             {"drafter_runs", r->drafter.runs},
                             {"drafter_context_ms", r->drafter.context_ms},
                             {"drafter_block_ms", r->drafter.block_ms}});
    }
    rows.push_back({{"concurrency", n},
                    {"prompt_tokens", l.p},
                    {"gen_tokens", l.g},
                    {"n_ctx", eo.n_ctx},
                    {"kv_block", eo.kv_block},
                    {"prefill_chunk", eo.prefill_chunk},
                    {"step_token_budget", std::max<int64_t>({eo.step_tokens, eo.prefill_chunk, eo.max_seqs})},
                    {"wall_ms", s.wall_ms},
                    {"ttft_ms_p50", s.ttft_p50},
                    {"ttft_ms_p99", s.ttft_p99},
                    {"prefill_tokens_per_s", s.prefill_tps},
                    {"decode_tokens_per_s", s.decode_tps},
                    {"total_tokens_per_s", s.total_tps},
                    {"steps", std::llround(s.steps)},
                    {"tokens_per_step", s.tokens_per_step},
                    {"preemptions", std::llround(s.preemptions)},
                    {"runs", run_rows}});
    if (!a.replay.empty()) {
      rows.back()["replay"] = replay_rows;
      rows.back()["replay_runs"] = replay_runs;
    }
  }

  fmt::print(
      "| N | prompt | gen | wall ms | TTFT p50 ms | TTFT p99 ms | prefill tok/s | decode tok/s | total tok/s | steps | "
      "tok/step |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Summary& s : table) {
    fmt::print("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {:.2f} |\n", s.l.n,
               s.l.p, s.l.g, s.wall_ms, s.ttft_p50, s.ttft_p99, s.prefill_tps, s.decode_tps, s.total_tps, s.steps,
               s.tokens_per_step);
  }
  if (!replay_table.empty()) {
    fmt::print(
        "\n| N | spec | drafter | decode tok/s | x plain | tokens / verify step | steps without drafts | "
        "ms / step: plain (plain level) + drafting | drafter ms, timed runs (context + blocks) | "
        "same tokens as plain |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (const ReplaySummary& r : replay_table) {
      const spec::DFlashDrafter::Stats& d = r.row.drafter;
      const std::string drafter_ms = a.replay_drafter ? fmt::format("{:.2f} ({:.2f} + {:.2f})",
                                                                    d.context_ms + d.block_ms, d.context_ms, d.block_ms)
                                                      : "-";
      const std::string step_ms =
          fmt::format("{:.2f} x {} ({:.2f}) + {:.2f} x {}", r.row.costs.plain_step_ms(), r.row.costs.plain_decode_steps,
                      r.row.plain_level_step_ms, r.row.costs.drafting_step_ms(), r.row.costs.drafting_steps);
      fmt::print("| {} | replay:{} (block {}{}) | {} | {:.1f} | {:.2f} | {:.2f} | {} of {} | {} | {} | {} |\n", r.n,
                 r.row.mean_commit, a.max_draft + 1, a.always_speculate ? ", always" : "",
                 a.replay_drafter ? a.replay_drafter_name : "none (drafts free)", r.row.decode_tps,
                 r.row.decode_tps / r.plain_tps, r.row.tokens_per_verify, r.row.costs.undrafted_steps, r.row.steps,
                 step_ms, drafter_ms, r.row.exact ? "yes" : "no");
    }
  }
  return rows;
}

Result<nlohmann::json> run_prefix_cache_bench(Model& model, const text::Tokenizer* tokenizer, int64_t prefix_tokens,
                                              int64_t suffix_tokens, int32_t prefill_chunk, int reps) {
  if (prefix_tokens < 1 || suffix_tokens < 1 || reps < 1 || prefill_chunk < 1) {
    return make_error(StatusCode::kInvalidArgument, "--prefix-reuse, its suffix, the chunk and -r must be >= 1");
  }
  const int64_t n_vocab = model.hparams().n_vocab;
  std::mt19937_64 rng(99);
  auto random_ids = [&](int64_t n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(n_vocab));
    return v;
  };
  EngineOptions o;
  o.max_seqs = 1;
  o.n_ctx = prefix_tokens + suffix_tokens + 16;
  o.kv_tokens = 2 * o.n_ctx;  // both requests' pages stay in the pool
  o.prefill_chunk = prefill_chunk;
  GenerateOptions g;
  g.max_tokens = 1;
  g.ignore_eos = true;
  g.sampling.temperature = 0;
  std::vector<double> cold, warm;
  int64_t hit_tokens = 0;
  for (int i = -1; i < reps; ++i) {  // i = -1: warm-up pair, not counted
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(model, tokenizer, o));
    const std::vector<int32_t> prefix = random_ids(prefix_tokens);
    std::vector<int32_t> a = prefix, b = prefix;
    const auto sa = random_ids(suffix_tokens), sb = random_ids(suffix_tokens);
    a.insert(a.end(), sa.begin(), sa.end());
    b.insert(b.end(), sb.begin(), sb.end());
    SAKER_ASSIGN_OR_RETURN(GenerateResult ra, engine->generate(a, g));
    SAKER_ASSIGN_OR_RETURN(GenerateResult rb, engine->generate(b, g));
    if (i < 0) continue;
    cold.push_back(ra.prompt_ms);
    warm.push_back(rb.prompt_ms);
    hit_tokens = engine->stats().pool.hit_tokens;
  }
  const double c = median_of(cold), w = median_of(warm);
  fmt::print("| prefix tokens | suffix tokens | cold TTFT ms | warm TTFT ms | warm / cold | cached tokens hit |\n"
             "|---|---|---|---|---|---|\n| {} | {} | {:.2f} | {:.2f} | {:.1f}% | {} |\n",
             prefix_tokens, suffix_tokens, c, w, c > 0 ? 100.0 * w / c : 0.0, hit_tokens);
  return nlohmann::json{{"prefix_tokens", prefix_tokens}, {"suffix_tokens", suffix_tokens},
                        {"cold_ttft_ms", c},           {"warm_ttft_ms", w},
                        {"warm_over_cold", c > 0 ? w / c : 0.0}, {"hit_tokens", hit_tokens},
                        {"cold_runs_ms", cold},        {"warm_runs_ms", warm}};
}

}  // namespace saker::cli
