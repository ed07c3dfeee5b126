#pragma once
// CudaDecoder: the dense decoders of models/dense_decoder.h (GGUF qwen3, llama, gemma3) on one GPU.
//
// Weights are uploaded once (q|k|v and gate|up stacked into one matrix when their dtypes agree, so each
// layer reads its weights in as few launches as possible); norms live as f32. The KV cache lives on the
// device in f16, one per engine cache (LayerKv::owner). A forward of up to 64 tokens (decode, speculative
// verify) is captured in a CUDA graph keyed by its shape and replayed with fresh inputs: the inputs travel
// in one pinned buffer that the graph's first node copies, and the logits come back through its last.
// Larger batches (prefill) run the same sequence of ops eagerly, with cuBLASLt behind matmul().
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <set>
#include <memory>
#include <tuple>
#include <vector>

#include "models/cuda/device_memory.h"
#include "models/model.h"
#include "ops/cuda/attention.h"
#include "ops/cuda/matmul.h"

namespace saker {

class CudaDecoder : public Model {
 public:
  static Result<std::unique_ptr<Model>> create(std::shared_ptr<const ModelWeights> weights,
                                               const OpsOptions& options);
  ~CudaDecoder() override;

  const ModelHParams& hparams() const override { return hp_; }
  Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) override;
  bool owns_kv_cache() const override { return true; }
  Device device() const override { return Device::kCuda; }

 private:
  // A group of weights that one matmul call (or one per dtype) covers, written side by side into one
  // output row: q|k|v -> [T, q_dim + 2 kv_dim], gate|up -> [T, 2 n_ff].
  struct FusedMatrix {
    std::vector<cuda::DeviceMatrix> parts;  // one when the dtypes agree
    std::vector<int64_t> column;            // first output column of each part
  };
  struct Layer {
    float* attn_norm = nullptr;  // [n_embd]
    float* q_norm = nullptr;     // [head_dim] (qwen3) or null
    float* k_norm = nullptr;     // [head_dim] (qwen3) or null
    float* ffn_norm = nullptr;   // [n_embd]
    FusedMatrix qkv;             // [q_dim + 2 kv_dim, n_embd]
    cuda::DeviceMatrix wo;       // [n_embd, q_dim]
    FusedMatrix gate_up;         // [2 n_ff, n_embd]
    cuda::DeviceMatrix down;     // [n_embd, n_ff]
    float* post_attn_norm = nullptr;  // [n_embd] gemma3: norm of the attention output before the residual
    float* post_ffn_norm = nullptr;   // [n_embd] gemma3: norm of the MLP output before the residual
  };
  struct DeviceKv {
    int64_t n_blocks = 0, block_size = 0;
    std::vector<__half*> k, v;  // per layer [n_blocks, block_size, n_head_kv, head_dim]
  };
  // The launch-shape of a forward: everything a captured graph bakes in.
  struct StepShape {
    int64_t n_tokens = 0, n_out = 0, n_seqs = 0, packed_total = 0, ctx_capacity = 0;
    const DeviceKv* kv = nullptr;
    auto key() const { return std::tie(n_tokens, n_out, n_seqs, packed_total, ctx_capacity, kv); }
    bool operator<(const StepShape& o) const { return key() < o.key(); }
  };

  CudaDecoder() = default;
  Status init(std::shared_ptr<const ModelWeights> weights, const OpsOptions& options);
  Status upload_weights();
  Result<FusedMatrix> upload_fused(const std::vector<TensorView>& parts);
  Result<float*> upload_norm(const TensorView& t);
  Result<DeviceKv*> device_kv(std::span<const LayerKv> kv);
  // Waits for the stream and destroys every captured graph (before a buffer they reference is replaced).
  Status drop_graphs();
  // The attention launch shape of a step whose sequences fit ctx_capacity (scale, window: per layer).
  cuda::AttentionLaunch attention_launch(int64_t ctx_capacity) const;
  Status ensure_attention_workspace(size_t bytes);
  Status ensure_input_capacity(int64_t n_int32);
  std::vector<cuda::DeviceMatrix*> all_matrices();

  // One chunk of at most max_tokens_ tokens whose outputs fit the head buffer: packs inputs, runs (graph or
  // eager) and copies the logits of its outputs to `logits` rows.
  Status run_chunk(const ForwardBatch& batch, const DeviceKv& kv, float* logits);
  // Enqueues the whole step on stream_ (inputs already in the pinned buffer).
  Status enqueue_step(const StepShape& shape, const cuda::PackedAttentionLayout& layout);
  Status enqueue_layers(int64_t T, const cuda::DeviceAttentionBatch& batch, const cuda::AttentionLaunch& launch,
                        const DeviceKv& kv);
  // Final norm, output head and the copy of the logits into the pinned buffer, for n_rows gathered rows.
  Status enqueue_head(const int32_t* rows_dev, int64_t n_rows);
  // x += [post_norm](W in): the residual add fused into the matmul, or (with a post-norm) through h_.
  Status project_residual(const cuda::DeviceMatrix& w, const float* in, int64_t T, const float* post_norm);
  Status matmul_fused(const FusedMatrix& m, const float* x, int64_t rows, float* out, int64_t out_stride);

  std::shared_ptr<const ModelWeights> weights_;
  OpsOptions options_;
  ModelHParams hp_;
  DeviceMemory mem_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::MatmulContext> matmul_;

  cuda::DeviceMatrix token_embd_;  // [n_vocab, n_embd]
  cuda::DeviceMatrix output_;      // [n_vocab, n_embd]; aliases token_embd_ when tied
  bool output_tied_ = false;
  uint64_t weight_bytes_ = 0;      // all matrices uploaded
  float* output_norm_ = nullptr;   // [n_embd]
  float* rope_freqs_ = nullptr;    // [n_rot / 2] llama 3 frequency divisors, or null
  std::vector<Layer> layers_;

  // Activations, sized for max_tokens_ rows.
  int64_t max_tokens_ = 0;
  int64_t head_rows_ = 0;  // output rows per head pass (logits buffer rows)
  float* x_ = nullptr;       // [T, n_embd] residual stream
  float* h_ = nullptr;       // [T, n_embd] normed input of a matmul
  float* qkv_ = nullptr;     // [T, q_dim + 2 kv_dim]
  float* attn_ = nullptr;    // [T, q_dim]
  float* gu_ = nullptr;      // [T, 2 n_ff]
  float* act_ = nullptr;     // [T, n_ff]
  float* xo_ = nullptr;      // [head_rows, n_embd]
  float* logits_dev_ = nullptr;  // [head_rows, n_vocab]
  void* attn_ws_ = nullptr;
  size_t attn_ws_bytes_ = 0;

  // Inputs: [tokens T][output rows n_out][packed attention batch], int32, pinned on the host and mirrored on
  // the device.
  int32_t* in_host_ = nullptr;
  int32_t* in_dev_ = nullptr;
  int64_t in_capacity_ = 0;  // int32 elements
  float* logits_host_ = nullptr;  // pinned [head_rows, n_vocab]

  std::mutex mutex_;  // one forward at a time: the activations, the stream and the graphs are shared
  std::map<const void*, std::unique_ptr<DeviceKv>> kv_;
  std::map<StepShape, cudaGraphExec_t> graphs_;
  std::set<StepShape> seen_shapes_;  // shapes run once eagerly; captured on their second step
};

}  // namespace saker
