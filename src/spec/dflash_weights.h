#pragma once
// DFlashWeights: a DFlash drafter's weights (config.json + model.safetensors; matrices kept in their BF16 / F16
// / F32, norms in f32) and the target tensors it borrows (embedding, output head). Immutable once loaded, so
// one copy serves every DFlashDrafter.
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "models/model_weights.h"
#include "spec/dflash_config.h"

namespace saker::spec {

struct DFlashWeights {
  struct Layer {
    TensorView input_norm, post_attn_norm;  // [n_embd]
    TensorView wq, wk, wv, wo;              // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
    TensorView q_norm, k_norm;              // [head_dim]
    TensorView w_gate, w_up, w_down;        // [n_ff, n_embd] x2, [n_embd, n_ff]
  };

  // dir: config.json + model.safetensors. target: the weights of the model the drafter was trained for.
  // Errors name the file and the tensor or field.
  static Result<std::shared_ptr<const DFlashWeights>> load(const std::string& dir,
                                                           std::shared_ptr<const ModelWeights> target);

  // A drafter of z-lab's recipe for `target` with random BF16 weights, for measuring what a real one costs:
  // n_layer draft layers of the target's own layer shape (heads, head size, FFN), block_size rows a block,
  // taps spread by DFlashConfig::spread_taps, the last vocabulary id as its mask token. Same seed, same
  // weights.
  static Result<std::shared_ptr<const DFlashWeights>> random(std::shared_ptr<const ModelWeights> target,
                                                             int64_t n_layer, int64_t block_size, uint64_t seed);

  DFlashConfig config;
  std::shared_ptr<const ModelWeights> target;  // keeps the borrowed views alive
  TensorView token_embd;                       // [n_vocab, n_embd] the target's
  TensorView output;                           // [n_vocab, n_embd] the target's head (token_embd when tied)
  TensorView fc;                               // [n_embd, n_taps * n_embd]
  TensorView hidden_norm, norm;                // [n_embd]
  std::vector<Layer> layers;

 private:
  // keep_dtype: the file's BF16 / F16 / F32 (matrices); else f32 (norms).
  Result<TensorView> load_tensor(const SafetensorsFile& file, const std::string& name, std::vector<int64_t> shape,
                                 bool keep_dtype);
  // The target's embedding and head, after the config is checked against it.
  Status borrow_target(std::shared_ptr<const ModelWeights> target);
  TensorView random_tensor(DType dtype, std::vector<int64_t> shape, float scale, uint64_t* state);
  std::vector<HostBuffer> owned_;  // the drafter's own weights
};

}  // namespace saker::spec
