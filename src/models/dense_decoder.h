#pragma once
// Dense pre-norm decoders that differ only in switches read from the hyper-parameters:
//   qwen3  (GGUF `qwen3`, HF Qwen3ForCausalLM): per-head q/k RMSNorm before NeoX RoPE, SwiGLU.
//   llama  (GGUF `llama`, HF LlamaForCausalLM; SmolLM2): no q/k norm, interleaved RoPE on GGUF's permuted
//          Q/K rows (NeoX on an HF folder's unpermuted ones), optional rope_freqs, SwiGLU.
//   gemma3 (GGUF `gemma3`): embeddings scaled by sqrt(hidden), q/k norm, norms after attention and after
//          the MLP as well as before, GeGLU (tanh GELU), local sliding-window layers with their own RoPE
//          base between global ones, optional attention / final logit soft-capping.
// Final RMSNorm; output head tied to the embedding or not.
#include <memory>
#include <vector>

#include "models/model.h"

namespace saker {

class DenseDecoderModel : public Model {
 public:
  static Result<std::unique_ptr<Model>> create(std::shared_ptr<const ModelWeights> weights, OpsOptions options);

  const ModelHParams& hparams() const override { return hp_; }
  Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) override;

 private:
  struct Layer {
    TensorView attn_norm;            // [n_embd]
    TensorView wq, wk, wv, wo;       // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
    TensorView q_norm, k_norm;       // [head_dim] (absent in llama: n_dims == 0)
    TensorView post_attn_norm;       // [n_embd] gemma3 only
    TensorView ffn_norm;             // [n_embd]
    TensorView w_gate, w_up, w_down; // [n_ff, n_embd] x2, [n_embd, n_ff]
    TensorView post_ffn_norm;        // [n_embd] gemma3 only
  };

  Status matmul(const TensorView& x, const TensorView& w, const TensorView& out) const;

  std::shared_ptr<const ModelWeights> weights_;
  OpsOptions options_;
  ModelHParams hp_;
  bool geglu_ = false;      // GeGLU (tanh GELU) instead of SwiGLU
  TensorView token_embd_;   // [n_vocab, n_embd]
  TensorView output_norm_;  // [n_embd]
  TensorView output_;       // [n_vocab, n_embd] (token_embd when tied)
  TensorView rope_freqs_;   // [n_rot / 2] f32 per-pair divisors (llama 3), or absent
  std::vector<Layer> layers_;
};

}  // namespace saker
