#include "models/model.h"

#include "models/dense_decoder.h"

namespace saker {

Result<std::unique_ptr<Model>> create_model(std::shared_ptr<const ModelWeights> weights, OpsOptions options) {
  const std::string& arch = weights->hparams().arch;
  if (arch == "qwen3" || arch == "llama" || arch == "gemma3") return DenseDecoderModel::create(std::move(weights), options);
  return make_error(StatusCode::kUnsupported, "no forward pass for architecture '{}'", arch);
}

}  // namespace saker
