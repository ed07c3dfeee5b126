#pragma once
// The trace hook: every intermediate of a forward pass goes through trace(t, "attn_norm", layer), so a run
// can dump tensors and diff them against a reference. Off by default (one branch per call).
//   SAKER_TRACE=all or SAKER_TRACE=attn_norm,ffn_out  selects tensors;
//   SAKER_TRACE_DIR=DIR writes each as raw f32 (NAME.LAYER.CALL.f32) plus a line in DIR/index.tsv;
//   without it a summary line (shape, mean, abs-max, xxh64 of the bytes) goes to the log.
#include <functional>

#include "core/tensor.h"

namespace saker {

using TraceHook = std::function<void(const TensorView& t, const char* name, int layer)>;

// Replaces the hook (tests use this to capture tensors); an empty hook turns tracing off.
void set_trace_hook(TraceHook hook);
bool trace_enabled();
void trace_dispatch(const TensorView& t, const char* name, int layer);

inline void trace(const TensorView& t, const char* name, int layer = -1) {
  if (trace_enabled()) trace_dispatch(t, name, layer);
}

}  // namespace saker
