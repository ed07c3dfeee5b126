#pragma once
// The flags that choose where and how a model runs, shared by `saker run` and `saker serve`: --device,
// --tensor-parallel, --ref-ops, --no-cuda-graphs, --batch-invariant.
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

void add_device_options(CLI::App* s, DeviceArgs* d);

}  // namespace saker::cli
