#pragma once
// ModelRunner: runs one engine Batch through the model over the pool's KV pages. When no deciding row needs
// its logits on the host (every one is plain greedy), it asks the model for argmax ids only, so a step copies
// [n_outputs] ids instead of [n_outputs, n_vocab] logits. The backend does the rest (the CUDA decoder captures
// graphs per batch shape).
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/batch.h"
#include "engine/kv_pool.h"
#include "models/model.h"

namespace saker {

struct StepOutput {
  bool have_logits = false;
  std::vector<float> logits;  // [n_outputs, n_vocab] when have_logits
  std::vector<int32_t> ids;   // [n_outputs] argmax ids otherwise
  std::vector<float> taps;    // [n_tokens, n_taps, n_embd] when taps were asked for on the host
  FloatRows device_taps;      // the same rows in the model's GPU memory, when asked for there
  int64_t tap_stride = 0;     // n_taps * n_embd floats per token
  int64_t n_vocab = 0;
  // Taps of batch rows [begin, begin + n), or of rows begin + pick[i] (pick non-empty: n = pick.size()).
  FloatRows tap_rows(int64_t begin, int64_t n, std::span<const int32_t> pick = {}) const {
    const float* base = device_taps.on_device ? device_taps.data : taps.data();
    return {.data = base + begin * tap_stride,
            .stride = tap_stride,
            .n = pick.empty() ? n : static_cast<int64_t>(pick.size()),
            .pick = pick,
            .on_device = device_taps.on_device};
  }
  std::span<float> row(int32_t i) { return {logits.data() + static_cast<int64_t>(i) * n_vocab, static_cast<size_t>(n_vocab)}; }
};

class ModelRunner {
 public:
  ModelRunner(Model& model, KvPool& pool) : model_(model), pool_(pool) {}
  // tap_layers non-empty: the hidden states of every batch token at those layers into out->taps, or with
  // taps_on_device (a model that keeps_taps_on_device) into out->device_taps.
  Status run(const Batch& batch, bool need_logits, std::span<const int32_t> tap_layers, bool taps_on_device,
             StepOutput* out);

 private:
  Model& model_;
  KvPool& pool_;
};

}  // namespace saker
