#pragma once
// ModelWeights: a model's tensors by GGUF name, whether they come from a GGUF file or a Hugging Face
// safetensors folder (HF names are mapped onto GGUF's: model.layers.3.self_attn.q_proj.weight ->
// blk.3.attn_q.weight, its .bias -> blk.3.attn_q.bias). Views point into the mmap'd files; the object keeps
// them alive.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "models/hparams.h"

namespace saker {

class ModelWeights {
 public:
  // `path`: a .gguf file or an HF folder (config.json + *.safetensors).
  static Result<std::unique_ptr<ModelWeights>> open(const std::string& path);

  const std::string& path() const { return path_; }
  bool is_gguf() const { return gguf_.has_value(); }
  const GgufFile* gguf() const { return gguf_ ? &*gguf_ : nullptr; }
  const HfConfig* hf_config() const { return hf_config_ ? &*hf_config_ : nullptr; }
  const ModelHParams& hparams() const { return hparams_; }

  const TensorView* find(const std::string& name) const;
  // The tensor, checked against the expected row-major shape; errors name the tensor and both shapes.
  Result<TensorView> require(const std::string& name, std::vector<int64_t> shape) const;
  std::vector<std::string> names() const;
  uint64_t total_bytes() const;

  // HF -> GGUF tensor name ("" when the HF name has no GGUF equivalent).
  static std::string gguf_name_for_hf(const std::string& hf_name);

 private:
  Status load_gguf();
  Status load_hf();

  std::string path_;
  std::optional<GgufFile> gguf_;
  std::optional<HfConfig> hf_config_;
  std::optional<SafetensorsModel> safetensors_;
  ModelHParams hparams_;
  std::map<std::string, TensorView> tensors_;
  std::vector<HostBuffer> owned_;  // copies of tensors whose file data is not aligned for a view
};

}  // namespace saker
