#include "engine/model_runner.h"

namespace saker {

Status ModelRunner::run(const Batch& batch, bool need_logits, std::span<const int32_t> tap_layers, bool taps_on_device,
                        StepOutput* out) {
  const int64_t n_out = static_cast<int64_t>(batch.output_rows.size());
  out->n_vocab = model_.hparams().n_vocab;
  out->have_logits = need_logits;
  ForwardBatch fb = batch.forward_batch();
  out->tap_stride = static_cast<int64_t>(tap_layers.size()) * model_.hparams().n_embd;
  out->device_taps = {};
  if (!tap_layers.empty()) {
    fb.taps.layers = tap_layers;
    fb.taps.on_device = taps_on_device && model_.keeps_taps_on_device();
    if (!fb.taps.on_device) {
      out->taps.resize(batch.n_tokens() * out->tap_stride);
      fb.taps.out = out->taps.data();
    }
  }
  const KvCacheConfig& c = pool_.storage().config();
  SAKER_RETURN_IF_ERROR(fb.attn.validate(c.n_blocks, c.block_size));
  Status st;
  if (need_logits) {
    out->logits.resize(n_out * out->n_vocab);
    st = model_.forward(fb, pool_.layers(), out->logits.data());
  } else {
    out->ids.assign(n_out, -1);
    fb.argmax = out->ids.data();
    st = model_.forward(fb, pool_.layers(), nullptr);
  }
  if (st.ok() && fb.taps.on_device) {
    out->device_taps = model_.device_taps();
    if (!out->device_taps.on_device || out->device_taps.n != batch.n_tokens() ||
        out->device_taps.stride != out->tap_stride) {
      return make_error(StatusCode::kInternal, "forward: {} device tap rows of {} floats for {} tokens of {}",
                        out->device_taps.n, out->device_taps.stride, batch.n_tokens(), out->tap_stride);
    }
  }
  return st;
}

}  // namespace saker
