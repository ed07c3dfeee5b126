#include "cli/device_args.h"

#include "cli/model_loading.h"

namespace saker::cli {

OpsOptions DeviceArgs::ops() const {
  OpsOptions o;
  o.fast_matmul = !ref_ops;
  o.fast_attention = !ref_ops;
  o.cuda_graphs = !no_graphs;
  o.batch_invariant = batch_invariant;
  o.tensor_parallel = tensor_parallel;
  return o;
}

void add_device_options(CLI::App* s, DeviceArgs* d, bool offer_ref_ops) {
  if (offer_ref_ops)
    s->add_flag("--ref-ops", d->ref_ops, "Use the reference ops only (slow; to tell kernel bugs apart)");
  s->add_option("--device", d->device, "cpu, cuda or auto (the GPU when one is usable)")->capture_default_str();
  s->add_option("--tensor-parallel", d->tensor_parallel,
                "Split the model over N tensor-parallel ranks (--device cpu: N in-process CPU ranks, each on "
                "about 1/N of the threads)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  s->add_flag("--no-cuda-graphs", d->no_graphs, "Launch decode steps one kernel at a time (debugging)");
  s->add_flag("--batch-invariant", d->batch_invariant, kBatchInvariantHelp);
}

}  // namespace saker::cli
