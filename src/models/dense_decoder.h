#pragma once
// Qwen3 dense (GGUF `qwen3`, HF Qwen3ForCausalLM): pre-norm decoder, GQA with per-head q/k RMSNorm before
// NeoX RoPE, SwiGLU MLP, final RMSNorm, output head tied to the embedding or not.
#include <memory>
#include <vector>

#include "models/model.h"

namespace saker {

class Qwen3Model : public Model {
 public:
  static Result<std::unique_ptr<Model>> create(std::shared_ptr<const ModelWeights> weights, OpsOptions options);

  const ModelHParams& hparams() const override { return hp_; }
  Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) override;

 private:
  struct Layer {
    TensorView attn_norm;            // [n_embd]
    TensorView wq, wk, wv, wo;       // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
    TensorView q_norm, k_norm;       // [head_dim] (absent in llama: n_dims == 0)
    TensorView ffn_norm;             // [n_embd]
    TensorView w_gate, w_up, w_down; // [n_ff, n_embd] x2, [n_embd, n_ff]
  };

  Status matmul(const TensorView& x, const TensorView& w, const TensorView& out) const;

  std::shared_ptr<const ModelWeights> weights_;
  OpsOptions options_;
  ModelHParams hp_;
  TensorView token_embd_;   // [n_vocab, n_embd]
  TensorView output_norm_;  // [n_embd]
  TensorView output_;       // [n_vocab, n_embd] (token_embd when tied)
  std::vector<Layer> layers_;
};

}  // namespace saker
