#pragma once
// The flags that choose where and how a model runs, shared by `saker run` and `saker serve`: --device,
// --tensor-parallel, --ref-ops, --no-cuda-graphs, --batch-invariant.
#include <string>

#include <CLI/CLI.hpp>

namespace saker::cli {

struct DeviceArgs {
  bool ref_ops = false;          // reference ops only
  std::string device = "auto";   // cpu, cuda or auto
  int tensor_parallel = 1;       // ranks
  bool no_graphs = false;        // no CUDA graphs
  bool batch_invariant = false;  // OpsOptions::batch_invariant
};

void add_device_options(CLI::App* s, DeviceArgs* d);

}  // namespace saker::cli
