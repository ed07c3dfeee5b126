#pragma once
// DFlashDrafter: a DFlash block-diffusion drafter (see the speculative-decoding notes, section 2), written once
// over the op surface (ops/backend.h) like the target models, for many sequences at once. It has no embedding
// or head of its own: block tokens are embedded with the target's token embedding and draft logits come from
// the target's output head applied to the drafter's final-normed hidden state.
//
//   slots     each sequence drafting through it holds a slot: its fused context and the KV pages that hold it
//             (slot = position), taken from the drafter's page pool as the context grows and given back when
//             the slot is. One set of prepared weights serves them all.
//   pages     the pool (engine/KvPool, n_slots x n_ctx positions) keeps a prefix cache like the engine's: a
//             full page of fused context gets the key of the token prefix it ends (commit()), so a later
//             sequence with the same prefix adopts those pages (match_prefix()) instead of needing the target's
//             hidden states of those positions, which a prefix-cache hit of the target never computes. Cached
//             pages are immutable: a slot that replaces context inside one takes a copy.
//   context   the target's tapped hidden states of every committed position, fused once per position:
//             ctx = hidden_norm(fc(concat taps)), then each draft layer caches k_norm(k_proj(ctx)) (RoPE at the
//             position) and v_proj(ctx) in the slot's pages (a step whose input rows are the taps and whose
//             layers write k|v only). add_context() queues the rows; the next run() fuses every slot's queue
//             in one forward.
//   block     [pending, mask x (B-1)] at positions s..s+B-1 (s = the slot's context length) runs through the
//             draft layers; each block row attends to all of its slot's context and to its whole block
//             (bidirectional); rows 1..B-1 give the draft tokens (row i predicts position s + i, no shift).
//             request() asks for a slot's block; run() computes every requested block in one forward.
//
// On the CPU backend a row's numbers do not depend on the other slots in the forward (each slot's rows are one
// run of the batch), so a slot drafts the same tokens alone or beside others; on CUDA they may part at a
// near-tie (drafts only: the target decides every token). The block's own K/V rows land in slots
// s..s+B-1 and are overwritten when those positions are committed. Either backend runs it
// (OpsOptions::device); the engine and the CLI still take it on the CPU only, until the CUDA run is checked
// on a GPU (tests/gpu/cuda_drafter_test.cpp).
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "engine/kv_pool.h"
#include "engine/proposer.h"
#include "engine/sequence_batch.h"
#include "models/kv_storage.h"
#include "models/model.h"
#include "models/model_weights.h"
#include "ops/backend.h"
#include "spec/dflash_config.h"
#include "spec/dflash_weights.h"

namespace saker::spec {

class DFlashDrafter : public DraftBatch {
 public:
  // A drafter over shared weights (DFlashWeights) with n_slots sequences' room, each of up to n_ctx positions
  // (context plus one block).
  static Result<std::unique_ptr<DFlashDrafter>> create(std::shared_ptr<const DFlashWeights> weights, int64_t n_ctx,
                                                       const OpsOptions& ops = {}, int32_t n_slots = 1);
  // DFlashWeights::load(dir, target) then create().
  static Result<std::unique_ptr<DFlashDrafter>> load(const std::string& dir,
                                                     std::shared_ptr<const ModelWeights> target, int64_t n_ctx,
                                                     const OpsOptions& ops = {}, int32_t n_slots = 1);

  const DFlashConfig& config() const { return w_->config; }
  std::span<const int32_t> target_layers() const { return w_->config.target_layers; }
  int64_t n_ctx() const { return n_ctx_; }  // positions per slot
  int32_t n_slots() const { return static_cast<int32_t>(slots_.size()); }

  // A free slot, with no context (an error when all are held); release() gives it back, first fusing and keying
  // the context still queued where commit() named its tokens. Only the slots' held flags are locked: everything
  // else runs on one thread (the engine's step thread).
  Result<int32_t> acquire();
  void release(int32_t slot);

  // Context positions of the slot, queued ones included.
  int64_t n_context(int32_t slot) const;
  // Forgets every context position of the slot (a new sequence); its pages go back to the pool, where those
  // with a prefix key stay cached.
  void reset(int32_t slot);
  // For a slot with no context: adopts the cached pages of the longest prefix of tokens[0, max_tokens) whose
  // fused context the pool holds (whole pages) and returns its length, the slot's context from then on.
  Result<int64_t> match_prefix(int32_t slot, std::span<const int32_t> tokens, int64_t max_tokens);
  // The slot's context belongs to tokens[0, n_context): the full pages of its fused positions get their prefix
  // keys, so later sequences with that prefix can adopt them. tokens: the sequence so far (more than its context
  // is fine).
  void commit(int32_t slot, std::span<const int32_t> tokens);
  // The page pool's counters (prefix-cache lookups and hits, pages free, cached and held).
  KvPoolStats pool_stats() const { return pool_->stats(); }
  // Queues the target's tapped hidden states of positions [first, first + n) for fusing into the slot's
  // context. first <= n_context(slot): positions from `first` on are replaced (those of a rejected draft are
  // never added). Once the queues hold a forward's worth of rows they are fused at once.
  Status add_context(int32_t slot, int64_t first, const FloatRows& taps);  // rows of [n_taps, n_embd]
  Status add_context(int32_t slot, int64_t first, int64_t n,
                     const float* taps);  // host [n, n_taps, n_embd], HiddenTaps layout
  // The device the drafter runs on: a CUDA drafter reads taps in the GPU's memory (FloatRows::on_device).
  Device device() const { return backend_->device(); }
  // Waits until add_context's copies are done (their source rows may be written again after).
  Status settle() { return backend_->settle(); }

  // The slot's block after `pending` (at position n_context(slot)) in the next run(): each row's argmax
  // (top_k 0) or its top_k tokens with their log-probabilities.
  Status request(int32_t slot, int32_t pending, int32_t top_k);
  // Fuses every slot's queued context (one forward), then computes every requested block (one forward, or a
  // few where they exceed the backend's batch). A request it cannot serve is dropped.
  Status run() override;
  struct TopTokens {
    std::vector<int32_t> ids;       // [k] highest first, the lowest id among equals
    std::vector<float> logprobs;    // [k]
  };
  // The last run()'s results for a slot that requested a block: [block_size - 1] draft ids (argmax, ties: the
  // lowest id) or top-k rows.
  std::span<const int32_t> drafts(int32_t slot) const { return slots_[slot].ids; }
  std::span<const TopTokens> top(int32_t slot) const { return slots_[slot].top; }

  // Forwards run so far: how well the slots' work was batched, and the host's wall time in them (a forward
  // that reads nothing back may finish inside the next one's time: the sum is what a step pays).
  struct Stats {
    int64_t context_forwards = 0, context_rows = 0;  // fusing forwards, positions fused
    int64_t block_forwards = 0, blocks = 0;          // drafting forwards, blocks drafted
    int64_t runs = 0;                                // run() calls
    int64_t cached_positions = 0;                    // context positions adopted from cached pages (again at
                                                     // each admission attempt)
    double context_ms = 0, block_ms = 0;             // wall time in fusing (at a run() or when the kept rows
                                                     // fill up) / drafting forwards
  };
  const Stats& stats() const { return stats_; }

  // One slot's block at once (request, then run): its block_size - 1 argmax ids, or its top-k rows.
  Status propose(int32_t slot, int32_t pending, std::vector<int32_t>* drafts);
  Status propose_top(int32_t slot, int32_t pending, int32_t k, std::vector<TopTokens>* rows);

 private:
  // The activation buffers of both programs (OpBackend::reserve ids).
  enum Buffer { kH, kHn, kQkv, kAttn, kGateUp, kAct, kTaps, kXo, kNumBuffers };
  struct Layer {
    const PreparedVector *input_norm = nullptr, *post_attn_norm = nullptr, *q_norm = nullptr, *k_norm = nullptr;
    const PreparedMatrix* qkv = nullptr;      // [q_dim + 2 kv_dim, n_embd] block rows
    const PreparedMatrix* kv = nullptr;       // [2 kv_dim, n_embd] context rows (no query)
    const PreparedMatrix* wo = nullptr;       // [n_embd, q_dim]
    const PreparedMatrix* gate_up = nullptr;  // [2 n_ff, n_embd]
    const PreparedMatrix* down = nullptr;     // [n_embd, n_ff]
  };
  struct Slot {
    bool held = false;
    std::vector<int32_t> block_table;  // its pages, from the pool
    int64_t fused = 0;                 // positions whose K/V are in its pages
    std::vector<int32_t> queued;       // [n_queued] kept rows (OpBackend::keep_rows) of positions fused.. to fuse next
    std::vector<int32_t> tokens;       // the context's tokens as last committed (prefix keys at release)
    int32_t pending = -1;              // >= 0: a block is requested
    int32_t top_k = 0;
    std::vector<int32_t> ids;          // last block's argmax ids
    std::vector<TopTokens> top;        // last block's top-k rows
  };

  DFlashDrafter() = default;
  Status bind_weights();
  int64_t tap_width() const { return static_cast<int64_t>(w_->config.target_layers.size()) * w_->config.n_embd; }
  Status check_slot(int32_t slot) const;
  Status make_room(Slot& s, int64_t keep, int64_t positions);
  // The two forwards of run().
  Status fuse_context();
  Status run_blocks();
  Status run_block_group(std::span<const int32_t> slots);
  // The two programs' bodies over the backend's current step.
  Status context_body();
  Status block_body();
  Status block_head(int64_t first, int64_t n);

  std::shared_ptr<const DFlashWeights> w_;
  std::unique_ptr<OpBackend> backend_;
  // Pages of [n_layer] x [n_slots * blocks a slot, 16, n_head_kv, head_dim], handed to slots as they grow.
  std::unique_ptr<KvPool> pool_;
  int64_t n_ctx_ = 0;
  int64_t max_rows_ = 0;     // rows one forward carries (whole blocks; the context queues fuse at this many)
  std::vector<Slot> slots_;
  std::mutex slots_mutex_;  // acquire / release
  // Scratch of one forward: the flat batch, its tokens, inputs and outputs.
  SequencesBatch batch_;
  std::vector<int32_t> tokens_, output_rows_, ids_;
  std::vector<int32_t> seq_slot_;  // [n_seqs] the drafter slot of each sequence of the forward
  std::vector<int32_t> input_rows_;  // the context forward's kept rows, slot after slot
  std::vector<float> top_logprobs_;
  std::vector<int32_t> top_ids_;
  Stats stats_;
  const PreparedMatrix *token_embd_ = nullptr, *output_ = nullptr, *fc_ = nullptr;
  const PreparedVector *hidden_norm_ = nullptr, *norm_ = nullptr;
  std::vector<Layer> layers_;
  AttentionSpec attn_;          // the block's queries
  AttentionSpec attn_kv_only_;  // the context's k|v rows: no query heads
  RopeSpec rope_;
};

}  // namespace saker::spec
