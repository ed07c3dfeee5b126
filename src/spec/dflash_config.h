#pragma once
// DFlashConfig: a DFlash block drafter's config.json (z-lab format: `architectures: ["DFlashDraftModel"]`,
// `block_size`, `dflash_config {mask_token_id, target_layer_ids}`, Qwen3-style layer sizes), checked against
// the target it drafts for. Errors name the file, the field and what was expected.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "models/hparams.h"

namespace saker::spec {

struct DFlashConfig {
  int64_t n_layer = 0;    // draft decoder layers
  int64_t n_embd = 0;     // hidden size (the target's)
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_ff = 0;
  int64_t n_vocab = 0;    // the target's vocabulary (the drafter borrows its embedding and head)
  int64_t block_size = 0;  // block = [pending token, mask x (block_size - 1)]
  int32_t mask_token = 0;
  std::vector<int32_t> target_layers;  // tapped target decoder layers (0-based), ascending
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }

  // `text`: the config.json contents; `origin` names it in errors.
  static Result<DFlashConfig> parse(std::string_view text, const std::string& origin);
  // Loads DIR/config.json.
  static Result<DFlashConfig> load(const std::string& dir);
  // Taps spread over a target of n_target layers the way DFlash spreads n of them: one -> the middle layer;
  // else round(1 + i (n_target - 4) / (n - 1)), i = 0..n-1 (36 layers, 5 taps: 1, 9, 17, 25, 33). A target
  // too small for that gets min(n, n_target) taps spread evenly over all its layers.
  static std::vector<int32_t> spread_taps(int64_t n_target, int64_t n);
  // The drafter must fit the target: same hidden size, taps inside the target, the mask token in its vocabulary.
  Status check_target(const ModelHParams& target) const;
};

}  // namespace saker::spec
