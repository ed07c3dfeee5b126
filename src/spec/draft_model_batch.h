#pragma once
// DraftModelBatch: a smaller model of the target's tokenizer drafting greedy chains for many sequences at once
// (--draft-model FILE). Each sequence holding a slot has its share of one draft KV cache and the tokens it
// holds; one run() drafts for every slot that asked: it first feeds each slot what is new since its last
// draft (the accepted tokens and the pending one, after rolling back to what the draft cache still shares with
// the sequence; drafts the target rejected are overwritten), all slots in one forward per chunk of at most
// 512 rows each, then one row per slot per drafted token. A slot's rows are one run of the batch, cut where a
// draft model of its own would cut them, so it drafts what it would draft alone. The KV cache is allocated at
// the first slot taken, as a page pool (engine/KvPool) with a prefix cache: a slot takes pages as it grows, the
// full pages of positions whose tokens are the sequence's own get their prefix keys (commit), and a fresh slot
// adopts the cached pages of its prompt's prefix (adopt) instead of feeding them again. One thread (the
// engine's) calls everything but acquire / release, which lock only the slots' held flags.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/kv_pool.h"
#include "engine/proposer.h"
#include "engine/sequence_batch.h"
#include "models/kv_storage.h"
#include "models/model.h"

namespace saker::spec {

class DraftModelBatch : public DraftBatch {
 public:
  // n_slots sequences of up to n_ctx positions each.
  static Result<std::shared_ptr<DraftModelBatch>> create(Model& draft, int32_t n_slots, int64_t n_ctx);

  // A free slot with an empty cache (an error when all are held); release() gives it back.
  Result<int32_t> acquire();
  void release(int32_t slot);
  // Whether the draft KV cache is allocated (at the first acquire()).
  bool allocated() const { return pool_ != nullptr; }
  // Forgets what the slot's cache holds (the sequence restarts); its pages go back to the pool, where those with
  // a prefix key stay cached.
  void reset(int32_t slot);

  // Asks for k greedy tokens after `tokens` (the sequence so far, its last the pending one) in the next run();
  // fewer where the slot's n_ctx ends first.
  Status request(int32_t slot, std::span<const int32_t> tokens, int64_t k);
  // For a slot with an empty cache: adopts the pool's cached pages of the longest prefix of tokens[0, max_tokens)
  // (whole pages) and returns its length; 0 for a slot that holds a cache already.
  Result<int64_t> adopt(int32_t slot, std::span<const int32_t> tokens, int64_t max_tokens);
  // tokens (the sequence so far) own the slot's cached positions up to where they agree: key their full pages.
  void commit(int32_t slot, std::span<const int32_t> tokens);
  Status run() override;
  // The last run()'s drafts of a slot that asked.
  std::span<const int32_t> drafts(int32_t slot) const { return slots_[slot].drafts; }

  // Forwards run so far, and the draft tokens they gave.
  struct Stats {
    int64_t forwards = 0, drafted = 0;
    int64_t cached_positions = 0;  // positions adopted from cached pages instead of fed
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Slot {
    bool held = false;
    std::vector<int32_t> block_table;  // its pages, from the pool
    std::vector<int32_t> tokens;       // the sequence as last asked (pending token last), then its drafts fed
    int64_t fed = 0;                   // positions whose K/V the cache holds
    int64_t own = 0;                   // of those, the first `own` are known to hold the sequence's own tokens
    int64_t want = 0;                  // drafts asked for in the next run()
    std::vector<int32_t> drafts;
  };
  DraftModelBatch(Model& draft, int32_t n_slots, int64_t n_ctx);
  Status check_slot(int32_t slot) const;
  // run()'s forwards; on a failure run() forgets what the asking slots' caches hold.
  Status run_rounds();
  // One forward over `batch_` with tokens_, argmax ids of output_rows_ into ids_.
  Status forward();
  // A round: start_round() clears the batch, the caller adds rows, finish_round() runs the forward and gives
  // each output row's slot its next draft (false: the round had no rows, drafting is over).
  void start_round();
  Result<bool> finish_round();

  Model& draft_;
  int64_t n_ctx_;
  std::unique_ptr<KvPool> pool_;  // the draft KV cache's pages, n_slots x n_ctx positions
  std::vector<Slot> slots_;
  std::mutex slots_mutex_;
  SequencesBatch batch_;
  std::vector<int32_t> tokens_, output_rows_, ids_, output_slot_;
  Stats stats_;
};

}  // namespace saker::spec
