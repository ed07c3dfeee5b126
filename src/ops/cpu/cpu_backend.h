#pragma once
// CpuBackend: the op surface (ops/backend.h) on host f32 buffers with the ref/ and cpu/ kernels, in the order
// and with the row-run rule the CPU decoder has always used, so its numbers do not change:
//   - a matmul multiplies each long run of one sequence's consecutive tokens (a prefill chunk) in a cpu::matmul
//     call of its own (where BLAS may take it) and every other row on the row-independent integer / float
//     paths, so a row's numbers never depend on the rest of the batch (batch and width invariance);
//   - fused ops are composed: a stacked q|k|v or gate|up matrix is one matmul per part into its columns,
//     matmul(accumulate) is the matmul into scratch then ref::add_f32, qk_norm_rope_kv_write is per-head
//     rms_norm, rope and kv_write on contiguous copies. The copies are exact, so the floats are those of the
//     separate q, k, v / gate, up buffers of before.
#include <memory>
#include <mutex>
#include <vector>

#include "ops/backend.h"
#include "ops/cpu/matmul.h"
#include "parallel/communicator.h"

namespace saker {

struct CpuBackendOptions {
  bool fast_matmul = true;     // cpu::matmul (SIMD, threads, BLAS); false: ref::matmul
  bool fast_attention = true;  // cpu::attention; false: ref::attention
  cpu::MatmulOptions matmul;
  // A tensor-parallel rank's collectives (not owned); null: one rank.
  Communicator* communicator = nullptr;
  bool trace = true;  // false: the trace hook stays quiet (every tensor-parallel rank but rank 0)
};

class CpuBackend final : public OpBackend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options) : options_(options) {}

  Device device() const override { return Device::kCpu; }
  DType kv_dtype() const override { return DType::kF32; }
  Result<const PreparedMatrix*> prepare_matrix(std::span<const TensorView> parts, const std::string& name) override;
  Result<const PreparedVector*> prepare_vector(std::span<const TensorView> parts) override;
  Status reserve(std::span<const ActivationSpec> buffers, int64_t n_vocab, const AttentionSpec& attention) override;
  Status run_step(const StepRequest& request, const StepProgram& program) override;

  int64_t step_tokens() const override { return static_cast<int64_t>(step_.tokens.size()); }
  Act buffer(int id, int64_t rows) override;
  Act logits(int64_t first, int64_t n) override;

  Status embedding(const PreparedMatrix& table, float scale, const Act& out) override;
  Status load_input(const Act& out) override;
  Status rms_norm(const Act& x, const PreparedVector& w, float eps, const Act& out) override;
  Status matmul(const PreparedMatrix& w, const Act& x, const Act& out, bool accumulate) override;
  Status add(const Act& a, const Act& b, const Act& out) override;
  Status qk_norm_rope_kv_write(const Act& qkv, const PreparedVector* qkv_bias, const AttentionSpec& a,
                               const PreparedVector* q_norm, const PreparedVector* k_norm, float eps,
                               const RopeSpec& rope, int layer) override;
  Status attention(const Act& q, int layer, const AttentionSpec& a, const Act& out) override;
  Status swiglu(const Act& gate, const Act& up, const Act& out) override;
  Status geglu_tanh(const Act& gate, const Act& up, const Act& out) override;
  Status gather_outputs(const Act& x, int64_t first, const Act& out) override;
  Status soft_cap(const Act& x, float cap) override;
  int n_ranks() const override { return options_.communicator ? options_.communicator->size() : 1; }
  Status all_reduce(const Act& x) override;
  Status emit_outputs(const Act& logits, int64_t first) override;
  Status tap_rows(const Act& x, int64_t col) override;
  Result<int64_t> keep_rows(const FloatRows& src, int64_t cols) override;
  void clear_kept_rows() override { kept_.clear(); }
  int64_t n_kept_rows() const override { return kept_cols_ > 0 ? static_cast<int64_t>(kept_.size()) / kept_cols_ : 0; }
  void trace(const Act& x, const char* name, int layer, int64_t heads) override;

 private:
  struct Matrix : PreparedMatrix {
    std::vector<TensorView> parts;  // the file's tensors, stacked along n_out
  };
  struct Vector : PreparedVector {
    TensorView view;         // the file's tensor (one part), as the ref ops read norm weights
    std::vector<float> f32;  // [n] every part dequantised, side by side (biases, RoPE factors)
  };
  struct RowRun {
    int64_t begin = 0, end = 0;
    bool blas = false;  // a long run of one sequence: BLAS may multiply it
  };
  void compute_row_runs();
  // qk_norm_rope_kv_write after the bias: the ref ops one after the other.
  Status norm_rope_kv_write(const Act& qkv, const AttentionSpec& a, const PreparedVector* q_norm,
                            const PreparedVector* k_norm, float eps, const RopeSpec& rope, int layer);
  // x [rows, n_in] times one weight tensor into out [rows, n_out], both contiguous, under the row-run rule.
  Status matmul_part(const TensorView& x, const TensorView& w, const TensorView& out) const;
  // A contiguous copy of a window (the window itself when it is contiguous).
  float* dense(const Act& a, std::vector<float>& scratch) const;

  CpuBackendOptions options_;
  std::vector<std::unique_ptr<Matrix>> matrices_;
  std::vector<std::unique_ptr<Vector>> vectors_;
  std::vector<ActivationSpec> specs_;
  int64_t n_vocab_ = 0;

  StepRequest step_;
  std::vector<float> kept_;  // [n_kept_rows, kept_cols_] keep_rows
  int64_t kept_cols_ = 0;
  std::vector<RowRun> runs_;
  std::vector<std::vector<float>> buffers_;          // per spec: [rows, cols]
  std::vector<float> logits_scratch_;                // [n_outputs, n_vocab] when only ids are wanted
  std::vector<float> tmp_, q_, k_, v_, g_, u_;       // composition scratch
  std::mutex mutex_;                                 // one step at a time: the step state and scratch are shared
};

}  // namespace saker
