#pragma once
// A test helper: one forward of one sequence with hidden-state taps.
#include <numeric>
#include <span>
#include <vector>

#include "engine/sequence_batch.h"
#include "models/model.h"

namespace saker::testing {

// One forward of `tokens` at positions [first, first + n) of one sequence (blocks 0, 1, ... in order), its last
// row an output (argmax id); the hidden states of `layers` into taps [n, layers, n_embd] when layers is not
// empty (on_device: left in the model's GPU memory instead, Model::device_taps).
inline Status forward_with_taps(Model& m, const KvStorage& kv, std::span<const int32_t> tokens, int32_t first,
                                std::span<const int32_t> layers, float* taps, int32_t* id, bool on_device = false) {
  const auto n = static_cast<int32_t>(tokens.size());
  std::vector<int32_t> table(kv.config().n_blocks);
  std::iota(table.begin(), table.end(), 0);
  const std::vector<int32_t> rows = {n - 1};
  const SequenceBatch sb(table, first, n, AttentionMask::kCausal);
  ForwardBatch b;
  b.tokens = tokens;
  b.attn = sb.attn;
  b.output_rows = rows;
  b.taps.layers = layers;
  b.taps.out = taps;
  b.taps.on_device = on_device;
  b.argmax = id;
  return m.forward(b, kv.layers(), nullptr);
}

}  // namespace saker::testing
