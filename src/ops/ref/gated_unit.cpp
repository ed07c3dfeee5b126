#include "ops/ref/gated_unit.h"

#include "ops/ref/check.h"

namespace saker::ref {

Status gated_unit(const TensorView& gate, const TensorView& up, const TensorView& out, GateActivation act,
                  const char* op) {
  SAKER_RETURN_IF_ERROR(check_f32_rows(gate, op, "gate"));
  const int64_t n_ff = gate.dim(-1);
  SAKER_RETURN_IF_ERROR(check_f32_rows(up, op, "up", n_ff));
  SAKER_RETURN_IF_ERROR(check_f32_rows(out, op, "out", n_ff));
  SAKER_RETURN_IF_ERROR(check_same_rows(gate, up, op, "gate", "up"));
  SAKER_RETURN_IF_ERROR(check_same_rows(gate, out, op, "gate", "out"));
  for (int64_t r = 0; r < gate.n_rows(); ++r) {
    const float* g = static_cast<const float*>(gate.row(r));
    const float* u = static_cast<const float*>(up.row(r));
    float* y = static_cast<float*>(out.row(r));
    for (int64_t i = 0; i < n_ff; ++i) y[i] = static_cast<float>(act(g[i]) * u[i]);
  }
  return {};
}

}  // namespace saker::ref
