// `saker bench -m MODEL`: prefill, decode and verify-width speed of a model on the CPU or the GPU, with the
// median of repeated runs and the share of the machine's roofline (bytes per step over memory bandwidth for
// decode, FLOPs over the matrix rate for prefill). --json writes every figure for later comparison.
// --concurrency runs the batching engine's throughput test instead (cli/bench_engine.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli/bench_ceilings.h"
#include "cli/bench_engine.h"
#include "cli/bench_prompts.h"
#include "cli/bench_stats.h"
#include "cli/commands.h"
#include "cli/device_args.h"
#include "cli/model_loading.h"
#include "core/clock.h"
#include "core/env.h"
#include "engine/block_allocator.h"
#include "engine/sequence_batch.h"
#include "models/kv_cache.h"
#include "ops/device_info.h"

namespace saker::cli {
namespace {

struct BenchArgs {
  std::string model;
  DeviceArgs dev;  // --device, --tensor-parallel, --no-cuda-graphs, --batch-invariant (no --ref-ops)
  std::vector<int64_t> prefill = {512, 2048, 8192};
  std::vector<int64_t> decode_ctx = {0, 4096};
  int64_t n_decode = 128;
  std::vector<int64_t> rows = {1, 2, 4, 8, 16, 32, 64};
  int64_t verify_ctx = 512;
  int reps = 5;
  int warmup = 1;
  std::string json;
  double bandwidth_gbs = 0;  // 0: the device's default (GPU) or a measurement (CPU)
  double tflops = 0;
  int64_t batch_tokens = 2048;
  EngineBenchArgs engine;  // used when engine.concurrency is not empty
  int64_t prefix_reuse = 0;  // > 0: the prefix cache's warm vs cold time to first token with a prefix this long
  std::string spec;          // "replay:L[,L...]": the engine test replays each level at these acceptances
  std::string replay_drafter = "random";  // random | none | a DFlash drafter folder: whose cost replay carries
  std::string prompts;       // a prompts file: the real-prompt test (cli/bench_prompts.h) instead
  SpeculationArgs speculation;  // its proposer (--drafter, --draft-tree, --draft-model, --spec ngram)
  bool draft_max_given = false;
};

// A random DFlash drafter of z-lab's recipe for a Qwen3 target (5 layers of the target's layer shape).
constexpr int64_t kRandomDrafterLayers = 5;

// The drafter whose cost --spec replay carries: a random one of real size, a drafter folder, or none.
Result<std::shared_ptr<const spec::DFlashWeights>> replay_drafter(const BenchArgs& a, const LoadedModel& lm) {
  if (a.replay_drafter == "none") return std::shared_ptr<const spec::DFlashWeights>();
  if (a.replay_drafter != "random") return spec::DFlashWeights::load(a.replay_drafter, lm.weights);
  const ModelHParams& h = lm.model->hparams();
  const int64_t per_layer = h.n_embd * (h.q_dim() + 2 * h.kv_dim()) + h.q_dim() * h.n_embd + 3 * h.n_ff * h.n_embd;
  const double gb = 2.0 * static_cast<double>(kRandomDrafterLayers * per_layer + 5 * h.n_embd * h.n_embd) / 1e9;
  fmt::print(stderr, "bench: a random DFlash drafter for --spec replay: {} layers of the target's shape, block {}, "
                     "BF16, {:.2f} GB (--replay-drafter none: drafts cost nothing)\n",
             kRandomDrafterLayers, a.engine.max_draft + 1, gb);
  return spec::DFlashWeights::random(lm.weights, kRandomDrafterLayers, a.engine.max_draft + 1, 1);
}

// "replay:2,4,6,8" -> {2, 4, 6, 8}.
Result<std::vector<double>> parse_replay(const std::string& spec) {
  const std::string prefix = "replay:";
  if (spec.rfind(prefix, 0) != 0 || spec.size() == prefix.size()) {
    return make_error(StatusCode::kInvalidArgument,
                      "--spec: expected replay:L[,L...] (mean tokens per verify step), got '{}'", spec);
  }
  std::vector<double> out;
  std::stringstream ss(spec.substr(prefix.size()));
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(v >= 1.0)) {
      return make_error(StatusCode::kInvalidArgument, "--spec replay: '{}' is not a number >= 1", item);
    }
    out.push_back(v);
  }
  return out;
}

using Clock = std::chrono::steady_clock;

struct Sample {
  std::string test;
  int64_t tokens = 0;  // tokens per timed unit
  int64_t ctx = 0;     // context before the timed tokens
  std::vector<double> ms;
  double roofline_ms = 0;  // the ceiling's time for the same unit
  bool ids = false;        // a verify step copying argmax ids, not logits
};

// One sequence over the whole cache; builds chain batches at any slot.
class Bench {
 public:
  Bench(Model& model, KvStorage& kv) : model_(model), kv_(kv), h_(model.hparams()) {
    table_.resize(kv.config().n_blocks);
    for (size_t i = 0; i < table_.size(); ++i) table_[i] = static_cast<int32_t>(i);
  }

  // Forwards tokens [start, start + n) of the chain; logits for the last `n_out` rows, or with `ids` only their
  // argmax ids (what a greedy step copies back).
  Status step(int64_t start, int64_t n, int64_t n_out, bool ids = false) {
    tokens_.resize(n);
    for (auto& t : tokens_) t = static_cast<int32_t>(rng_() % static_cast<uint64_t>(h_.n_vocab));
    out_.resize(n_out);
    for (int64_t i = 0; i < n_out; ++i) out_[i] = static_cast<int32_t>(n - n_out + i);
    logits_.resize(n_out * h_.n_vocab);
    ids_.resize(n_out);
    const SequenceBatch sb(table_, start, n, AttentionMask::kCausal);
    ForwardBatch b;
    b.tokens = tokens_;
    b.attn = sb.attn;
    b.output_rows = out_;
    if (ids) b.argmax = ids_.data();
    return model_.forward(b, kv_.layers(), ids ? nullptr : logits_.data());
  }

  // Fills slots [0, n) in chunks (untimed context for decode and verify).
  Status fill(int64_t n, int64_t chunk) {
    for (int64_t b = 0; b < n; b += chunk) SAKER_RETURN_IF_ERROR(step(b, std::min(chunk, n - b), 1));
    return {};
  }

  const std::vector<float>& logits() const { return logits_; }

 private:
  Model& model_;
  KvStorage& kv_;
  const ModelHParams& h_;
  std::mt19937_64 rng_{1234};
  std::vector<int32_t> table_, tokens_, out_, ids_;
  std::vector<float> logits_;
};

template <typename F>
Result<std::vector<double>> time_runs(int warmup, int reps, F&& run) {
  for (int i = 0; i < warmup; ++i) SAKER_RETURN_IF_ERROR(run());
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    SAKER_RETURN_IF_ERROR(run());
    ms.push_back(ms_since(t0));
  }
  return ms;
}

int run_engine(const BenchArgs& a);

// The name of the first CUDA device (the one `--device cuda` runs on), or "" without one.
std::string first_gpu_name() {
  const std::vector<CudaDeviceInfo> devices = cuda_devices();
  return devices.empty() ? std::string() : devices.front().name;
}

// The bench's batch size and graph switch.
OpsOptions bench_ops(const BenchArgs& a) {
  OpsOptions ops = a.dev.ops();
  ops.max_batch_tokens = a.batch_tokens;
  return ops;
}

// What a JSON must say of how its figures were made: the options above and the debug switches that pick
// kernels (a baseline measured with SAKER_CUDA_MATMUL=legacy is not today's default path).
nlohmann::json bench_options_json(const BenchArgs& a) {
  const OpsOptions ops = bench_ops(a);
  const auto env = [](const char* v) { return v ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"max_batch_tokens", ops.max_batch_tokens},
          {"cuda_graphs", ops.cuda_graphs},
          {"batch_invariant", ops.batch_invariant},
          {"tensor_parallel", ops.tensor_parallel},
          {"SAKER_CUDA_MATMUL", env(debug_env().cuda_matmul)},
          {"SAKER_CUDA_ATTENTION", env(debug_env().cuda_attention)},
          {"SAKER_CUDA_PDL", env(debug_env().cuda_pdl)}};
}

// The model on the asked device, with bench_ops.
Result<LoadedModel> load_bench_model(const BenchArgs& a) { return load_model_on(a.model, bench_ops(a), a.dev.device); }

// The real-prompt test: the prompts plain and speculating at each concurrency (cli/bench_prompts.h).
int run_prompts(const BenchArgs& a) {
  PromptBenchArgs p;
  p.prompts_file = a.prompts;
  if (!a.engine.concurrency.empty()) p.concurrency = a.engine.concurrency;
  p.gen_tokens = a.engine.gen_tokens;
  p.reps = a.reps;
  p.kv_block = a.engine.kv_block;
  p.prefill_chunk = a.engine.prefill_chunk;
  p.spec = a.speculation;
  if (a.spec == "ngram") p.spec.spec = "ngram";
  if (a.draft_max_given) p.spec.draft_max = a.engine.max_draft;
  p.spec.always_speculate = a.engine.always_speculate;
  if (Status st = check_speculation_args(p.spec); !st.ok()) return fail(st.message());
  auto loaded = load_bench_model(a);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  OpsOptions ops = bench_ops(a);
  ops.device = loaded->model->device();
  fmt::print(stderr, "bench: {} on {} | {}\n", a.model, device_name(loaded->model->device()),
             loaded->model->hparams().summary());
  auto rows = run_prompt_bench(*loaded, ops, p);
  if (!rows.ok()) return fail(rows.status().to_string());
  if (!a.json.empty()) {
    const nlohmann::json j = {{"model", a.model}, {"device", device_name(loaded->model->device())},
                              {"geometry", loaded->model->hparams().summary()}, {"reps", a.reps},
                              {"options", bench_options_json(a)},
                              {"prompts_file", std::filesystem::path(a.prompts).filename().string()},
                              {"prompts", *rows}};
    std::ofstream f(a.json);
    f << j.dump(2) << "\n";
    if (!f) return fail(fmt::format("cannot write {}", a.json));
  }
  return 0;
}

int run(const BenchArgs& a) {
  if (a.reps < 1) return fail("--reps must be >= 1");
  if (!a.prompts.empty()) return run_prompts(a);
  if (a.speculation.any()) return fail("--drafter, --draft-tree and --draft-model need --prompts FILE");
  if (a.spec == "ngram") return fail("--spec ngram needs --prompts FILE (the synthetic tests take --spec replay:L)");
  if (!a.spec.empty()) {
    auto replay = parse_replay(a.spec);
    if (!replay.ok()) return fail(replay.status().message());
    BenchArgs b = a;
    b.engine.replay = *replay;
    if (b.engine.concurrency.empty()) b.engine.concurrency = {1};
    return run_engine(b);
  }
  if (!a.engine.concurrency.empty() || a.prefix_reuse > 0) return run_engine(a);
  auto loaded = load_bench_model(a);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  Model& model = *loaded->model;
  const ModelHParams& h = model.hparams();
  const ModelCost cost = model_cost(*loaded->weights);

  int64_t need = a.verify_ctx + 64;
  for (int64_t p : a.prefill) need = std::max(need, p);
  for (int64_t c : a.decode_ctx) need = std::max(need, c + a.n_decode);
  for (int64_t r : a.rows) need = std::max(need, a.verify_ctx + r);
  const KvCacheConfig kc = kv_cache_config_for(model, need);
  auto kv = model.allocate_kv(kc);
  if (!kv.ok()) return fail(kv.status().to_string());

  Ceilings ceil = model.device() == Device::kCuda ? gpu_ceilings(first_gpu_name()) : measure_cpu_ceilings();
  if (a.bandwidth_gbs > 0) ceil.bandwidth_gbs = a.bandwidth_gbs;
  if (a.tflops > 0) ceil.tflops = a.tflops;
  const double kv_elem = kc.dtype == DType::kF32 ? 4.0 : 2.0;
  const double kv_bytes_per_token = 2.0 * h.n_layer * h.kv_dim() * kv_elem;  // K and V of one position

  fmt::print(stderr, "bench: {} on {} | {} | weights read per decode step {:.2f} GiB | ceilings {:.0f} GB/s, {:.1f} TFLOP/s ({})\n",
             a.model, device_name(model.device()), h.summary(), cost.decode_bytes / double(1 << 30),
             ceil.bandwidth_gbs, ceil.tflops, ceil.source);

  Bench bench(model, **kv);
  std::vector<Sample> samples;
  const int64_t chunk = std::max<int64_t>(64, a.batch_tokens);
  auto fail_at = [](const std::string& what, const Status& s) { return fail(fmt::format("{}: {}", what, s.to_string())); };

  for (int64_t n : a.prefill) {
    Sample s{fmt::format("pp{}", n), n, 0, {}, 0};
    auto ms = time_runs(a.warmup, a.reps, [&] { return bench.step(0, n, 1); });
    if (!ms.ok()) return fail_at(s.test, ms.status());
    s.ms = *ms;
    // Matrix FLOPs of every token through the layers, the head for one row, causal attention (QK and PV).
    const double flops = 2.0 * cost.layer_params * n + 2.0 * cost.head_params +
                         4.0 * h.n_layer * h.q_dim() * (static_cast<double>(n) * (n + 1) / 2);
    s.roofline_ms = flops / (ceil.tflops * 1e12) * 1e3;
    samples.push_back(s);
    fmt::print(stderr, "  {:<12} {:>9.2f} ms  {:>10.1f} tok/s\n", s.test, median_of(s.ms), n * 1e3 / median_of(s.ms));
  }
  for (int64_t c : a.decode_ctx) {
    if (auto st = bench.fill(c, chunk); !st.ok()) return fail_at("context fill", st);
    Sample s{fmt::format("tg{}@{}", a.n_decode, c), a.n_decode, c, {}, 0};
    auto ms = time_runs(a.warmup, a.reps, [&]() -> Status {
      for (int64_t i = 0; i < a.n_decode; ++i) SAKER_RETURN_IF_ERROR(bench.step(c + i, 1, 1));
      return {};
    });
    if (!ms.ok()) return fail_at(s.test, ms.status());
    s.ms = *ms;
    const double avg_ctx = c + (a.n_decode + 1) / 2.0;
    s.roofline_ms = a.n_decode * (cost.decode_bytes + avg_ctx * kv_bytes_per_token) / (ceil.bandwidth_gbs * 1e9) * 1e3;
    samples.push_back(s);
    fmt::print(stderr, "  {:<12} {:>9.2f} ms  {:>10.1f} tok/s\n", s.test, median_of(s.ms), a.n_decode * 1e3 / median_of(s.ms));
  }
  if (!a.rows.empty()) {
    if (auto st = bench.fill(a.verify_ctx, chunk); !st.ok()) return fail_at("context fill", st);
  }
  // Each width twice: "verifyR@C" copies every row's logits back (a sampled verify's outputs, and the figure
  // earlier baselines hold), "verifyR@C ids" only each row's argmax id (what a greedy verify step copies: at 16
  // rows of a 151,936-token vocabulary the logits are 9.7 MB a step).
  const int verify_steps = 10;
  for (const bool ids : {false, true}) {
    for (int64_t r : a.rows) {
      Sample s{fmt::format("verify{}@{}{}", r, a.verify_ctx, ids ? " ids" : ""), r, a.verify_ctx, {}, 0, ids};
      auto ms = time_runs(a.warmup, a.reps, [&]() -> Status {
        for (int i = 0; i < verify_steps; ++i) SAKER_RETURN_IF_ERROR(bench.step(a.verify_ctx, r, r, ids));
        return {};
      });
      if (!ms.ok()) return fail_at(s.test, ms.status());
      for (double m : *ms) s.ms.push_back(m / verify_steps);
      s.roofline_ms = (cost.decode_bytes + (a.verify_ctx + r) * kv_bytes_per_token) / (ceil.bandwidth_gbs * 1e9) * 1e3;
      samples.push_back(s);
      fmt::print(stderr, "  {:<12} {:>9.3f} ms/step\n", s.test, median_of(s.ms));
    }
  }

  // The table: tokens/s for prefill and decode, ms per step and the cost relative to one row for verify (each
  // output kind against its own one-row step).
  double one_row_ms = 0, one_row_ids_ms = 0;
  for (const Sample& s : samples) {
    if (s.test.rfind("verify1@", 0) == 0) (s.ids ? one_row_ids_ms : one_row_ms) = median_of(s.ms);
  }
  nlohmann::json results = nlohmann::json::array();
  fmt::print("| test | ctx | ms (median) | spread | tok/s | % roofline | x 1 row |\n|---|---|---|---|---|---|---|\n");
  for (const Sample& s : samples) {
    const double med = median_of(s.ms);
    const auto [lo, hi] = std::minmax_element(s.ms.begin(), s.ms.end());
    const double spread = med > 0 ? (*hi - *lo) / med * 100 : 0;
    const bool verify = s.test.rfind("verify", 0) == 0;
    const double tok_s = s.tokens * 1e3 / med;
    const double pct = s.roofline_ms / med * 100;
    const double one_row = s.ids ? one_row_ids_ms : one_row_ms;
    const std::string rel = verify && one_row > 0 ? fmt::format("{:.2f}", med / one_row) : "";
    fmt::print("| {} | {} | {:.3f} | {:.1f}% | {:.1f} | {:.1f}% | {} |\n", s.test, s.ctx, med, spread, tok_s, pct, rel);
    results.push_back({{"test", s.test},
                       {"tokens", s.tokens},
                       {"ctx", s.ctx},
                       {"ms_median", med},
                       {"ms_runs", s.ms},
                       {"tokens_per_s", tok_s},
                       {"roofline_ms", s.roofline_ms},
                       {"pct_roofline", pct},
                       {"relative_to_one_row", verify && one_row > 0 ? med / one_row : 0.0}});
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"model", a.model},
                        {"device", device_name(model.device())},
                        {"geometry", h.summary()},
                        {"decode_weight_bytes", cost.decode_bytes},
                        {"layer_params", cost.layer_params},
                        {"head_params", cost.head_params},
                        {"weight_types", cost.type_summary},
                        {"ceilings", {{"bandwidth_gbs", ceil.bandwidth_gbs}, {"tflops", ceil.tflops}, {"source", ceil.source}}},
                        {"reps", a.reps},
                        {"options", bench_options_json(a)},
                        {"results", results}};
    std::ofstream f(a.json);
    f << j.dump(2) << "\n";
    if (!f) return fail(fmt::format("cannot write {}", a.json));
  }
  return 0;
}

// The engine bench: the same model loading and JSON header, rows under "engine".
int run_engine(const BenchArgs& a) {
  EngineBenchArgs e = a.engine;
  e.reps = a.reps;
  e.warmup = a.warmup;
  if (!e.concurrency.empty()) {
    if (auto st = check_engine_bench_args(e); !st.ok()) return fail(st.message());
  }
  auto loaded = load_bench_model(a);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  Model& model = *loaded->model;
  if (!e.replay.empty()) {
    auto drafter = replay_drafter(a, *loaded);
    if (!drafter.ok()) return fail(fmt::format("--replay-drafter: {}", drafter.status().to_string()));
    e.replay_drafter = *drafter;
    e.replay_drafter_name = a.replay_drafter == "random" || a.replay_drafter == "none"
                                ? a.replay_drafter
                                : std::filesystem::path(a.replay_drafter).filename().string();
    e.drafter_ops = bench_ops(a);
    e.drafter_ops.device = model.device();
    e.drafter_ops.tensor_parallel = 1;  // a drafter runs whole
  }
  fmt::print(stderr, "bench: {} on {} | {} | engine: prompt {} + gen {} tokens per request, concurrency {}\n", a.model,
             device_name(model.device()), model.hparams().summary(), e.prompt_tokens, e.gen_tokens,
             fmt::join(e.concurrency, ","));
  nlohmann::json engine_rows = nlohmann::json::array(), prefix = nullptr;
  if (!e.concurrency.empty()) {
    auto rows = run_engine_bench(model, loaded->tokenizer.get(), e);
    if (!rows.ok()) return fail(rows.status().to_string());
    engine_rows = *rows;
  }
  if (a.prefix_reuse > 0) {
    auto p = run_prefix_cache_bench(model, loaded->tokenizer.get(), a.prefix_reuse, 64, e.prefill_chunk, a.reps);
    if (!p.ok()) return fail(p.status().to_string());
    prefix = *p;
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"model", a.model},
                        {"device", device_name(model.device())},
                        {"geometry", model.hparams().summary()},
                        {"reps", a.reps},
                        {"options", bench_options_json(a)},
                        {"engine", engine_rows},
                        {"prefix_cache", prefix}};
    std::ofstream f(a.json);
    f << j.dump(2) << "\n";
    if (!f) return fail(fmt::format("cannot write {}", a.json));
  }
  return 0;
}

}  // namespace

Command make_bench_command() {
  auto a = std::make_shared<BenchArgs>();
  auto sub = std::make_shared<CLI::App*>(nullptr);
  return {
      [a, sub](CLI::App& app) {
        CLI::App* s = app.add_subcommand("bench", "Measure prefill, decode and verify speed against the roofline");
        *sub = s;
        s->add_option("-m,--model", a->model, "Model: a .gguf file or a Hugging Face folder")->required();
        add_device_options(s, &a->dev, /*offer_ref_ops=*/false);
        s->add_option("-p,--prefill", a->prefill, "Prefill lengths (tokens)")->delimiter(',')->capture_default_str();
        s->add_option("--decode-ctx", a->decode_ctx, "Contexts to decode at")->delimiter(',')->capture_default_str();
        s->add_option("-n,--n-decode", a->n_decode, "Tokens per decode run")->capture_default_str();
        s->add_option("--rows", a->rows,
                      "Verify widths: rows of one sequence per step (each measured copying all rows' logits back, then "
                      "only their argmax ids: the \"ids\" rows)")
            ->delimiter(',')
            ->capture_default_str();
        s->add_option("--verify-ctx", a->verify_ctx, "Context before the verify rows")->capture_default_str();
        s->add_option("-r,--reps", a->reps, "Timed runs per test (median reported)")->capture_default_str();
        s->add_option("--warmup", a->warmup, "Untimed runs before the timed ones")->capture_default_str();
        s->add_option("--json", a->json, "Write the results as JSON to this file");
        s->add_option("--bandwidth", a->bandwidth_gbs,
                      "Memory bandwidth ceiling in GB/s (default: the H200's 4280 on a GPU, measured on a CPU)");
        s->add_option("--tflops", a->tflops,
                      "Matrix rate ceiling in TFLOP/s (default: the H200's 800 on a GPU, measured on a CPU)");
        s->add_option("--batch-tokens", a->batch_tokens, "Tokens per forward (prefill chunks)")->capture_default_str();
        s->add_option("--concurrency", a->engine.concurrency,
                      "Batching engine test instead of the single-sequence ones: for each N, N requests of "
                      "--prompt-tokens random tokens generating --gen-tokens each, all at once (table and the "
                      "--json key \"engine\": wall time, TTFT p50/p99, prefill, decode and total tok/s, tokens per step)")
            ->delimiter(',');
        s->add_option("--prompt-tokens", a->engine.prompt_tokens, "Engine test: prompt tokens per request")
            ->capture_default_str();
        s->add_option("--gen-tokens", a->engine.gen_tokens, "Engine test: tokens generated per request")
            ->capture_default_str();
        s->add_option("--prefix-reuse", a->prefix_reuse,
                      "Engine test: time to first token of a request sharing this many prompt tokens with an earlier "
                      "one (prefix cache) against the same request cold")
            ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
        s->add_option("--kv-block", a->engine.kv_block, "Engine test: tokens per KV page")->capture_default_str();
        s->add_option("--prefill-chunk", a->engine.prefill_chunk, "Engine test: prompt tokens one sequence feeds per step")
            ->capture_default_str();
        s->add_option("--step-tokens", a->engine.step_tokens,
                      "Engine test: tokens per engine step (0: 4 x prefill chunk + N, as saker serve)")
            ->capture_default_str();
        s->add_option("--spec", a->spec,
                      "Engine test, speculating: replay:L[,L...] runs each level's prompts again with every sequence "
                      "drafting the target's own greedy continuation, corrupted so that a verify step commits L "
                      "tokens on average (the machinery's cost at that acceptance; drafts cost nothing); reports "
                      "decode tok/s against plain decoding and whether the tokens are the same (default "
                      "concurrency 1); with --prompts, 'ngram' speculates with prompt lookup");
        s->add_flag("--always-speculate", a->engine.always_speculate,
                    "With --spec replay: draft in every step (by default the measured step times decide, as in run "
                    "and serve)");
        s->add_option("--replay-drafter", a->replay_drafter,
                      "With --spec replay: the drafter whose cost each step carries beside the replayed drafts: "
                      "'random' (a random DFlash drafter of real size: 5 layers of the target's shape, block "
                      "--draft-max + 1), a DFlash drafter folder, or 'none' (drafts cost nothing)")
            ->capture_default_str();
        s->add_option("--draft-max", a->engine.max_draft,
                      "With --spec replay: drafts per verify step (block - 1); with --prompts and --spec ngram or "
                      "--draft-model: most tokens drafted per step (default 8)")
            ->check(CLI::Range(1, 63))
            ->capture_default_str()
            ->each([a](const std::string&) { a->draft_max_given = true; });
        s->add_option("--prompts", a->prompts,
                      "Real prompts instead of random ones: a JSON list of strings or {\"ids\": [...]} / {\"text\": "
                      "...} objects, each generating --gen-tokens greedy tokens at each --concurrency (default 1), "
                      "plain and, with --drafter / --draft-model / --spec ngram, speculating: tok/s, tok/s per "
                      "stream, tokens per verify step, and whether the tokens equal plain decoding's");
        s->add_option("--drafter", a->speculation.drafter,
                      "With --prompts: a DFlash drafter folder to speculate with (runs on the model's device)");
        s->add_option("--draft-tree", a->speculation.draft_tree,
                      "With --prompts and --drafter: verify trees of up to N nodes (0: the chain)")
            ->capture_default_str();
        s->add_option("--draft-model", a->speculation.draft_model,
                      "With --prompts: a smaller model of the same tokenizer to speculate with");
      },
      [sub] { return *sub && (*sub)->parsed(); },
      [a] { return run(*a); },
  };
}

}  // namespace saker::cli
