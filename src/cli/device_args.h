#pragma once
// The flags that choose where and how a model runs, shared by `saker run`, `saker serve` and `saker bench`:
// --device, --tensor-parallel, --ref-ops (not bench's), --no-cuda-graphs, --batch-invariant.
#include <string>

#include <CLI/CLI.hpp>

#include "models/model.h"

namespace saker::cli {

struct DeviceArgs {
  bool ref_ops = false;          // reference ops only
  std::string device = "auto";   // cpu, cuda or auto
  int tensor_parallel = 1;       // ranks
  bool no_graphs = false;        // no CUDA graphs
  bool batch_invariant = false;  // OpsOptions::batch_invariant

  // The options these flags set (--ref-ops: the reference matmul and attention).
  OpsOptions ops() const;
};

// offer_ref_ops false: no --ref-ops (bench measures the fast kernels only; d->ref_ops stays false).
void add_device_options(CLI::App* s, DeviceArgs* d, bool offer_ref_ops = true);

}  // namespace saker::cli
