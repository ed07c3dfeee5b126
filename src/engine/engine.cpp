#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "core/clock.h"
#include "core/log.h"

namespace saker {

namespace {
}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(Model& model, const text::Tokenizer* tokenizer,
                                               const EngineOptions& options) {
  EngineOptions o = options;
  if (o.max_seqs < 1) return make_error(StatusCode::kInvalidArgument, "the engine needs at least one sequence slot");
  if (o.n_ctx < 2) return make_error(StatusCode::kInvalidArgument, "context size must be at least 2 (got {})", o.n_ctx);
  if (o.kv_block < 1) return make_error(StatusCode::kInvalidArgument, "--kv-block must be >= 1 (got {})", o.kv_block);
  if (o.prefill_chunk < 1) return make_error(StatusCode::kInvalidArgument, "prefill chunk must be >= 1");
  if (o.kv_tokens <= 0) o.kv_tokens = static_cast<int64_t>(o.max_seqs) * o.n_ctx;
  if (o.kv_tokens < o.n_ctx) {
    return make_error(StatusCode::kInvalidArgument,
                      "the KV pool ({} tokens) must hold at least one full context ({} tokens)", o.kv_tokens, o.n_ctx);
  }
  const ModelHParams& h = model.hparams();
  KvCacheConfig c = kv_cache_config(h.n_layer, h.n_head_kv, h.head_dim, o.kv_tokens, model.kv_dtype());
  c.block_size = o.kv_block;
  c.n_blocks = (o.kv_tokens + o.kv_block - 1) / o.kv_block;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvStorage> storage, model.allocate_kv(c));
  KvPoolOptions po;
  po.prefix_cache = o.prefix_cache;
  po.host_cache_bytes = o.cache_ram_bytes;
  auto pool = std::make_unique<KvPool>(std::move(storage), po);
  return std::unique_ptr<Engine>(new Engine(model, tokenizer, o, std::move(pool)));
}

Engine::Engine(Model& model, const text::Tokenizer* tokenizer, const EngineOptions& options,
               std::unique_ptr<KvPool> pool)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      pool_(std::move(pool)),
      scheduler_(*pool_, SchedulerOptions{options.max_seqs, options.step_tokens, options.prefill_chunk,
                                          options.speculation_cost_policy,
                                          options.draft_rows > 0 ? options.draft_rows : model.invariant_rows()}),
      runner_(model, *pool_) {}

Engine::~Engine() {
  stop();
  cancel_all();
  // Whatever is left ends now (FinishReason::kShutdown), so every on_done runs exactly once.
  for (;;) {
    auto r = step();
    if (!r.ok() || !*r) break;
  }
}

void Engine::submit(std::vector<int32_t> prompt, GenerateOptions options,
                    std::function<bool(std::string_view)> on_text, DoneCallback on_done) {
  const Status st = check_generate_request(prompt, options, model_.hparams().n_vocab, options_.n_ctx);
  if (!st.ok()) {
    if (on_done) on_done(st);
    return;
  }
  std::unique_ptr<Proposer> proposer;
  if (options_.proposer) {
    auto p = options_.proposer();
    if (!p.ok()) {
      if (on_done) on_done(p.status());
      return;
    }
    proposer = std::move(p).value();
  }
  {
    std::lock_guard lock(mutex_);
    auto seq = std::make_unique<Sequence>(next_id_++, std::move(prompt), std::move(options), std::move(on_text),
                                          std::move(on_done), tokenizer_, options_.n_ctx);
    if (proposer) {
      seq->draft_policy = DraftPolicy(proposer->max_nodes(), options_.adaptive_drafts && !proposer->drafts_trees(),
                                      stats_.accepted_drafts);
      seq->proposer = std::move(proposer);
      seq->result.draft.emplace();
      seq->result.draft->tokens_per_step.assign(seq->proposer->max_nodes() + 1, 0);
    }
    inbox_.push_back(std::move(seq));
  }
  cv_.notify_all();
}

Result<GenerateResult> Engine::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                        const std::function<bool(std::string_view)>& on_text) {
  std::promise<Result<GenerateResult>> done;
  auto future = done.get_future();
  submit(std::vector<int32_t>(prompt.begin(), prompt.end()), options, on_text,
         [&done](Result<GenerateResult> r) { done.set_value(std::move(r)); });
  if (!thread_.joinable()) {
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      auto r = step();
      if (!r.ok()) return r.status();
    }
  }
  return future.get();
}

void Engine::take_inbox() {
  std::deque<std::unique_ptr<Sequence>> in;
  {
    std::lock_guard lock(mutex_);
    in.swap(inbox_);
  }
  for (auto& s : in) scheduler_.add(std::move(s));
}

void Engine::finish(std::unique_ptr<Sequence> seq, Result<GenerateResult> r) {
  if (r.ok()) {
    seq->output.finish();
    const auto now = Sequence::Clock::now();
    if (seq->first_token_at) r->generate_ms = ms_between(*seq->first_token_at, now);
  }
  if (seq->on_done) seq->on_done(std::move(r));
}

Result<bool> Engine::step() {
  // StepCost's clock: the whole step, proposers' drafting (in schedule) and the verify walk included.
  const auto t0 = std::chrono::steady_clock::now();
  take_inbox();
  std::vector<std::unique_ptr<Sequence>> finished;
  // Shutdown ends everything waiting or running with its own reason, so that the server can tell a request
  // it cut (an error for the client) from one whose client cancelled it.
  const bool shutting_down = cancel_all_.load();
  if (shutting_down) {
    scheduler_.drain(&finished);
    batch_.clear();
  }
  // Sequences the scheduler ended (cancelled, or drained at shutdown) get their on_done even when scheduling
  // then failed.
  const Status scheduled = shutting_down ? Status() : scheduler_.schedule(&batch_, &finished);
  // Published before any callback runs, here and below: a client that sees its request end and then reads
  // the server's metrics finds its slot free.
  publish_stats();
  for (auto& s : finished) {
    s->result.finish = shutting_down ? FinishReason::kShutdown : FinishReason::kCancelled;
    GenerateResult r = s->result;
    finish(std::move(s), std::move(r));
  }
  SAKER_RETURN_IF_ERROR(scheduled);
  if (batch_.empty()) return !finished.empty();

  bool need_logits = !options_.device_argmax;
  std::span<const int32_t> taps;
  bool taps_on_device = false;
  for (const BatchSegment& g : batch_.segments) {
    // A greedy sequence's verify walk needs only each row's argmax, as its decode step does: the ids come
    // from the device instead of [rows, n_vocab] logits (39 MB a step for 64 rows of a 152K vocabulary).
    need_logits |= g.output >= 0 && g.seq->needs_logits();
    if (g.seq->proposer) {  // one drafter configuration per engine
      taps = g.seq->proposer->tap_layers();
      taps_on_device = g.seq->proposer->reads_device_taps();
    }
  }
  StepOutput out;
  // StepCost learns what decode and verify steps cost; a step with a prefill chunk would teach it a width's
  // price wrong.
  const bool decode_only = std::all_of(batch_.segments.begin(), batch_.segments.end(),
                                       [](const BatchSegment& g) { return g.n == 1 || g.tree; });
  const int64_t rows = batch_.n_tokens();
  const bool drafting = batch_.has_tree;
  const Status st = runner_.run(batch_, need_logits, taps, taps_on_device, &out);
  ++steps_;
  step_tokens_ += batch_.n_tokens();
  if (!st.ok()) {
    SAKER_LOG_WARN("engine step of {} tokens failed: {}", batch_.n_tokens(), st.to_string());
    std::vector<std::unique_ptr<Sequence>> failed;
    for (const BatchSegment& g : batch_.segments) {
      if (auto s = scheduler_.retire(g.seq)) failed.push_back(std::move(s));
    }
    batch_.clear();
    publish_stats();
    for (auto& s : failed) finish(std::move(s), st);
    return true;
  }
  postprocess(out);
  if (decode_only) {
    const double ms = ms_since(t0);
    scheduler_.step_cost().record(rows, ms);
    (drafting ? drafting_ms_ : plain_decode_ms_) += ms;
    ++(drafting ? drafting_steps_ : plain_decode_steps_);
  } else {
    scheduler_.step_cost().skip_step();
  }
  publish_stats();
  return true;
}

void Engine::postprocess(StepOutput& out) {
  const auto now = Sequence::Clock::now();
  std::vector<Sequence*> over;
  for (const BatchSegment& g : batch_.segments) {
    Sequence& s = *g.seq;
    if (g.tree) {
      auto going = verify(g, out);
      if (!going.ok()) {
        s.result.finish = FinishReason::kCancelled;
        SAKER_LOG_WARN("speculative verify failed: {}", going.status().to_string());
      }
      if (!going.ok() || !*going) over.push_back(&s);
      continue;
    }
    s.n_cached += g.n;
    pool_->commit(s.pages, s.tokens, s.n_cached);
    if (s.proposer) {
      const Status st = s.proposer->add_context(g.first, out.tap_rows(g.batch_begin, g.n));
      if (!st.ok()) {
        SAKER_LOG_WARN("drafter context failed: {}", st.to_string());
        over.push_back(&s);
        continue;
      }
      if (pool_->options().prefix_cache) s.proposer->commit_context(s.tokens);
    }
    if (g.output < 0) continue;
    if (!s.first_token_at) {
      s.first_token_at = now;
      s.result.prompt_ms = ms_between(s.arrived, now);
    }
    if (s.options.max_tokens == 0) {  // a prompt pass only
      over.push_back(&s);
      continue;
    }
    std::span<const float> raw;
    const int32_t id = out.have_logits ? sample_row(s, out.row(g.output), &raw) : out.ids[g.output];
    if (!accept_token(s, id, raw, now)) over.push_back(&s);
  }
  move_accepted_rows(&over);
  // The taps stay valid until the next step: proposers that copy them on their own stream finish that first
  // (one wait for a shared drafter, the later calls find nothing to wait for).
  for (const BatchSegment& g : batch_.segments) {
    if (!g.seq->proposer) continue;
    if (const Status st = g.seq->proposer->settle_context(); !st.ok()) {
      SAKER_LOG_WARN("drafter context failed: {}", st.to_string());
      if (std::find(over.begin(), over.end(), g.seq) == over.end()) over.push_back(g.seq);
    }
  }
  batch_.clear();
  std::vector<std::unique_ptr<Sequence>> done;
  for (Sequence* s : over) {
    if (std::unique_ptr<Sequence> owned = scheduler_.retire(s)) done.push_back(std::move(owned));
  }
  if (!done.empty()) publish_stats();  // before the callbacks (see step())
  for (auto& owned : done) {
    GenerateResult r = owned->result;
    finish(std::move(owned), std::move(r));
  }
}

void Engine::move_accepted_rows(std::vector<Sequence*>* over) {
  if (tree_moves_.empty()) return;
  std::vector<SlotMoves> seqs;
  seqs.reserve(tree_moves_.size());
  for (const TreeMoves& m : tree_moves_) seqs.push_back({m.seq->pages, m.from, m.to});
  if (const Status st = pool_->storage().copy_slots(seqs); !st.ok()) {
    // Their pages stay out of the prefix cache: they do not hold what their tokens say. A request the step
    // finished keeps its finish reason (every token is out); the others cannot go on.
    SAKER_LOG_WARN("moving accepted draft rows failed: {}", st.to_string());
    for (const TreeMoves& m : tree_moves_) {
      if (!m.going) continue;
      m.seq->result.finish = FinishReason::kCancelled;
      if (std::find(over->begin(), over->end(), m.seq) == over->end()) over->push_back(m.seq);
    }
  } else {
    for (const TreeMoves& m : tree_moves_) {
      moved_draft_rows_ += static_cast<int64_t>(m.from.size());
      pool_->commit(m.seq->pages, m.seq->tokens, m.seq->n_cached);
    }
  }
  tree_moves_.clear();
}

int32_t Engine::sample_row(Sequence& s, std::span<float> row, std::span<const float>* raw) {
  *raw = {};
  if (s.options.top_logprobs >= 0) {  // the sampler edits the row in place; logprobs read it as it came
    raw_.assign(row.begin(), row.end());
    *raw = raw_;
  }
  return s.sampler.sample(row, s.tokens);
}

bool Engine::accept_token(Sequence& s, int32_t id, std::span<const float> raw, Sequence::Clock::time_point now) {
  s.last_token_at = now;
  if (!s.output.push(id, raw)) return false;
  s.tokens.push_back(id);
  return true;
}

Result<bool> Engine::verify(const BatchSegment& g, StepOutput& out) {
  Sequence& s = *g.seq;
  const DraftNodes& d = s.drafts;
  const int64_t n = g.n;  // root + nodes; row i of the segment is output g.output + i
  std::vector<std::vector<int32_t>> children(n);
  for (int64_t j = 0; j < d.size(); ++j) children[d.parent[j] + 1].push_back(static_cast<int32_t>(j + 1));
  auto token_of = [&](int32_t row) { return row == 0 ? s.tokens[g.first] : d.tokens[row - 1]; };
  // The walk: one sampler call per accepted row, with the history through that row, exactly as plain decoding
  // decides each token; descend while the decided token is one of the current node's children.
  std::vector<int32_t> path = {0};
  bool going = true;
  const auto now = Sequence::Clock::now();
  for (;;) {
    const int32_t cur = path.back();
    std::span<const float> raw;
    const int32_t id = out.have_logits ? sample_row(s, out.row(g.output + cur), &raw) : out.ids[g.output + cur];
    if (!accept_token(s, id, raw, now)) {
      going = false;
      break;
    }
    const auto& kids = children[cur];
    const auto child = std::find_if(kids.begin(), kids.end(), [&](int32_t c) { return token_of(c) == id; });
    if (child == kids.end()) break;
    path.push_back(*child);
  }
  const int64_t n_commit = static_cast<int64_t>(path.size());
  s.draft_policy.record(*std::max_element(d.depth.begin(), d.depth.end()), n_commit - 1);
  accepted_ = accepted_ < 0 ? static_cast<double>(n_commit - 1)
                            : accepted_ + 0.05 * (static_cast<double>(n_commit - 1) - accepted_);
  DraftStats& st = *s.result.draft;
  ++st.verify_steps;
  st.committed_tokens += n_commit;
  st.drafted_tokens += d.size();
  ++st.tokens_per_step[std::min<int64_t>(n_commit, static_cast<int64_t>(st.tokens_per_step.size())) - 1];
  // Accepted rows to consecutive slots (a node's slot index >= its depth and deeper nodes come later, so
  // copying in path order never overwrites a row still to be read), moved with the other sequences' once the
  // step is verified (nothing reads them before; their pages join the prefix cache after the move); their
  // taps to the proposer. Also when the generation is over, as a plain decoding step keeps its last row: the
  // prefix cache then holds the whole answer for a conversation's next turn.
  TreeMoves moves{&s, {}, {}, going};
  for (int64_t k = 0; k < n_commit; ++k) {
    if (path[k] == k) continue;  // in place (a chain's rows always are)
    moves.from.push_back(static_cast<int32_t>(g.first + path[k]));
    moves.to.push_back(static_cast<int32_t>(g.first + k));
  }
  s.n_cached = g.first + n_commit;
  if (moves.from.empty()) {
    pool_->commit(s.pages, s.tokens, s.n_cached);
  } else {
    tree_moves_.push_back(std::move(moves));
  }
  if (const Status st = s.proposer->add_context(g.first, out.tap_rows(g.batch_begin, n_commit, path)); !st.ok()) {
    if (going) return st;
    // Every token of a finished request is out already: it keeps its finish reason.
    SAKER_LOG_WARN("drafter context of a finished request: {}", st.to_string());
    return false;
  }
  if (pool_->options().prefix_cache) s.proposer->commit_context(s.tokens);
  return going;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !inbox_.empty() || !scheduler_.idle(); });
      if (stop_) return;
    }
    auto r = step();
    if (!r.ok()) SAKER_LOG_WARN("engine step failed: {}", r.status().to_string());
  }
}

void Engine::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::cancel_all() {
  cancel_all_.store(true);
  cv_.notify_all();
}

void Engine::publish_stats() {
  EngineStats s;
  s.waiting = static_cast<int64_t>(scheduler_.n_waiting());
  s.running = static_cast<int64_t>(scheduler_.n_running());
  s.steps = steps_;
  s.step_tokens = step_tokens_;
  s.preemptions = scheduler_.n_preemptions();
  s.undrafted_steps = scheduler_.n_undrafted_steps();
  s.plain_decode_steps = plain_decode_steps_;
  s.drafting_steps = drafting_steps_;
  s.plain_decode_ms = plain_decode_ms_;
  s.drafting_ms = drafting_ms_;
  s.moved_draft_rows = moved_draft_rows_;
  s.pool = pool_->stats();
  std::lock_guard lock(mutex_);
  stats_ = s;
  stats_.accepted_drafts = accepted_;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  EngineStats s = stats_;
  s.waiting += static_cast<int64_t>(inbox_.size());
  return s;
}

Status Engine::validate() const { return scheduler_.validate(); }

}  // namespace saker
