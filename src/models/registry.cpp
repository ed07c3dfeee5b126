#include "models/registry.h"

#include "models/dense_decoder.h"
#include "models/tensor_parallel_model.h"
#include "ops/cpu/cpu_backend.h"
#if SAKER_HAS_CUDA
#include "models/cuda/cuda_backend.h"
#endif

namespace saker {
namespace {

constexpr ModelArchitecture kArchitectures[] = {
    {"qwen3", &DenseDecoderModel::create},
    {"qwen2", &DenseDecoderModel::create},
    {"llama", &DenseDecoderModel::create},
    {"gemma3", &DenseDecoderModel::create},
};

}  // namespace

std::span<const ModelArchitecture> model_architectures() { return kArchitectures; }

const ModelArchitecture* find_architecture(const std::string& arch) {
  for (const ModelArchitecture& a : kArchitectures) {
    if (arch == a.arch) return &a;
  }
  return nullptr;
}

Result<std::unique_ptr<OpBackend>> create_backend(const OpsOptions& options) {
  if (options.device == Device::kCuda) {
#if SAKER_HAS_CUDA
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<OpBackend> b, CudaBackend::create(options));
    return b;
#else
    return make_error(StatusCode::kUnsupported, "this saker was built without the CUDA backend");
#endif
  }
  CpuBackendOptions o;
  o.fast_matmul = options.fast_matmul;
  o.fast_attention = options.fast_attention;
  o.matmul = options.matmul;
  return std::unique_ptr<OpBackend>(std::make_unique<CpuBackend>(o));
}

Result<std::unique_ptr<Model>> create_model(std::shared_ptr<const ModelWeights> weights, OpsOptions options) {
  const std::string& arch = weights->hparams().arch;
  const ModelArchitecture* a = find_architecture(arch);
  if (!a) return make_error(StatusCode::kUnsupported, "no forward pass for architecture '{}'", arch);
  if (options.tensor_parallel != 1) return TensorParallelModel::create(std::move(weights), options);
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<OpBackend> backend, create_backend(options));
  return a->create(std::move(weights), std::move(backend), TensorShard{});
}

}  // namespace saker
