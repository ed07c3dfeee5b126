#pragma once
// Loading a model for a CLI command: weights, forward pass and tokenizer, with errors ready to print.
#include <memory>
#include <string>

#include "models/model.h"
#include "text/tokenizer.h"

namespace saker::cli {

struct LoadedModel {
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Model> model;
  std::unique_ptr<text::Tokenizer> tokenizer;  // null when the model has none
};

Result<LoadedModel> load_model(const std::string& path, const OpsOptions& ops);

}  // namespace saker::cli
