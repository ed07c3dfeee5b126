#pragma once
// Conversion of a Hugging Face folder to GGUF (and re-quantisation of a GGUF), writing metadata that both
// saker and llama.cpp load: architecture keys, the tokenizer, and tensors under GGUF names.
#include <functional>
#include <string>

#include "core/status.h"
#include "models/model_weights.h"

namespace saker {

struct ConvertOptions {
  // f32 | f16 | bf16 | q8_0 | q4_0 | q4_k | q5_k | q6_k | iq4_xs | q4_k_m | q5_k_m (norms always stay F32)
  std::string type = "f16";
  std::function<void(size_t done, size_t total)> progress;
};

// The type a tensor gets: the scheme's choice, with llama.cpp's fallbacks where a row is not a whole number
// of 256-element super-blocks (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K / IQ4_XS -> Q8_0, or F16 below 32).
Result<DType> convert_tensor_type(const std::string& scheme, const std::string& gguf_name, int64_t n_cols,
                                  int64_t n_layer);

Status convert_to_gguf(const ModelWeights& weights, const ConvertOptions& options, const std::string& out_path);

}  // namespace saker
