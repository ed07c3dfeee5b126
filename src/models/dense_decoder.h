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
//
// The forward is written once over an OpBackend (ops/backend.h): the CPU backend and the CUDA backend run the
// same op sequence. Weights are bound through the backend once, in the fused shape: q|k|v one matrix (and one
// bias vector), gate|up one matrix, residual adds in the matmul (accumulate) unless a gemma3 post-norm sits
// between the projection and the residual.
//
// Tensor parallelism: a model made with a TensorShard of N > 1 ranks binds rank r's slices of the weights
// (models/tensor_shard.h) over a backend whose n_ranks() is N, and the same body() runs: the row-parallel
// projections (attn_output, ffn_down) then produce partial sums that OpBackend::all_reduce adds up before they
// join the residual stream, which stays replicated, bit for bit, on every rank. The head writes the rank's
// vocabulary slice of the logits; models/TensorParallelModel runs the ranks and assembles the rows.
#include <functional>
#include <memory>
#include <vector>

#include "models/model.h"
#include "models/tensor_shard.h"
#include "ops/backend.h"

namespace saker {

class DenseDecoderModel : public Model {
 public:
  static Result<std::unique_ptr<Model>> create(std::shared_ptr<const ModelWeights> weights,
                                               std::unique_ptr<OpBackend> backend, const TensorShard& shard = {});

  const ModelHParams& hparams() const override { return hp_; }
  Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) override;
  Device device() const override { return backend_->device(); }
  // One rank on a GPU: its taps can stay there. (A tensor-parallel rank's hidden state is whole on every rank,
  // but the drafter would have to share the first rank's GPU.)
  bool keeps_taps_on_device() const override { return backend_->device() == Device::kCuda && backend_->n_ranks() == 1; }
  FloatRows device_taps() const override { return backend_->device_taps(); }
  DType kv_dtype() const override { return backend_->kv_dtype(); }
  std::string width_dependent_weight() const override { return backend_->width_dependent_weight(); }
  int64_t invariant_rows() const override { return backend_->invariant_rows(); }
  int64_t kv_heads() const override { return local_.n_head_kv; }
  // The vocabulary rows this model's logits hold: [vocab_first(), vocab_first() + n_vocab_local()).
  int64_t vocab_first() const { return local_.vocab_first; }
  int64_t n_vocab_local() const { return local_.n_vocab; }

 private:
  // What this model holds of the full geometry: everything at one rank, rank r's slice of N (tensor_shard.h).
  struct LocalDims {
    int64_t n_head = 0, n_head_kv = 0, n_ff = 0, vocab_first = 0, n_vocab = 0;
    int64_t head_dim = 0;
    int64_t q_dim() const { return n_head * head_dim; }
    int64_t kv_dim() const { return n_head_kv * head_dim; }
  };
  struct Layer {
    const PreparedVector* attn_norm = nullptr;       // [n_embd]
    // Shapes in local dims (q_dim, kv_dim, n_ff, n_vocab: this rank's slice; the full sizes at one rank).
    const PreparedMatrix* qkv = nullptr;             // [q_dim + 2 kv_dim, n_embd]: attn_q | attn_k | attn_v
    const PreparedVector* qkv_bias = nullptr;        // [q_dim + 2 kv_dim] qwen2's projection biases, or null
    const PreparedVector* q_norm = nullptr;          // [head_dim] (null without q/k norm)
    const PreparedVector* k_norm = nullptr;          // [head_dim]
    const PreparedMatrix* wo = nullptr;              // [n_embd, q_dim]
    const PreparedVector* post_attn_norm = nullptr;  // [n_embd] gemma3 only
    const PreparedVector* ffn_norm = nullptr;        // [n_embd]
    const PreparedMatrix* gate_up = nullptr;         // [2 n_ff, n_embd]: ffn_gate | ffn_up
    const PreparedMatrix* down = nullptr;            // [n_embd, n_ff]
    const PreparedVector* post_ffn_norm = nullptr;   // [n_embd] gemma3 only
  };
  // Activation buffers (ids into OpBackend::buffer).
  enum Buffer : int { kX, kH, kQkv, kAttn, kGateUp, kAct, kXo, kNumBuffers };

  Status bind_weights();
  Status body(const ForwardBatch& batch);
  Status head(int64_t first, int64_t n);
  // A block's output projection: writes (accumulate false) or adds (true) its product into out.
  using Product = std::function<Status(const Act& out, bool accumulate)>;
  // x += [post_norm](all_reduce(product)): the residual add in the matmul, or (with a gemma3 post-norm or a
  // partial sum to all-reduce) through h.
  Status project_residual(const Product& product, const PreparedVector* post_norm, const Act& x, const Act& h);

  std::shared_ptr<const ModelWeights> weights_;
  std::unique_ptr<OpBackend> backend_;
  ModelHParams hp_;
  TensorShard shard_;
  LocalDims local_;
  bool geglu_ = false;                            // GeGLU (tanh GELU) instead of SwiGLU
  const PreparedMatrix* token_embd_ = nullptr;    // [n_vocab, n_embd]
  const PreparedVector* output_norm_ = nullptr;   // [n_embd]
  const PreparedMatrix* output_ = nullptr;        // [n_vocab (local), n_embd] (token_embd_ when tied, one rank)
  const PreparedVector* rope_freqs_ = nullptr;    // [n_rot / 2] f32 per-pair divisors (llama 3), or null
  RopeSpec rope_global_, rope_local_;             // local (sliding-window) layers: own base, no scaling
  AttentionSpec attn_global_, attn_local_;
  std::vector<Layer> layers_;
};

}  // namespace saker
