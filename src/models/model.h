#pragma once
// Model: an architecture's forward pass over a flattened batch of many sequences. It only wires ops
// together; the KV cache storage and the batch bookkeeping belong to the engine.
#include <cstdint>
#include <memory>
#include <vector>
#include <span>
#include <string>

#include "core/float_rows.h"
#include "core/status.h"
#include "core/tensor.h"
#include "models/hparams.h"
#include "models/kv_storage.h"
#include "models/model_weights.h"
#include "ops/attention_batch.h"
#include "ops/cpu/matmul.h"

namespace saker {

// Hidden states a speculative drafter reads from the target: the output of decoder layer layers[j] (after its
// residual add; Hugging Face's hidden_states[layers[j] + 1]) for every batch token. Both backends fill them
// (spec::SpeculativeGenerator, whose drafter runs on the CPU, still refuses a GPU target).
struct HiddenTaps {
  std::span<const int32_t> layers;  // [n_taps] 0-based decoder layer ids; empty: no taps
  float* out = nullptr;             // [n_tokens, n_taps, n_embd] on the host
  // Instead of out: the rows stay in the model's GPU memory (Model::device_taps), for a drafter on that GPU.
  bool on_device = false;
};

struct ForwardBatch {
  std::span<const int32_t> tokens;       // [n_tokens]
  AttentionBatch attn;                   // per-token sequence, slot, position; per-sequence block tables
  std::span<const int32_t> output_rows;  // [n_outputs] batch indices whose logits are wanted
  HiddenTaps taps;                       // optional: tapped hidden states of every batch token
  // Optional: [n_outputs] each output row's argmax token id (the lowest id among equal maxima, as the greedy
  // Sampler picks), computed on the model's device, so a greedy step copies ids instead of [rows, n_vocab]
  // logits. When set, forward() may be given logits == nullptr and then copies no logits.
  int32_t* argmax = nullptr;
};

// Which op implementations run: every optimisation can be switched off to tell a kernel bug from a
// scheduling bug.
struct OpsOptions {
  Device device = Device::kCpu;
  bool fast_matmul = true;     // cpu::matmul (SIMD, threads, BLAS); false: ref::matmul
  bool fast_attention = true;  // cpu::attention (threads, SIMD); false: ref::attention
  cpu::MatmulOptions matmul;
  // CUDA: tokens one forward may carry (the scratch buffers are sized for it; longer batches are split).
  int64_t max_batch_tokens = 2048;
  bool cuda_graphs = true;     // capture decode steps (<= 64 tokens) in CUDA graphs and replay them
  // CUDA: F16 / BF16 matmuls of 1-64 rows on the width-invariant tensor-core kernel, so a row's bits do not
  // depend on the batch (K-quant weights always have this) and speculative / batched output equals plain
  // decoding bit for bit. Off: cuBLAS, faster (8B F16 decode 187.5 against 140.1 tok/s on the H200).
  bool batch_invariant = false;
  // Tensor-parallel ranks (models/tensor_parallel_model.h): > 1 splits the model over that many in-process CPU
  // ranks on threads, each with about 1 / N of the thread pool; on CUDA one rank per GPU through NCCL (the
  // command line does not take it there yet: it has not run on several GPUs).
  int tensor_parallel = 1;
  // CUDA devices of the tensor-parallel ranks (empty: 0 .. tensor_parallel - 1). A device given twice runs
  // those ranks on one GPU with their all-reduces staged through host memory and no graphs: slow, a check of
  // the sharded CUDA forward on a machine with one GPU.
  std::vector<int> tensor_parallel_devices;
};

// "cpu" | "cuda" | "auto" (cuda when a GPU is visible and the CUDA backend is built).
Result<Device> parse_device(const std::string& name);

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelHParams& hparams() const = 0;
  // logits: [n_outputs, n_vocab] f32 (may be null when batch.argmax is set). K/V of every batch token are
  // written to `kv` (views of storage from allocate_kv) at their slots.
  virtual Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) = 0;
  virtual Device device() const { return Device::kCpu; }
  // Whether forward() can leave hidden-state taps in GPU memory (HiddenTaps::on_device), and the last forward's
  // rows there ([n_tokens, n_taps * n_embd], valid until the next forward).
  virtual bool keeps_taps_on_device() const { return false; }
  virtual FloatRows device_taps() const { return {}; }
  // KV memory on this model's device (CPU: a host KvCache; CUDA: a CudaKvStorage of f16 pages), owned by the
  // caller (the engine's KvPool, a generator, a test).
  virtual Result<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheConfig& config) const;
  // The KV dtype this backend stores (CPU: f32; CUDA: f16).
  virtual DType kv_dtype() const { return DType::kF32; }
  // The first weight whose rows' numbers depend on the batch width on this backend (OpBackend), empty when
  // none: then speculative decoding gives plain decoding's tokens exactly.
  virtual std::string width_dependent_weight() const { return {}; }
  // The most rows a step may feed while every row keeps the numbers it gets alone (CUDA: 64, where matmuls
  // leave the width-invariant kernels for cuBLAS); 0: any number (the CPU).
  virtual int64_t invariant_rows() const { return 0; }
  // KV heads per layer this model's storage holds: hparams().n_head_kv, or a tensor-parallel rank's slice.
  virtual int64_t kv_heads() const { return hparams().n_head_kv; }
};

// KV storage on a device (CPU: a host KvCache; CUDA: f16 pages in a CudaKvStorage), for a model or a drafter.
Result<std::unique_ptr<KvStorage>> allocate_kv_storage(Device device, const KvCacheConfig& config);

// Binds the weights of a supported architecture (models/registry.cpp) over the backend of options.device
// (errors name a missing tensor or a wrong shape).
Result<std::unique_ptr<Model>> create_model(std::shared_ptr<const ModelWeights> weights, OpsOptions options = {});

}  // namespace saker
