#pragma once
// CudaDecoder: the dense decoders of models/dense_decoder.h (GGUF qwen3, qwen2, llama, gemma3) on one GPU.
//
// Weights are uploaded once (q|k|v and gate|up stacked into one matrix when their dtypes agree, so each
// layer reads its weights in as few launches as possible); norms live as f32. KV memory is the caller's
// (allocate_kv: a CudaKvStorage of f16 pages); forward() reads and writes the device pointers of the views it
// is given and keeps no cache of its own. A forward of up to 64 tokens (decode, speculative verify) is
// captured in a CUDA graph keyed by its shape and the KV pointers it bakes in, and replayed with fresh
// inputs: the inputs travel in one pinned buffer that the graph's first node copies, and the logits (or, for
// a greedy step, only each row's argmax id) come back through its last. Larger batches (prefill) run the
// same sequence of ops eagerly, with cuBLASLt behind matmul().
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
  Device device() const override { return Device::kCuda; }
  Result<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheConfig& config) const override;
  DType kv_dtype() const override { return DType::kF16; }

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
    float* qkv_bias = nullptr;   // [q_dim + 2 kv_dim] qwen2's q|k|v biases (f32) or null
    cuda::DeviceMatrix wo;       // [n_embd, q_dim]
    FusedMatrix gate_up;         // [2 n_ff, n_embd]
    cuda::DeviceMatrix down;     // [n_embd, n_ff]
    float* post_attn_norm = nullptr;  // [n_embd] gemma3: norm of the attention output before the residual
    float* post_ffn_norm = nullptr;   // [n_embd] gemma3: norm of the MLP output before the residual
  };
  // The device pointers of the caller's KV views (checked by bind_kv).
  struct DeviceKv {
    int64_t n_blocks = 0, block_size = 0;
    std::vector<__half*> k, v;  // per layer [n_blocks, block_size, n_head_kv, head_dim]
    // Every K then every V pointer: what a graph bakes in. Keying graphs by all of them (not by which storage
    // object the views came from) keeps a replay correct when a storage goes and another one, of any layout,
    // lands at the same addresses: equal pointers are all the graph needs.
    std::vector<const void*> pointers;
  };
  // The launch-shape of a forward: everything a captured graph bakes in.
  struct StepShape {
    int64_t n_tokens = 0, n_out = 0, n_seqs = 0, packed_total = 0, ctx_capacity = 0, block_size = 0;
    bool want_logits = true, want_argmax = false;  // which copies the step's last nodes make
    std::vector<const void*> kv;                   // DeviceKv::pointers
    auto key() const {
      return std::tie(n_tokens, n_out, n_seqs, packed_total, ctx_capacity, block_size, want_logits, want_argmax, kv);
    }
    bool operator<(const StepShape& o) const { return key() < o.key(); }
  };

  CudaDecoder() = default;
  Status init(std::shared_ptr<const ModelWeights> weights, const OpsOptions& options);
  Status upload_weights();
  Result<FusedMatrix> upload_fused(const std::vector<TensorView>& parts);
  Result<float*> upload_norm(const TensorView& t);
  // Checks that the views are f16 CUDA tensors of this model's geometry and collects their pointers.
  Result<DeviceKv> bind_kv(std::span<const LayerKv> kv) const;
  // Waits for the stream and destroys every captured graph (before a buffer they reference is replaced).
  Status drop_graphs();
  // Notes that graphs may be captured for these KV pointers; past kMaxKvBindings distinct ones, the graphs and
  // seen shapes of the least recently used go (its storage is likely gone, and graphs hold device memory).
  Status touch_kv_binding(const std::vector<const void*>& kv);
  // The attention launch shape of a step whose sequences fit ctx_capacity (scale, window: per layer).
  cuda::AttentionLaunch attention_launch(int64_t ctx_capacity) const;
  Status ensure_attention_workspace(size_t bytes);
  Status ensure_input_capacity(int64_t n_int32);
  std::vector<cuda::DeviceMatrix*> all_matrices();

  // One chunk of at most max_tokens_ tokens: packs inputs, runs (graph or eager) and copies the logits of its
  // outputs to `logits` rows (when not null) and their argmax ids to batch.argmax (when set).
  Status run_chunk(const ForwardBatch& batch, const DeviceKv& kv, float* logits);
  // Enqueues the whole step on stream_ (inputs already in the pinned buffer).
  Status enqueue_step(const StepShape& shape, const DeviceKv& kv, const cuda::PackedAttentionLayout& layout);
  Status enqueue_layers(int64_t T, const cuda::DeviceAttentionBatch& batch, const cuda::AttentionLaunch& launch,
                        const DeviceKv& kv);
  // Final norm, output head, then the copy of the logits and / or of each row's argmax id into the pinned
  // buffers, for n_rows gathered rows.
  Status enqueue_head(const int32_t* rows_dev, int64_t n_rows, bool want_logits, bool want_argmax);
  // Copies what the last head pass left in the pinned buffers to the caller's rows [first, first + n).
  Status take_outputs(const ForwardBatch& batch, int64_t first, int64_t n, float* logits) const;
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
  int32_t* argmax_dev_ = nullptr;  // [head_rows]
  void* attn_ws_ = nullptr;
  size_t attn_ws_bytes_ = 0;

  // Inputs: [tokens T][output rows n_out][packed attention batch], int32, pinned on the host and mirrored on
  // the device.
  int32_t* in_host_ = nullptr;
  int32_t* in_dev_ = nullptr;
  int64_t in_capacity_ = 0;  // int32 elements
  float* logits_host_ = nullptr;  // pinned [head_rows, n_vocab]
  int32_t* argmax_host_ = nullptr;  // pinned [head_rows]

  std::mutex mutex_;  // one forward at a time: the activations, the stream and the graphs are shared
  std::map<StepShape, cudaGraphExec_t> graphs_;
  std::map<std::vector<const void*>, uint64_t> kv_bindings_;  // KV pointers of seen shapes -> last use
  uint64_t n_steps_ = 0;
  std::set<StepShape> seen_shapes_;  // shapes run once eagerly; captured on their second step
};

}  // namespace saker
