#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace saker {

Scheduler::Scheduler(KvPool& pool, SchedulerOptions options) : pool_(pool), options_(options) {
  options_.max_seqs = std::max<int32_t>(1, options_.max_seqs);
  options_.prefill_chunk = std::max<int32_t>(1, options_.prefill_chunk);
  if (options_.step_tokens <= 0) {
    options_.step_tokens = 4 * static_cast<int64_t>(options_.prefill_chunk) + options_.max_seqs;
  }
  // A chunk is never cut to fit the budget (that would make a sequence's numbers depend on its neighbours),
  // so one chunk must always fit an otherwise empty step, and every running sequence's decode token a step.
  options_.step_tokens = std::max<int64_t>({options_.step_tokens, options_.prefill_chunk, options_.max_seqs});
  options_.draft_rows =
      options_.draft_rows > 0 ? std::min(options_.draft_rows, options_.step_tokens) : options_.step_tokens;
}

int64_t Scheduler::draft_share() const {
  int64_t decoding = 0;
  for (const auto& r : running_) decoding += r->n_pending() == 1 ? 1 : 0;
  return decoding == 0 ? 0 : options_.draft_rows / decoding - 1;
}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
  seq->state = SequenceState::kWaiting;
  waiting_.push_back(std::move(seq));
}

void Scheduler::append(Batch* batch, Sequence* seq, int64_t n) {
  const int32_t si = static_cast<int32_t>(batch->segments.size());
  BatchSegment g;
  g.seq = seq;
  g.first = seq->n_cached;
  g.n = n;
  g.batch_begin = batch->n_tokens();
  if (seq->n_cached + n == static_cast<int64_t>(seq->tokens.size())) {
    g.output = static_cast<int32_t>(batch->output_rows.size());
    batch->output_rows.push_back(static_cast<int32_t>(batch->tokens.size() + n - 1));
  }
  for (int64_t i = 0; i < n; ++i) {
    batch->tokens.push_back(seq->tokens[g.first + i]);
    batch->token_seq.push_back(si);
    batch->token_slot.push_back(static_cast<int32_t>(g.first + i));
    batch->token_pos.push_back(static_cast<int32_t>(g.first + i));
    batch->token_parent.push_back(-1);
  }
  AttentionSequence a;
  a.block_table = seq->pages;
  a.n_ctx = static_cast<int32_t>(g.first + n);
  batch->attn_seqs.push_back(a);
  batch->segments.push_back(g);
}

void Scheduler::append_tree(Batch* batch, Sequence* seq) {
  // [pending, nodes...]: the pending token at slot s (position s), node i at slot s + 1 + i with position
  // s + depth; a node sees the committed prefix, its ancestors and itself. Every row is an output.
  // A chain goes to the attention as causal rows (flagged as verify rows): the same keys, and the kernels
  // then run its rows together, where a tree's rows on the slice that holds the tree run one at a time.
  const int32_t si = static_cast<int32_t>(batch->segments.size());
  const DraftNodes& d = seq->drafts;
  const int64_t s = seq->n_cached;
  const bool chain = d.is_chain();
  BatchSegment g;
  g.seq = seq;
  g.first = s;
  g.n = 1 + d.size();
  g.tree = true;
  g.batch_begin = batch->n_tokens();
  g.output = static_cast<int32_t>(batch->output_rows.size());
  for (int64_t i = 0; i < g.n; ++i) {
    batch->tokens.push_back(i == 0 ? seq->tokens[s] : d.tokens[i - 1]);
    batch->token_seq.push_back(si);
    batch->token_slot.push_back(static_cast<int32_t>(s + i));
    batch->token_pos.push_back(static_cast<int32_t>(i == 0 ? s : s + d.depth[i - 1]));
    batch->token_parent.push_back(i == 0 || chain ? -1 : static_cast<int32_t>(g.batch_begin + 1 + d.parent[i - 1]));
    batch->output_rows.push_back(static_cast<int32_t>(g.batch_begin + i));
  }
  AttentionSequence a;
  a.block_table = seq->pages;
  a.n_ctx = static_cast<int32_t>(s + g.n);
  a.mask = chain ? AttentionMask::kCausal : AttentionMask::kTree;
  a.tree_start = chain ? 0 : static_cast<int32_t>(s);
  a.verify = true;
  batch->attn_seqs.push_back(a);
  batch->segments.push_back(g);
  batch->has_tree = true;
}

void Scheduler::preempt_newest() {
  std::unique_ptr<Sequence> s = std::move(running_.back());  // running_ is in admission order
  running_.pop_back();
  release_memory(*s);  // its context is re-added as the sequence prefills again
  s->n_cached = 0;
  s->state = SequenceState::kWaiting;
  ++s->n_preempted;
  ++n_preemptions_;
  waiting_.push_front(std::move(s));
}

void Scheduler::release_memory(Sequence& s) {
  pool_.release(&s.pages);
  if (s.proposer) s.proposer->reset();  // its slot serves other sequences at once
}

bool Scheduler::admit_next(int64_t budget) {
  Sequence& s = *waiting_.front();
  // The last token must be fed (its row decides the next one), so at most tokens - 1 come from the cache.
  // A sequence whose proposer reads hidden states takes from the cache only the prefix whose context the
  // proposer holds already (its own cache): cached pages keep K/V, not hidden states.
  int64_t max_match = static_cast<int64_t>(s.tokens.size()) - 1;
  if (s.proposer) {
    Result<int64_t> held = pool_.options().prefix_cache ? s.proposer->match_prefix(s.tokens, max_match) : int64_t{0};
    // A proposer that fails says so at its context or its draft.
    if (s.proposer->needs_taps()) max_match = held.ok() ? std::min(*held, max_match) : 0;
  }
  const int64_t matched = pool_.match_prefix(s.tokens, max_match, &s.pages);
  s.n_cached = matched;
  const int64_t n = std::min<int64_t>(s.n_pending(), options_.prefill_chunk);
  if (n > budget || !pool_.reserve(&s.pages, s.n_cached + n).ok()) {
    release_memory(s);  // the proposer adopts its cached context again when admitted
    s.n_cached = 0;
    return false;
  }
  if (!s.started) s.n_prefix_hit = matched;
  s.started = true;
  s.state = SequenceState::kRunning;
  s.admitted_order = next_admission_++;
  running_.push_back(std::move(waiting_.front()));
  waiting_.pop_front();
  return true;
}

bool Scheduler::drafts_pay(int64_t budget, int64_t share) {
  int64_t decoding = 0;
  double expected_rows = 0, accepted = 0;
  bool any = false;
  for (const auto& r : running_) {
    const Sequence& s = *r;
    if (s.n_pending() != 1) continue;
    ++decoding;
    if (!s.proposer) continue;
    any = true;
    const double room = static_cast<double>(std::max<int64_t>(0, s.n_ctx - s.n_cached - 1));
    const double d =
        std::min({static_cast<double>(s.draft_policy.depth()), s.draft_policy.expected_drafts(), room,
                  static_cast<double>(share)});
    expected_rows += d;
    accepted += std::min(d, s.draft_policy.expected_accepted());
  }
  if (!any) return true;
  if (share <= 0) {  // more decoding sequences than draft_rows leaves room for: plain steps
    ++n_undrafted_steps_;
    return false;
  }
  const int64_t drafts =
      std::min<int64_t>(std::llround(expected_rows), std::max<int64_t>(0, budget - decoding));
  const bool pays = step_cost_.drafting_pays(decoding, drafts, accepted);
  if (!pays) ++n_undrafted_steps_;
  return pays;
}

void Scheduler::draft(int64_t budget, int64_t share) {
  // Sequences whose drafts come from a shared forward, and those forwards.
  std::vector<Sequence*> waiting;
  std::vector<DraftBatch*> batches;
  const auto give_up = [](Sequence* s, const Status& st) {
    SAKER_LOG_WARN("sequence {}: no draft this step: {}", s->id, st.to_string());
    s->drafts.clear();
  };
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* s = running_[i].get();
    if (s->n_pending() != 1) continue;
    s->drafts.clear();
    // room: draft nodes the step, the context and the sequence's share can take; the depth (a chain's length)
    // is the policy's.
    const int64_t room = std::min<int64_t>({budget - 1, s->n_ctx - s->n_cached - 1, share});
    if (!s->proposer || room <= 0) {
      --budget;
      continue;
    }
    const int64_t depth = std::min<int64_t>(room, s->draft_policy.depth());
    Status st = s->proposer->request(s->tokens, depth);
    if (!st.ok()) {
      give_up(s, st);
      --budget;
      continue;
    }
    if (DraftBatch* b = s->proposer->batch()) {  // its drafts come with the batch's run: reserve the most
      waiting.push_back(s);
      if (std::find(batches.begin(), batches.end(), b) == batches.end()) batches.push_back(b);
      budget -= 1 + std::min(room, s->proposer->max_nodes_at(depth));
      continue;
    }
    st = s->proposer->take(&s->drafts);  // drafted at once: the budget pays for what came
    if (!st.ok()) give_up(s, st);
    s->draft_policy.note_drafted(s->drafts.size());
    budget -= 1 + std::min<int64_t>(room, s->drafts.size());
  }
  // A forward that fails leaves its proposers nothing to take: each says so in take() (or takes what it has
  // of its own, as a shadowed replay does), and costs its sequence this step's draft only.
  for (DraftBatch* b : batches) {
    if (Status st = b->run(); !st.ok()) SAKER_LOG_WARN("a shared draft forward failed: {}", st.to_string());
  }
  for (Sequence* s : waiting) {
    if (Status st = s->proposer->take(&s->drafts); !st.ok()) give_up(s, st);
    s->draft_policy.note_drafted(s->drafts.size());
  }
}

Status Scheduler::schedule(Batch* batch, std::vector<std::unique_ptr<Sequence>>* finished) {
  batch->clear();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->cancel_requested()) {
      finished->push_back(std::move(*it));
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->cancel_requested()) {
      release_memory(**it);  // its proposer's slot serves the admissions below
      (*it)->state = SequenceState::kFinished;
      finished->push_back(std::move(*it));
      it = running_.erase(it);
    } else {
      ++it;
    }
  }

  // Each decoding sequence's even share of draft_rows: with many streams the oldest would otherwise take all.
  const int64_t share = draft_share();
  const bool drafting = !options_.cost_policy || drafts_pay(options_.draft_rows, share);
  for (auto& r : running_) r->drafts.clear();
  if (drafting) draft(options_.draft_rows, share);
  for (;;) {
    int64_t budget = options_.step_tokens;
    // Decode tokens first, oldest sequence first; a token that finds no page preempts the newest sequence.
    std::vector<Sequence*> scheduled;
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Sequence* s = running_[i].get();
      if (s->n_pending() != 1) continue;
      if (s->drafts.size() > 0) {
        // A speculating sequence: its drafts ride in the same step, when they fit the budget, the context and
        // the pool.
        const int64_t room = std::min<int64_t>(budget - 1, s->n_ctx - s->n_cached - 1);
        if (s->drafts.size() <= room && pool_.reserve(&s->pages, s->n_cached + 1 + s->drafts.size()).ok()) {
          append_tree(batch, s);
          scheduled.push_back(s);
          budget -= 1 + s->drafts.size();
          continue;
        }
        s->drafts.clear();
      }
      bool preempted_self = false;
      while (!pool_.reserve(&s->pages, s->n_cached + 1).ok()) {
        const bool self_newest = running_.back().get() == s;
        preempt_newest();
        if (self_newest) {
          preempted_self = true;
          break;
        }
      }
      if (preempted_self) break;
      append(batch, s, 1);
      scheduled.push_back(s);
      --budget;
    }
    // Prefill chunks, oldest first, never cut: a chunk that does not fit waits for the next step.
    for (auto& r : running_) {
      Sequence* s = r.get();
      if (s->n_pending() <= 1) continue;
      const int64_t n = std::min<int64_t>(s->n_pending(), options_.prefill_chunk);
      if (n > budget) break;
      if (!pool_.reserve(&s->pages, s->n_cached + n).ok()) break;
      append(batch, s, n);
      budget -= n;
    }
    while (static_cast<int32_t>(running_.size()) < options_.max_seqs && !waiting_.empty()) {
      if (!admit_next(budget)) break;
      Sequence* s = running_.back().get();
      const int64_t n = std::min<int64_t>(s->n_pending(), options_.prefill_chunk);
      append(batch, s, n);
      budget -= n;
    }
    // Nothing could run although sequences are running: they all wait for pages. Free the newest one's.
    if (!batch->empty() || running_.empty()) break;
    batch->clear();
    preempt_newest();
  }
  return {};
}

void Scheduler::drain(std::vector<std::unique_ptr<Sequence>>* out) {
  for (auto& s : running_) {
    release_memory(*s);
    s->state = SequenceState::kFinished;
    out->push_back(std::move(s));
  }
  running_.clear();
  for (auto& s : waiting_) out->push_back(std::move(s));
  waiting_.clear();
}

std::unique_ptr<Sequence> Scheduler::retire(Sequence* seq) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == seq; });
  if (it == running_.end()) return nullptr;
  std::unique_ptr<Sequence> s = std::move(*it);
  running_.erase(it);
  release_memory(*s);
  s->state = SequenceState::kFinished;
  return s;
}

Status Scheduler::validate() const {
  SAKER_RETURN_IF_ERROR(pool_.validate());
  std::vector<int32_t> owners(pool_.n_pages(), 0);
  const int64_t pt = pool_.page_tokens();
  for (size_t i = 0; i < running_.size(); ++i) {
    const auto& s = running_[i];
    if (i > 0 && running_[i - 1]->admitted_order >= s->admitted_order) {
      return make_error(StatusCode::kInternal, "running sequences are out of admission order at {}", i);
    }
    if (static_cast<int64_t>(s->pages.size()) * pt < s->n_cached) {
      return make_error(StatusCode::kInternal, "sequence {} caches {} tokens in {} pages", s->id, s->n_cached,
                        s->pages.size());
    }
    if (s->n_cached >= static_cast<int64_t>(s->tokens.size())) {
      return make_error(StatusCode::kInternal, "sequence {} has no pending token", s->id);
    }
    for (int32_t p : s->pages) {
      if (p < 0 || p >= pool_.n_pages()) return make_error(StatusCode::kInternal, "sequence {} names page {}", s->id, p);
      ++owners[p];
    }
  }
  for (const auto& s : waiting_) {
    if (!s->pages.empty() || s->n_cached != 0) {
      return make_error(StatusCode::kInternal, "waiting sequence {} holds {} pages", s->id, s->pages.size());
    }
  }
  for (int32_t p = 0; p < pool_.n_pages(); ++p) {
    if (owners[p] != pool_.ref_count(p)) {
      return make_error(StatusCode::kInternal, "page {} has {} owners but the tables name it {} times", p,
                        pool_.ref_count(p), owners[p]);
    }
  }
  if (static_cast<int32_t>(running_.size()) > options_.max_seqs) {
    return make_error(StatusCode::kInternal, "{} sequences run (at most {})", running_.size(), options_.max_seqs);
  }
  return {};
}

}  // namespace saker
