#pragma once
// DFlashDrafter: a DFlash block-diffusion drafter (see the speculative-decoding notes, section 2), written once
// over the op surface (ops/backend.h) like the target models. It has no embedding or head of its own: block
// tokens are embedded with the target's token embedding and draft logits come from the target's output head
// applied to the drafter's final-normed hidden state.
//
//   context   the target's tapped hidden states of every committed position, fused once per position:
//             ctx = hidden_norm(fc(concat taps)), then each draft layer caches k_norm(k_proj(ctx)) (RoPE at the
//             position) and v_proj(ctx) in its own paged KV cache, slot = position (a step whose input rows
//             are the taps and whose layers write k|v only)
//   propose   block [pending, mask x (B-1)] at positions s..s+B-1 (s = committed positions so far) runs through
//             the draft layers; each block row attends to all context slots and to the whole block
//             (bidirectional); rows 1..B-1 give the draft tokens (row i predicts position s + i, no shift)
//
// The block's own K/V rows land in slots s..s+B-1 and are overwritten when those positions are committed.
// Either backend runs it (OpsOptions::device); the engine and the CLI still take it on the CPU only, until the
// CUDA run is checked on a GPU (tests/gpu/cuda_drafter_test.cpp).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/kv_storage.h"
#include "models/model.h"
#include "models/model_weights.h"
#include "spec/dflash_config.h"
#include "spec/dflash_weights.h"
#include "ops/backend.h"

namespace saker::spec {

class DFlashDrafter {
 public:
  // A drafter over shared weights (DFlashWeights): its own context and KV cache. n_ctx: the most positions a
  // sequence reaches (context plus one block).
  static Result<std::unique_ptr<DFlashDrafter>> create(std::shared_ptr<const DFlashWeights> weights, int64_t n_ctx,
                                                       const OpsOptions& ops = {});
  // DFlashWeights::load(dir, target) then create().
  static Result<std::unique_ptr<DFlashDrafter>> load(const std::string& dir,
                                                     std::shared_ptr<const ModelWeights> target, int64_t n_ctx,
                                                     const OpsOptions& ops = {});

  const DFlashConfig& config() const { return w_->config; }
  std::span<const int32_t> target_layers() const { return w_->config.target_layers; }
  int64_t n_context() const { return n_context_; }
  int64_t n_ctx() const { return n_ctx_; }

  // Forgets every context position (a new sequence).
  void reset() { n_context_ = 0; }
  // Fuses the target's tapped hidden states of positions [first, first + n) into the context. first <=
  // n_context(): positions from `first` on are replaced (those of a rejected draft are never added).
  Status add_context(int64_t first, int64_t n,
                     const float* taps);  // [n, n_taps, n_embd], HiddenTaps layout
  // The block_size - 1 draft tokens after `pending`, which sits at position n_context(): each row's argmax.
  Status propose(int32_t pending, std::vector<int32_t>* drafts);
  // The same block, as the k most likely tokens of each row with their log-probabilities (highest first, the
  // lowest id among equals): what a draft tree is built from. rows: [block_size - 1].
  struct TopTokens {
    std::vector<int32_t> ids;       // [k]
    std::vector<float> logprobs;    // [k]
  };
  Status propose_top(int32_t pending, int32_t k, std::vector<TopTokens>* rows);

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

  DFlashDrafter() = default;
  Status bind_weights();
  // The block's draft logits ([block_size - 1, n_vocab], row i for position n_context() + 1 + i) and/or its
  // argmax ids ([block_size - 1]).
  Status run_block(int32_t pending, std::vector<float>* logits, std::vector<int32_t>* ids);
  // The two programs' bodies over the backend's current step.
  Status context_body();
  Status block_body();
  Status block_head(int64_t first, int64_t n);

  std::shared_ptr<const DFlashWeights> w_;
  std::unique_ptr<OpBackend> backend_;
  std::unique_ptr<KvStorage> kv_;    // [n_layer] x [n_blocks, 16, n_head_kv, head_dim]
  std::vector<int32_t> block_table_;
  int64_t n_ctx_ = 0;
  int64_t n_context_ = 0;
  const PreparedMatrix *token_embd_ = nullptr, *output_ = nullptr, *fc_ = nullptr;
  const PreparedVector *hidden_norm_ = nullptr, *norm_ = nullptr;
  std::vector<Layer> layers_;
  AttentionSpec attn_;          // the block's queries
  AttentionSpec attn_kv_only_;  // the context's k|v rows: no query heads
  RopeSpec rope_;
};

}  // namespace saker::spec
