#include "ops/ref/swiglu.h"

#include <cmath>

#include "ops/ref/gated_unit.h"

namespace saker::ref {

namespace {
// g / (1 + e^-g): for very negative g, e^-g overflows to inf and the quotient is -0, the right limit.
double silu(double g) { return g / (1.0 + std::exp(-g)); }
}  // namespace

Status swiglu(const TensorView& gate, const TensorView& up, const TensorView& out) {
  return gated_unit(gate, up, out, silu, "ref::swiglu");
}

}  // namespace saker::ref
