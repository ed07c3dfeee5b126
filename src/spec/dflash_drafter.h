#pragma once
// DFlashDrafter: a DFlash block-diffusion drafter (see the speculative-decoding notes, section 2) on the CPU.
// It has no embedding or head of its own: block tokens are embedded with the target's token embedding and
// draft logits come from the target's output head applied to the drafter's final-normed hidden state.
//
//   context   the target's tapped hidden states of every committed position, fused once per position:
//             ctx = hidden_norm(fc(concat taps)), then each draft layer caches k_norm(k_proj(ctx)) (RoPE at the
//             position) and v_proj(ctx) in its own paged KV cache, slot = position
//   propose   block [pending, mask x (B-1)] at positions s..s+B-1 (s = committed positions so far) runs through
//             the draft layers; each block row attends to all context slots and to the whole block
//             (bidirectional); rows 1..B-1 give the draft tokens (row i predicts position s + i, no shift)
//
// The block's own K/V rows land in slots s..s+B-1 and are overwritten when those positions are committed.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "engine/kv_cache.h"
#include "models/model.h"
#include "models/model_weights.h"
#include "spec/dflash_config.h"

namespace saker::spec {

class DFlashDrafter {
 public:
  // dir: config.json + model.safetensors (BF16, F16 or F32; kept in f32). target: the weights of the model the
  // drafter was trained for (its embedding and output head are borrowed). n_ctx: the most positions a
  // sequence reaches (context plus one block).
  static Result<std::unique_ptr<DFlashDrafter>> load(const std::string& dir,
                                                     std::shared_ptr<const ModelWeights> target, int64_t n_ctx,
                                                     const OpsOptions& ops = {});

  const DFlashConfig& config() const { return config_; }
  std::span<const int32_t> target_layers() const { return config_.target_layers; }
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
  struct Layer {
    TensorView input_norm, post_attn_norm;  // [n_embd]
    TensorView wq, wk, wv, wo;              // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
    TensorView q_norm, k_norm;              // [head_dim]
    TensorView w_gate, w_up, w_down;        // [n_ff, n_embd] x2, [n_embd, n_ff]
  };

  DFlashDrafter() = default;
  Result<TensorView> load_tensor(const SafetensorsFile& file, const std::string& name, std::vector<int64_t> shape);
  Status matmul(const TensorView& x, const TensorView& w, const TensorView& out) const;
  // The block's draft logits: [block_size - 1, n_vocab], row i for position n_context() + 1 + i.
  Status block_logits(int32_t pending, std::vector<float>* logits);
  // K (normed, rotated) and V of rows `x` [n, n_embd] at positions first.. into layer l's cache.
  Status write_kv(int64_t l, const TensorView& x, int64_t first, std::vector<float>* k, std::vector<float>* v);

  DFlashConfig config_;
  OpsOptions ops_;
  std::shared_ptr<const ModelWeights> target_;
  TensorView token_embd_;        // [n_vocab, n_embd] the target's
  TensorView output_;            // [n_vocab, n_embd] the target's head (token_embd when tied)
  TensorView fc_;                // [n_embd, n_taps * n_embd]
  TensorView hidden_norm_, norm_;  // [n_embd]
  std::vector<Layer> layers_;
  std::vector<HostBuffer> owned_;  // the drafter's weights in f32
  std::unique_ptr<KvCache> kv_;    // [n_layer] x [n_blocks, 16, n_head_kv, head_dim]
  std::vector<int32_t> block_table_;
  int64_t n_ctx_ = 0;
  int64_t n_context_ = 0;
};

}  // namespace saker::spec
