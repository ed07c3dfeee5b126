#pragma once
// ModelHParams: the hyper-parameters a forward pass needs, read from GGUF metadata or an HF config.json.
#include <cstdint>
#include <string>

#include "core/status.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "ops/ref/rope.h"

namespace saker {

struct ModelHParams {
  std::string arch;            // GGUF architecture name: "qwen3", "qwen2", "llama", "gemma3"
  int64_t n_vocab = 0;
  int64_t n_embd = 0;          // hidden size
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;        // may differ from n_embd / n_head (Qwen3)
  int64_t n_ff = 0;            // MLP intermediate size
  int64_t n_ctx_train = 0;     // context length the model was trained for
  float rms_eps = 1e-6f;
  ref::RopeStyle rope_style = ref::RopeStyle::kNeox;
  double rope_theta = 10000.0;
  double rope_freq_scale = 1.0;
  bool tied_embeddings = false;  // no separate output head: logits use token_embd
  int64_t n_rot = 0;             // rotated dimensions per head (rope.dimension_count); 0: head_dim
  bool qk_norm = false;          // per-head RMSNorm on q and k before RoPE (qwen3, gemma3)
  bool qkv_bias = false;         // biases on the q, k and v projections (qwen2: attn_{q,k,v}.bias)

  // Gemma 3 (GGUF keys attention.sliding_window, attention.sliding_window_pattern, rope.freq_base_swa).
  // Layer l is global (full attention, rope_theta, rope scaling) when sliding_window == 0 or
  // (l + 1) % swa_period == 0; otherwise local: keys within sliding_window positions, rope_theta_swa, no
  // rope scaling. Norm weights in GGUF already include Gemma's +1 (llama.cpp adds it when converting).
  int64_t sliding_window = 0;    // attention.sliding_window; 0: every layer global
  int64_t swa_period = 0;        // every swa_period-th layer is global (6 in Gemma 3)
  double rope_theta_swa = 0.0;   // RoPE base of local layers (10000 in Gemma 3)
  float embed_scale = 1.0f;      // token embeddings are multiplied by this (sqrt(n_embd) in Gemma)
  float attn_scale = 0.0f;       // attention logit scale; 0: 1 / sqrt(head_dim)
  float attn_soft_cap = 0.0f;    // > 0: attention logits capped (attn_logit_softcapping)
  float final_soft_cap = 0.0f;   // > 0: output logits capped (final_logit_softcapping)

  bool layer_is_local(int64_t l) const { return sliding_window > 0 && swa_period > 0 && (l + 1) % swa_period != 0; }

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  // Checks the values against each other (GQA divisibility, positive sizes); messages name the key.
  Status validate() const;
  std::string summary() const;
};

// Architectures saker runs, by GGUF name.
bool is_supported_architecture(const std::string& gguf_arch);

// llama.cpp's `general.file_type` (its llama_ftype numbering) for a type scheme; -1 when it has none.
int32_t llama_file_type(const std::string& scheme);

// The general.* and ARCH.* keys of a model file written by saker (convert, synth), typed as llama.cpp reads them.
void write_gguf_hparams(const ModelHParams& h, const std::string& name, const std::string& type_scheme,
                        GgufWriter* w);

Result<ModelHParams> hparams_from_gguf(const GgufFile& file);
// `hf_arch` is architectures[0] of config.json, e.g. "Qwen3ForCausalLM".
Result<ModelHParams> hparams_from_hf(const HfConfig& config);

}  // namespace saker
