#include "models/model.h"

#include "models/qwen3.h"

namespace saker {

Result<std::unique_ptr<Model>> create_model(std::shared_ptr<const ModelWeights> weights, OpsOptions options) {
  const std::string& arch = weights->hparams().arch;
  if (arch == "qwen3") return Qwen3Model::create(std::move(weights), options);
  return make_error(StatusCode::kUnsupported, "no forward pass for architecture '{}'", arch);
}

}  // namespace saker
