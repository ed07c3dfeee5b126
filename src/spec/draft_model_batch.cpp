#include "spec/draft_model_batch.h"

#include <algorithm>

#include "models/kv_cache.h"

namespace saker::spec {
namespace {

// Catch-up rows a slot feeds per forward: where Generator::extend_argmax cuts them too.
constexpr int64_t kChunk = 512;

}  // namespace

DraftModelBatch::DraftModelBatch(Model& draft, int32_t n_slots, int64_t n_ctx) : draft_(draft), n_ctx_(n_ctx) {
  slots_.resize(static_cast<size_t>(n_slots));
}

Result<std::shared_ptr<DraftModelBatch>> DraftModelBatch::create(Model& draft, int32_t n_slots, int64_t n_ctx) {
  if (n_slots < 1) return make_error(StatusCode::kInvalidArgument, "draft model: needs at least one slot");
  if (n_ctx < 1) return make_error(StatusCode::kInvalidArgument, "draft model: n_ctx must be >= 1");
  return std::shared_ptr<DraftModelBatch>(new DraftModelBatch(draft, n_slots, n_ctx));
}

Result<int32_t> DraftModelBatch::acquire() {
  std::lock_guard lock(slots_mutex_);
  if (!pool_) {
    const KvCacheConfig one = kv_cache_config_for(draft_, n_ctx_);
    KvCacheConfig all = one;
    all.n_blocks = one.n_blocks * static_cast<int64_t>(slots_.size());
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvStorage> storage, draft_.allocate_kv(all));
    pool_ = std::make_unique<KvPool>(std::move(storage), KvPoolOptions{});
    n_ctx_ = one.n_blocks * one.block_size;
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].held) continue;
    slots_[i].held = true;
    return static_cast<int32_t>(i);
  }
  return make_error(StatusCode::kOutOfRange, "draft model: all {} slots are held by running sequences", slots_.size());
}

void DraftModelBatch::release(int32_t slot) {
  if (slot < 0 || slot >= static_cast<int32_t>(slots_.size())) return;
  reset(slot);
  std::lock_guard lock(slots_mutex_);
  slots_[slot].held = false;
}

void DraftModelBatch::reset(int32_t slot) {
  Slot& s = slots_[slot];
  if (pool_) pool_->release(&s.block_table);
  s.tokens.clear();
  s.fed = 0;
  s.own = 0;
  s.want = 0;
  s.drafts.clear();
}

Status DraftModelBatch::check_slot(int32_t slot) const {
  if (slot >= 0 && slot < static_cast<int32_t>(slots_.size()) && slots_[slot].held) return {};
  return make_error(StatusCode::kInvalidArgument, "draft model: slot {} is not held", slot);
}

Status DraftModelBatch::request(int32_t slot, std::span<const int32_t> tokens, int64_t k) {
  SAKER_RETURN_IF_ERROR(check_slot(slot));
  Slot& s = slots_[slot];
  s.drafts.clear();
  s.want = 0;
  const int64_t len = static_cast<int64_t>(tokens.size());
  // The last drafted token is never fed, so the cache needs len + k - 1 positions.
  k = std::min<int64_t>(k, n_ctx_ - len + 1);
  if (len == 0 || k <= 0) return {};
  // Keep the cached prefix the sequence still has (at least the pending token is fed again).
  const int64_t held = std::min<int64_t>(s.fed, static_cast<int64_t>(s.tokens.size()));
  const auto mismatch = std::mismatch(s.tokens.begin(), s.tokens.begin() + held, tokens.begin(), tokens.end());
  s.fed = std::min<int64_t>(mismatch.first - s.tokens.begin(), len - 1);
  s.tokens.assign(tokens.begin(), tokens.end());
  s.want = k;
  return {};
}

Result<int64_t> DraftModelBatch::adopt(int32_t slot, std::span<const int32_t> tokens, int64_t max_tokens) {
  SAKER_RETURN_IF_ERROR(check_slot(slot));
  Slot& s = slots_[slot];
  if (s.fed != 0 || !s.block_table.empty()) return int64_t{0};  // holds a cache of its own already
  max_tokens = std::min({max_tokens, static_cast<int64_t>(tokens.size()), n_ctx_});
  const int64_t adopted = pool_->match_prefix(tokens, max_tokens, &s.block_table);
  s.tokens.assign(tokens.begin(), tokens.begin() + adopted);
  s.fed = adopted;
  s.own = adopted;
  stats_.cached_positions += adopted;
  return adopted;
}

void DraftModelBatch::commit(int32_t slot, std::span<const int32_t> tokens) {
  if (!check_slot(slot).ok() || tokens.empty()) return;
  Slot& s = slots_[slot];
  // Fed positions whose tokens are the sequence's own, except its last (pending) token, which the next request
  // feeds again: they never change, their full pages get prefix keys, and the slot never writes them again (a
  // request keeps at least them). Known own positions are not compared again: only the new ones each step.
  const int64_t limit = std::min({s.fed, static_cast<int64_t>(s.tokens.size()), static_cast<int64_t>(tokens.size()) - 1});
  int64_t own = std::min(s.own, limit);
  while (own < limit && s.tokens[static_cast<size_t>(own)] == tokens[static_cast<size_t>(own)]) ++own;
  s.own = own;
  pool_->commit(s.block_table, tokens, own);
}

Status DraftModelBatch::forward() {
  const AttentionBatch attn = batch_.attn();
  const KvCacheConfig& kv = pool_->storage().config();
  SAKER_RETURN_IF_ERROR(attn.validate(kv.n_blocks, kv.block_size));
  ForwardBatch b;
  b.tokens = tokens_;
  b.attn = attn;
  b.output_rows = output_rows_;
  ids_.assign(output_rows_.size(), -1);
  b.argmax = ids_.data();
  SAKER_RETURN_IF_ERROR(draft_.forward(b, pool_->layers(), nullptr));
  ++stats_.forwards;
  return {};
}

Status DraftModelBatch::run() {
  const Status st = run_rounds();
  for (Slot& s : slots_) {
    if (s.want <= 0) continue;
    if (st.ok()) {
      stats_.drafted += static_cast<int64_t>(s.drafts.size());
    } else {  // what the cache holds is unknown now: start again from the pool next time
      pool_->release(&s.block_table);
      s.tokens.clear();
      s.fed = 0;
      s.own = 0;
      s.drafts.clear();
    }
    s.want = 0;
  }
  return st;
}

void DraftModelBatch::start_round() {
  batch_.clear();
  tokens_.clear();
  output_rows_.clear();
  output_slot_.clear();
}

Result<bool> DraftModelBatch::finish_round() {
  if (batch_.n_tokens() == 0) return false;
  SAKER_RETURN_IF_ERROR(forward());
  for (size_t j = 0; j < output_slot_.size(); ++j) slots_[output_slot_[j]].drafts.push_back(ids_[j]);
  return true;
}

Status DraftModelBatch::run_rounds() {
  // Catch-up: each asking slot's new tokens in chunks; a slot's last chunk gives its first draft.
  for (bool more = true; more;) {
    start_round();
    for (int32_t i = 0; i < static_cast<int32_t>(slots_.size()); ++i) {
      Slot& s = slots_[i];
      const int64_t len = static_cast<int64_t>(s.tokens.size());
      if (s.want <= 0 || s.fed >= len) continue;
      const int64_t e = std::min(len, s.fed + kChunk);
      if (!pool_->reserve(&s.block_table, e).ok()) {  // no pages left (a pool smaller than its slots): no drafts
        s.want = 0;
        continue;
      }
      const int64_t at = batch_.add(s.block_table, s.fed, e - s.fed, AttentionMask::kCausal);
      tokens_.insert(tokens_.end(), s.tokens.begin() + s.fed, s.tokens.begin() + e);
      if (e == len) {
        output_rows_.push_back(static_cast<int32_t>(at + (e - s.fed) - 1));
        output_slot_.push_back(i);
      }
      s.fed = e;
    }
    SAKER_ASSIGN_OR_RETURN(more, finish_round());
  }
  // Then one row per slot per drafted token: the previous draft fed at the next position.
  for (bool more = true; more;) {
    start_round();
    for (int32_t i = 0; i < static_cast<int32_t>(slots_.size()); ++i) {
      Slot& s = slots_[i];
      const int64_t have = static_cast<int64_t>(s.drafts.size());
      if (s.want <= have || have == 0) continue;
      if (!pool_->reserve(&s.block_table, s.fed + 1).ok()) {  // the drafts so far, no more
        s.want = have;
        continue;
      }
      s.tokens.push_back(s.drafts.back());
      output_rows_.push_back(static_cast<int32_t>(batch_.add(s.block_table, s.fed, 1, AttentionMask::kCausal)));
      tokens_.push_back(s.drafts.back());
      output_slot_.push_back(i);
      ++s.fed;
    }
    SAKER_ASSIGN_OR_RETURN(more, finish_round());
  }
  return {};
}

}  // namespace saker::spec
