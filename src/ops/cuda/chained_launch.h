#pragma once
// Host side of chained kernel launches (chained_launch.cuh has the contract and the launch helper).

namespace saker::cuda {

// Whether launch_chained chains on the current device: compute capability 9.0 or later, kernels compiled
// for a compute_90 target or later (below it their chain_in() is empty, even when the driver compiles their
// PTX for Hopper), and SAKER_CUDA_PDL not "0". Cached per device; the first
// call asks the driver, so make it outside graph capture (the CUDA backend does when it is created).
bool chained_launches_enabled();

// Whether `device` runs Hopper code of ops/cuda: compute capability 9.0 or later and the kernels compiled for
// a compute_90 target or later (an older target's PTX, compiled for Hopper by the driver, leaves out what
// needs sm_90: chain_in(), the TMA copies of tma.cuh). Cached per device; the first call asks the driver.
bool hopper_code_on(int device);

}  // namespace saker::cuda
