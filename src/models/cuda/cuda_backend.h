#pragma once
// CudaBackend: the op surface (ops/backend.h) on one GPU, one per model: its stream, matmul context,
// activation buffers, attention workspace and the pinned buffer the step inputs travel in.
//
// Weights are uploaded once (parts of one prepared matrix, q|k|v or gate|up, stacked into one device matrix
// when their dtypes agree, so a layer reads its weights in as few launches as possible; otherwise each part
// writes its columns of the same output row); vectors live as f32. KV memory is the caller's (a
// CudaKvStorage of f16 pages); run_step reads and writes the device pointers of the views it is given.
//
// A step of up to 64 tokens (decode, speculative verify) runs the model's program eagerly the first time its
// shape is seen (library kernels load lazily, which must not happen inside a capture), is captured in a CUDA
// graph the second time, and replayed after that: the graph's first node copies the inputs from the pinned
// buffer and its last ones copy the logits (or, for a greedy step, only each row's argmax id) back. The shape
// key holds every KV pointer the graph bakes in. Larger batches run the program eagerly (cuBLASLt behind
// matmul), split into max_batch_tokens chunks when longer than that (causal masks only).
//
// Hidden-state taps, like the logits, go through a pinned staging buffer at fixed addresses and reach the
// caller's rows after the step synchronizes: a replay must not write to the host pointer of the call that
// was captured. Taps asked for on the device stay in a device buffer (device_taps()) for a drafter on this GPU,
// which keeps the rows it needs (keep_rows, copied on its own stream) and reads them in its context forward
// (load_input gathers them by StepRequest::input_rows): no tapped row crosses to the host.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "models/cuda/device_memory.h"
#include "models/model.h"
#include "ops/backend.h"
#include "ops/cuda/attention.h"
#include "ops/cuda/matmul.h"
#include "parallel/communicator.h"

namespace saker {

class CudaBackend final : public OpBackend {
 public:
  // On CUDA device `device` (every call makes it the thread's current device for its duration). communicator:
  // this rank's, when the backend is one rank of a tensor-parallel model (null: one rank); one that cannot be
  // captured in a graph turns the graphs off.
  static Result<std::unique_ptr<CudaBackend>> create(const OpsOptions& options, int device = 0,
                                                     DeviceCommunicator* communicator = nullptr);
  ~CudaBackend() override;

  int cuda_device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  int n_ranks() const override { return communicator_ ? communicator_->size() : 1; }
  // The rows' partial sums of every rank, summed on the stream (in a captured graph too, with NCCL).
  Status all_reduce(const Act& x) override;

  Device device() const override { return Device::kCuda; }
  DType kv_dtype() const override { return DType::kF16; }
  std::string width_dependent_weight() const override { return width_dependent_; }
  int64_t invariant_rows() const override;
  Result<const PreparedMatrix*> prepare_matrix(std::span<const TensorView> parts, const std::string& name) override;
  Result<const PreparedVector*> prepare_vector(std::span<const TensorView> parts) override;
  Status reserve(std::span<const ActivationSpec> buffers, int64_t n_vocab, const AttentionSpec& attention) override;
  Status run_step(const StepRequest& request, const StepProgram& program) override;

  int64_t step_tokens() const override { return cur_.n_tokens; }
  Act buffer(int id, int64_t rows) override;
  Act logits(int64_t first, int64_t n) override;

  Status embedding(const PreparedMatrix& table, float scale, const Act& out) override;
  Status load_input(const Act& out) override;
  FloatRows device_taps() const override { return last_device_taps_; }
  Result<int64_t> keep_rows(const FloatRows& src, int64_t cols) override;
  void clear_kept_rows() override {  // copies still waiting would fill rows nobody reads
    n_kept_ = 0;
    kept_copies_.clear();
  }
  int64_t n_kept_rows() const override { return n_kept_; }
  Status settle() override;
  Status rms_norm(const Act& x, const PreparedVector& w, float eps, const Act& out) override;
  Status matmul(const PreparedMatrix& w, const Act& x, const Act& out, bool accumulate) override;
  Status norm_matmul(const Act& x, const PreparedVector& norm, float eps, const Act& normed, const PreparedMatrix& w,
                     const Act& out, bool accumulate) override;
  Status add(const Act& a, const Act& b, const Act& out) override;
  Status qk_norm_rope_kv_write(const Act& qkv, const PreparedVector* qkv_bias, const AttentionSpec& a,
                               const PreparedVector* q_norm, const PreparedVector* k_norm, float eps,
                               const RopeSpec& rope, int layer) override;
  Status attention(const Act& q, int layer, const AttentionSpec& a, const Act& out) override;
  Status attention_matmul(const Act& q, int layer, const AttentionSpec& a, const Act& attn, const PreparedMatrix& w,
                          const Act& out, bool accumulate) override;
  Status swiglu(const Act& gate, const Act& up, const Act& out) override;
  Status geglu_tanh(const Act& gate, const Act& up, const Act& out) override;
  Status gated_matmul(GatedAct kind, const Act& gate, const Act& up, const Act& act, const PreparedMatrix& w,
                      const Act& out, bool accumulate) override;
  Status gather_outputs(const Act& x, int64_t first, const Act& out) override;
  Status soft_cap(const Act& x, float cap) override;
  Status emit_outputs(const Act& logits, int64_t first) override;
  Status tap_rows(const Act& x, int64_t col) override;
  void trace(const Act&, const char*, int, int64_t) override {}  // device memory: no host trace

 private:
  // The fused input path of norm_matmul, gated_matmul and attention_matmul.
  bool input_fusable(const PreparedMatrix& w, const Act& in);
  // attention(); quant: also leave out's int8 blocks in that context (attention_matmul's fused path).
  Status run_attention(const Act& q, int layer, const AttentionSpec& a, const Act& out, cuda::MatmulContext* quant);
  Status matmul_quantized(const PreparedMatrix& w, const Act& in, const Act& out, bool accumulate);
  // One matmul call per part, written side by side into one output row: q|k|v -> [T, q_dim + 2 kv_dim].
  struct Matrix : PreparedMatrix {
    std::vector<cuda::DeviceMatrix> parts;  // one when the dtypes agree
    std::vector<int64_t> column;            // first output column of each part
  };
  struct Vector : PreparedVector {
    float* data = nullptr;  // device [n] f32
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
  // The launch-shape of a step: everything a captured graph bakes in.
  struct StepShape {
    int64_t n_tokens = 0, n_out = 0, n_seqs = 0, packed_total = 0, ctx_capacity = 0, block_size = 0;
    bool want_logits = true, want_argmax = false;  // which copies the step's last nodes make
    int32_t top_k = 0;                             // > 0: the top-k outputs instead
    std::vector<const void*> kv;                   // DeviceKv::pointers
    int64_t taps_stride = 0;                       // 0: no taps; else the staging buffer's row
    bool taps_on_device = false;                   // the taps' copies stay on the device...
    int64_t taps_row0 = 0;                         // ...from this row on (a chunk's offset in its request)
    std::vector<int32_t> tap_layers;               // which copies into it the body makes
    bool input_rows = false;                       // load_input gathers kept rows (their indices follow the batch)
    auto key() const {
      return std::tie(n_tokens, n_out, n_seqs, packed_total, ctx_capacity, block_size, want_logits, want_argmax, top_k,
                      kv, taps_stride, taps_on_device, taps_row0, tap_layers, input_rows);
    }
    bool operator<(const StepShape& o) const { return key() < o.key(); }
  };
  // One chunk of at most max_tokens_ tokens of a request.
  struct Chunk {
    std::span<const int32_t> tokens;
    const AttentionBatch* attn = nullptr;
    std::span<const int32_t> output_rows;
    float* logits = nullptr;    // [n_out, n_vocab] host rows, or null
    int32_t* argmax = nullptr;  // [n_out] host, or null
    float* taps = nullptr;             // [n_tokens, taps_stride] host rows of the chunk's tokens, or null
    bool taps_on_device = false;       // instead: rows [row0, row0 + n_tokens) of the device taps
    int64_t row0 = 0;                  // the chunk's first token in its request
    int64_t taps_stride = 0;
    std::span<const int32_t> tap_layers;
    std::span<const int32_t> input_rows;  // [n_tokens] kept rows load_input reads, or empty
    int32_t top_k = 0;                // > 0: [n_out, top_k] ids and log-probabilities into these host rows
    int32_t* top_ids = nullptr;
    float* top_logprobs = nullptr;
    bool one_off = false;             // StepRequest::one_off: never captured
  };
  // What the ops of the running program read: the chunk's device inputs and launch shape.
  struct Current {
    int64_t n_tokens = 0;
    bool want_logits = false, want_argmax = false;
    int32_t top_k = 0;
    const int32_t* tokens = nullptr;   // device [n_tokens]
    const int32_t* rows = nullptr;     // device [n_out] output rows
    float* taps = nullptr;             // where tap_rows writes row 0 (pinned staging or device rows; null: no taps)
    int64_t taps_stride = 0;
    cudaMemcpyKind taps_kind = cudaMemcpyDeviceToHost;
    const int32_t* input_rows = nullptr;  // device [n_tokens] kept rows load_input gathers, or null
    cuda::DeviceAttentionBatch batch;
    cuda::AttentionLaunch launch;
  };

  CudaBackend() = default;
  // Checks that the views are f16 CUDA tensors of the reserved geometry and collects their pointers.
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
  // The staging of host taps (pinned) or the device taps, grown to n_floats.
  Status ensure_taps_capacity(int64_t n_floats, bool on_device);
  Status flush_kept_copies();
  // Packs the chunk's inputs, runs the program (graph or eager), copies its outputs out.
  Status run_chunk(const Chunk& chunk, const StepProgram& program);
  // Enqueues the program on stream_ (inputs already in the pinned buffer).
  Status enqueue_step(const StepShape& shape, const cuda::PackedAttentionLayout& layout, const StepProgram& program);
  // Copies what the last head pass left in the pinned buffers to the chunk's rows [first, first + n).
  Status take_outputs(const Chunk& chunk, int64_t first, int64_t n) const;

  OpsOptions options_;
  int device_ = 0;
  DeviceCommunicator* communicator_ = nullptr;
  DeviceMemory mem_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::MatmulContext> matmul_;
  std::vector<std::unique_ptr<Matrix>> matrices_;
  std::vector<std::unique_ptr<Vector>> vectors_;
  uint64_t weight_bytes_ = 0;               // all matrices uploaded
  cuda::MatmulOptions matmul_options() const { return {.invariant = options_.batch_invariant}; }
  std::string width_dependent_;             // the first matrix not width-invariant (cuda::matmul_width_invariant)
  int64_t max_n_in_ = 0, max_n_out_ = 0;    // of the prepared matrices: what the matmul scratch covers
  AttentionSpec geometry_;                  // heads and head_dim of every layer
  int64_t n_vocab_ = 0;
  int64_t embedding_rows_ = 0;              // rows of the embedding table the program reads (0: not seen yet)

  // Activations, sized for max_tokens_ rows (per-output ones for head_rows_).
  int64_t max_tokens_ = 0;
  int64_t head_rows_ = 0;  // output rows per head pass (logits buffer rows)
  std::vector<float*> buffers_;
  std::vector<int64_t> buffer_cols_;
  float* logits_dev_ = nullptr;    // [head_rows, n_vocab]
  int32_t* argmax_dev_ = nullptr;  // [head_rows]
  void* attn_ws_ = nullptr;
  size_t attn_ws_bytes_ = 0;

  // Inputs: [tokens T][output rows n_out][packed attention batch], int32, pinned on the host and mirrored on
  // the device.
  int32_t* in_host_ = nullptr;
  int32_t* in_dev_ = nullptr;
  int64_t in_capacity_ = 0;        // int32 elements
  float* logits_host_ = nullptr;   // pinned [head_rows, n_vocab]
  int32_t* argmax_host_ = nullptr;  // pinned [head_rows]
  int32_t* top_ids_dev_ = nullptr;  // [head_rows, kMaxTopK] a head pass's top-k outputs
  float* top_lp_dev_ = nullptr;
  int32_t* top_ids_host_ = nullptr;  // pinned, the same
  float* top_lp_host_ = nullptr;
  float* taps_host_ = nullptr;      // pinned [chunk tokens, taps_stride]: the step's staged taps
  int64_t taps_capacity_ = 0;       // floats
  float* taps_dev_ = nullptr;       // [request tokens, taps_stride]: taps kept on the device
  int64_t taps_dev_capacity_ = 0;   // floats
  FloatRows last_device_taps_;      // the last step's, when it kept them here
  // Kept rows (keep_rows): [n_kept_, kept_cols_] on the device, in a buffer of kept_capacity_ floats.
  float* kept_dev_ = nullptr;
  int64_t kept_capacity_ = 0, kept_cols_ = 0, n_kept_ = 0;
  bool unsettled_ = false;  // keep_rows' copies enqueued (or waiting) since the last settle()
  // Copies of device rows keep_rows has not enqueued yet: made at settle(), at the next step or when the kept
  // buffer grows, whichever comes first.
  struct KeptCopy {
    float* dst = nullptr;
    const float* src = nullptr;
    int64_t src_stride = 0, rows = 0;
  };
  std::vector<KeptCopy> kept_copies_;

  std::mutex mutex_;  // one step at a time: the activations, the stream and the graphs are shared
  DeviceKv kv_;       // the running step's KV
  Current cur_;
  std::map<StepShape, cudaGraphExec_t> graphs_;
  std::map<std::vector<const void*>, uint64_t> kv_bindings_;  // KV pointers of seen shapes -> last use
  uint64_t n_steps_ = 0;
  std::set<StepShape> seen_shapes_;  // shapes run once eagerly; captured on their second step
};

}  // namespace saker
