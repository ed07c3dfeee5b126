#pragma once
// What `saker bench` divides by: the bytes and FLOPs a model's steps need, and the machine's ceilings.
#include <cstdint>
#include <string>

#include "models/model_weights.h"

namespace saker::cli {

struct ModelCost {
  uint64_t decode_bytes = 0;  // bytes of every matrix one decode step reads: all layers + the output head
  double layer_params = 0;    // weights of the layers' matrices (FLOPs per token = 2x this)
  double head_params = 0;     // weights of the output head
  std::string type_summary;   // "q4_K: 252 tensors, q6_K: 37, f32: 73"
};

ModelCost model_cost(const ModelWeights& weights);

struct Ceilings {
  double bandwidth_gbs = 0;
  double tflops = 0;
  std::string source;  // where the numbers come from
};

// The ceilings of a GPU by its name: the H200's measured ones (device-to-device copy 4.28 TB/s, bf16 GEMM 800
// TFLOP/s); another GPU gets the same figures with a source that says so, so its percentages are read against
// an H200 (`saker bench --bandwidth / --tflops` give its own).
Ceilings gpu_ceilings(const std::string& device_name);
// Measures this CPU: a multi-threaded read of a buffer much larger than the caches, and an f32 matmul.
Ceilings measure_cpu_ceilings();

}  // namespace saker::cli
