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
  std::string chat_template;                   // Jinja source from the model, "" when it has none
};

// The model's chat template: GGUF tokenizer.chat_template, or an HF folder's chat_template.jinja /
// tokenizer_config.json chat_template; Gemma's turn format for a gemma3 GGUF without one; "" otherwise.
std::string read_chat_template(const ModelWeights& weights);

Result<LoadedModel> load_model(const std::string& path, const OpsOptions& ops);

// The help of --batch-invariant (OpsOptions::batch_invariant), shared by run, serve and bench.
inline constexpr char kBatchInvariantHelp[] =
    "GPU matmuls that give a row the same bits at every batch width for F16 / BF16 and Q8_0 / Q4_0 / Q4_1 / Q5_0 / "
    "Q5_1 / IQ4_NL / IQ4_XS weights too (K-quant files always get them): speculative and batched output equal "
    "plain decoding bit for bit; slower decode";

// load_model on the device a --device flag names ("cpu", "cuda", "auto"). "auto" takes the GPU when one is
// usable and falls back to the CPU, with a warning, when the GPU backend cannot run this model.
Result<LoadedModel> load_model_on(const std::string& path, OpsOptions ops, const std::string& device);

}  // namespace saker::cli
