#include "engine/model_runner.h"

namespace saker {

Status ModelRunner::run(const Batch& batch, bool need_logits, std::span<const int32_t> tap_layers, StepOutput* out) {
  const int64_t n_out = static_cast<int64_t>(batch.output_rows.size());
  out->n_vocab = model_.hparams().n_vocab;
  out->have_logits = need_logits;
  ForwardBatch fb = batch.forward_batch();
  out->tap_stride = static_cast<int64_t>(tap_layers.size()) * model_.hparams().n_embd;
  if (!tap_layers.empty()) {
    out->taps.resize(batch.n_tokens() * out->tap_stride);
    fb.taps.layers = tap_layers;
    fb.taps.out = out->taps.data();
  }
  const KvCacheConfig& c = pool_.storage().config();
  SAKER_RETURN_IF_ERROR(fb.attn.validate(c.n_blocks, c.block_size));
  if (need_logits) {
    out->logits.resize(n_out * out->n_vocab);
    return model_.forward(fb, pool_.layers(), out->logits.data());
  }
  out->ids.assign(n_out, -1);
  fb.argmax = out->ids.data();
  return model_.forward(fb, pool_.layers(), nullptr);
}

}  // namespace saker
