#include "cli/model_loading.h"

#include "core/log.h"

namespace saker::cli {

Result<LoadedModel> load_model(const std::string& path, const OpsOptions& ops) {
  LoadedModel lm;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<ModelWeights> w, ModelWeights::open(path));
  lm.weights = std::move(w);
  SAKER_LOG_INFO("{}: {}", path, lm.weights->hparams().summary());
  auto model = create_model(lm.weights, ops);
  if (!model.ok()) return model.status().with_context(path);
  lm.model = std::move(model).value();
  if (const GgufFile* g = lm.weights->gguf();
      g && g->get_string("tokenizer.ggml.model").value_or("none") != "none") {
    auto tok = text::Tokenizer::from_gguf(*g);
    if (!tok.ok()) return tok.status();  // the message names the file already
    lm.tokenizer = std::move(tok).value();
  } else if (!lm.weights->is_gguf()) {
    auto tok = text::Tokenizer::from_hf_folder(path);
    if (tok.ok()) {
      lm.tokenizer = std::move(tok).value();
    } else if (tok.status().code() != StatusCode::kNotFound) {
      return tok.status().with_context(path);
    }
  }
  return lm;
}

}  // namespace saker::cli
