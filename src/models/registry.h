#pragma once
// The architectures saker can run: GGUF architecture name -> the factory that binds its weights over an op
// backend. Adding an architecture is one model file plus one entry in registry.cpp.
#include <memory>
#include <span>
#include <string>

#include "models/model.h"
#include "models/tensor_shard.h"
#include "ops/backend.h"

namespace saker {

// `shard`: which tensor-parallel slice to bind (the whole model at one rank); the backend reduces over its ranks.
using ModelFactory = Result<std::unique_ptr<Model>> (*)(std::shared_ptr<const ModelWeights> weights,
                                                         std::unique_ptr<OpBackend> backend, const TensorShard& shard);

struct ModelArchitecture {
  const char* arch;  // GGUF general.architecture (HF folders map to it in hparams)
  ModelFactory create;
};

std::span<const ModelArchitecture> model_architectures();
const ModelArchitecture* find_architecture(const std::string& arch);

// The op backend of options.device (CPU: ref/cpu kernels; CUDA: the GPU kernels, one stream per model).
Result<std::unique_ptr<OpBackend>> create_backend(const OpsOptions& options);

}  // namespace saker
