#pragma once
// Model: an architecture's forward pass over a flattened batch of many sequences. It only wires ops
// together; the KV cache storage and the batch bookkeeping belong to the engine.
#include <cstdint>
#include <memory>
#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "models/hparams.h"
#include "models/model_weights.h"
#include "ops/attention_batch.h"
#include "ops/cpu/matmul.h"

namespace saker {

// One layer's paged KV cache.
struct LayerKv {
  TensorView k;  // [n_blocks, block_size, n_head_kv, head_dim]
  TensorView v;  // [n_blocks, block_size, n_head_kv, head_dim]
};

struct ForwardBatch {
  std::span<const int32_t> tokens;       // [n_tokens]
  AttentionBatch attn;                   // per-token sequence, slot, position; per-sequence block tables
  std::span<const int32_t> output_rows;  // [n_outputs] batch indices whose logits are wanted
};

// Which op implementations run: every optimisation can be switched off to tell a kernel bug from a
// scheduling bug.
struct OpsOptions {
  bool fast_matmul = true;     // cpu::matmul (SIMD, threads, BLAS); false: ref::matmul
  bool fast_attention = true;  // cpu::attention (threads, SIMD); false: ref::attention
  cpu::MatmulOptions matmul;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelHParams& hparams() const = 0;
  // logits: [n_outputs, n_vocab] f32. K/V of every batch token are written to `kv` at their slots.
  virtual Status forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) = 0;
};

// Binds the weights of a supported architecture (errors name a missing tensor or a wrong shape).
Result<std::unique_ptr<Model>> create_model(std::shared_ptr<const ModelWeights> weights, OpsOptions options = {});

}  // namespace saker
