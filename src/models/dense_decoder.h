#pragma once
// Dense pre-norm decoders that differ only in switches read from the hyper-parameters:
//   qwen3  (GGUF `qwen3`, HF Qwen3ForCausalLM): per-head q/k RMSNorm before NeoX RoPE, SwiGLU.
//   qwen2  (GGUF `qwen2`, HF Qwen2ForCausalLM; Qwen2.5, Qwen2.5-Coder): llama's layout with biases on the q, k
//          and v projections (added before RoPE), NeoX RoPE on unpermuted rows, no q/k norm, SwiGLU.
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
    const float* bq = nullptr;       // [q_dim] qwen2 projection biases (f32), or null
    const float* bk = nullptr;       // [kv_dim]
    const float* bv = nullptr;       // [kv_dim]
    TensorView post_attn_norm;       // [n_embd] gemma3 only
    TensorView ffn_norm;             // [n_embd]
    TensorView w_gate, w_up, w_down; // [n_ff, n_embd] x2, [n_embd, n_ff]
    TensorView post_ffn_norm;        // [n_embd] gemma3 only
  };

  struct RowRun {
    int64_t begin = 0, end = 0;
    bool blas = false;  // a long run of one sequence: BLAS may multiply it
  };
  std::vector<RowRun> row_runs(const AttentionBatch& attn) const;
  // x [T, n_in] times w: one cpu::matmul call per row run of the batch, so that a row's result does not depend
  // on the rest of the batch; other row counts (the output head's gathered rows) go through one call.
  Status matmul(const TensorView& x, const TensorView& w, const TensorView& out, std::span<const RowRun> runs) const;
  // An f32 view of a bias vector: the file's data when it is f32, else a dequantised copy the model keeps.
  Result<const float*> bias_f32(const std::string& name, int64_t n);

  std::shared_ptr<const ModelWeights> weights_;
  OpsOptions options_;
  ModelHParams hp_;
  bool geglu_ = false;      // GeGLU (tanh GELU) instead of SwiGLU
  TensorView token_embd_;   // [n_vocab, n_embd]
  TensorView output_norm_;  // [n_embd]
  TensorView output_;       // [n_vocab, n_embd] (token_embd when tied)
  TensorView rope_freqs_;   // [n_rot / 2] f32 per-pair divisors (llama 3), or absent
  std::vector<Layer> layers_;
  std::vector<std::vector<float>> owned_biases_;  // dequantised copies of non-f32 biases
};

}  // namespace saker
