#pragma once
// DFlashWeights: a DFlash drafter's weights (config.json + model.safetensors, BF16/F16/F32 kept in f32) and
// the target tensors it borrows (embedding, output head). Immutable once loaded, so one copy serves every
// DFlashDrafter (a server slot each).
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

  DFlashConfig config;
  std::shared_ptr<const ModelWeights> target;  // keeps the borrowed views alive
  TensorView token_embd;                       // [n_vocab, n_embd] the target's
  TensorView output;                           // [n_vocab, n_embd] the target's head (token_embd when tied)
  TensorView fc;                               // [n_embd, n_taps * n_embd]
  TensorView hidden_norm, norm;                // [n_embd]
  std::vector<Layer> layers;

 private:
  Result<TensorView> load_tensor(const SafetensorsFile& file, const std::string& name, std::vector<int64_t> shape);
  std::vector<HostBuffer> owned_;  // the drafter's own weights in f32
};

}  // namespace saker::spec
