#pragma once
// Synthetic models: random weights of a real geometry written as GGUF, for tests and speed runs without
// downloads. Quantized types get random blocks with sane scales (no quantiser run: a 32B file is written
// at disk speed), so the workload is the real one while the text is noise.
#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "models/hparams.h"

namespace saker {

struct SynthOptions {
  std::string arch = "qwen3";   // qwen3 | qwen2 | llama | gemma3
  // tiny | 0.6b | 8b | 32b (qwen3); tiny | 1.5b | 7b (qwen2); tiny (llama, gemma3); tiny-gqa (every arch: splits
  // over 2 and 4 tensor-parallel ranks)
  std::string preset = "tiny";
  std::string type = "f16";     // f32 | f16 | bf16 | q8_0 | q4_0 | q4_k | q5_k | q6_k | iq4_xs | q4_k_m | q5_k_m
  uint64_t seed = 1;
  std::function<void(size_t done, size_t total)> progress;
};

// The geometry of a preset (errors name the valid presets).
Result<ModelHParams> synth_hparams(const std::string& arch, const std::string& preset);

// The type of each weight tensor under a mixed scheme such as q4_k_m (llama.cpp's choice: Q6_K for
// attn_v and ffn_down of the layers use_more_bits picks and for the output head); norms are always F32.
Result<DType> synth_tensor_type(const std::string& scheme, const std::string& tensor_name, int64_t layer,
                                int64_t n_layer);

Status write_synthetic_model(const SynthOptions& options, const std::string& path);

}  // namespace saker
