#pragma once
// LayerKv: one layer's paged K/V views, as an op backend reads them (the storage behind them is
// models/KvStorage's).
#include "core/tensor.h"

namespace saker {

struct LayerKv {
  TensorView k;  // [n_blocks, block_size, n_head_kv, head_dim] on the storage's device
  TensorView v;  // [n_blocks, block_size, n_head_kv, head_dim]
};

}  // namespace saker
