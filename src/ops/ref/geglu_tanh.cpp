#include "ops/ref/geglu_tanh.h"

#include <cmath>

#include "ops/ref/gated_unit.h"

namespace saker::ref {

namespace {
double gelu_tanh(double g) {
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  return 0.5 * g * (1.0 + std::tanh(kSqrt2OverPi * (g + 0.044715 * g * g * g)));
}
}  // namespace

Status geglu_tanh(const TensorView& gate, const TensorView& up, const TensorView& out) {
  return gated_unit(gate, up, out, gelu_tanh, "ref::geglu_tanh");
}

}  // namespace saker::ref
