#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>

#include "core/logits.h"
#include "core/trace.h"
#include "formats/quant/codec.h"
#include "ops/cpu/attention.h"
#include "ops/ref/add.h"
#include "ops/ref/argmax.h"
#include "ops/ref/attention.h"
#include "ops/ref/embedding.h"
#include "ops/ref/geglu_tanh.h"
#include "ops/ref/kv_write.h"
#include "ops/ref/matmul.h"
#include "ops/ref/rms_norm.h"
#include "ops/ref/swiglu.h"

namespace saker {
namespace {

TensorView f32(float* p, std::initializer_list<int64_t> shape) { return TensorView::contiguous(p, DType::kF32, shape); }

// Copies rows x cols floats between windows of different strides.
void copy_rows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * src_stride, cols, dst + r * dst_stride);
}

}  // namespace

Result<const PreparedMatrix*> CpuBackend::prepare_matrix(std::span<const TensorView> parts, const std::string&) {
  auto m = std::make_unique<Matrix>();
  m->parts.assign(parts.begin(), parts.end());
  m->n_in = parts.empty() ? 0 : parts[0].dim(1);
  for (const TensorView& t : parts) m->n_out += t.dim(0);
  matrices_.push_back(std::move(m));
  return static_cast<const PreparedMatrix*>(matrices_.back().get());
}

Result<const PreparedVector*> CpuBackend::prepare_vector(std::span<const TensorView> parts) {
  auto v = std::make_unique<Vector>();
  if (parts.size() == 1) v->view = parts[0];
  for (const TensorView& t : parts) v->n += t.n_elements();
  v->f32.resize(v->n);
  int64_t at = 0;
  for (const TensorView& t : parts) {
    if (!can_dequantize(t.dtype)) {
      return make_error(StatusCode::kUnsupported, "a vector of type {} cannot be read", dtype_name(t.dtype));
    }
    SAKER_RETURN_IF_ERROR(dequantize_row(t.dtype, t.data, v->f32.data() + at, t.n_elements()));
    at += t.n_elements();
  }
  vectors_.push_back(std::move(v));
  return static_cast<const PreparedVector*>(vectors_.back().get());
}

Status CpuBackend::reserve(std::span<const ActivationSpec> buffers, int64_t n_vocab, const AttentionSpec&) {
  specs_.assign(buffers.begin(), buffers.end());
  buffers_.assign(specs_.size(), {});
  n_vocab_ = n_vocab;
  return {};
}

// Rows [begin, end) of the batch that one cpu::matmul call multiplies. A long run of one sequence's consecutive
// tokens (a prefill chunk) gets a call of its own, where BLAS may take it; every other row goes through the
// integer / float paths, whose result for a row does not depend on the other rows. So a row's numbers are the
// same whatever else shares the step (a decode token beside another sequence's prefill chunk, or alone).
void CpuBackend::compute_row_runs() {
  const AttentionBatch& attn = *step_.attn;
  const int64_t T = attn.n_tokens();
  const int64_t blas_min = options_.matmul.blas_min_tokens > 0 ? options_.matmul.blas_min_tokens : 16;
  runs_.clear();
  for (int64_t b = 0; b < T;) {
    int64_t e = b + 1;
    while (e < T && attn.token_seq[e] == attn.token_seq[b]) ++e;
    // Verify rows must round as one-row decode does (speculative output equals plain decoding's).
    const bool verify = attn.sequences[attn.token_seq[b]].verifies();
    const bool long_run = e - b >= blas_min && !verify;
    if (!long_run && !runs_.empty() && !runs_.back().blas && runs_.back().end == b) {
      runs_.back().end = e;  // short runs next to each other share one call
    } else {
      runs_.push_back({b, e, long_run});
    }
    b = e;
  }
}

Status CpuBackend::run_step(const StepRequest& request, const StepProgram& program) {
  std::lock_guard<std::mutex> lock(mutex_);  // the step state and scratch are the backend's
  SAKER_RETURN_IF_ERROR(check_top_k(request));
  if (request.taps_on_device) {
    return make_error(StatusCode::kInvalidArgument, "forward: the CPU backend has no device to keep taps on");
  }
  if (request.taps_stride > 0 && (request.taps_out == nullptr || request.tap_layers.empty())) {
    return make_error(StatusCode::kInvalidArgument, "forward: hidden-state taps of {} layers without an output buffer",
                      request.tap_layers.size());
  }
  for (const LayerKv& layer : request.kv) {  // the CPU ops read and write the views directly
    if (layer.k.device != Device::kCpu || layer.v.device != Device::kCpu) {
      return make_error(StatusCode::kInvalidArgument, "forward: the CPU decoder was given KV views on the {}",
                        device_name(layer.k.device != Device::kCpu ? layer.k.device : layer.v.device));
    }
  }
  step_ = request;
  compute_row_runs();
  const int64_t T = static_cast<int64_t>(request.tokens.size());
  const int64_t n_out = static_cast<int64_t>(request.output_rows.size());
  for (size_t i = 0; i < specs_.size(); ++i) buffers_[i].resize((specs_[i].per_output ? n_out : T) * specs_[i].cols);
  // A greedy step that wants ids only still needs the logits to pick from: they go to a scratch buffer.
  logits_scratch_.resize(request.logits ? 0 : n_out * n_vocab_);
  SAKER_RETURN_IF_ERROR(program.body());
  if (n_out > 0) SAKER_RETURN_IF_ERROR(program.head(0, n_out));
  return {};
}

Act CpuBackend::buffer(int id, int64_t rows) {
  const int64_t cols = specs_[id].cols;
  return {buffers_[id].data(), rows, cols, cols};
}

Act CpuBackend::logits(int64_t first, int64_t n) {
  float* base = step_.logits ? step_.logits : logits_scratch_.data();
  return {base + first * n_vocab_, n, n_vocab_, n_vocab_};
}

float* CpuBackend::dense(const Act& a, std::vector<float>& scratch) const {
  if (a.contiguous()) return a.data;
  scratch.resize(a.rows * a.cols);
  copy_rows(a.data, a.stride, scratch.data(), a.cols, a.rows, a.cols);
  return scratch.data();
}

Status CpuBackend::embedding(const PreparedMatrix& table, float scale, const Act& out) {
  const auto& m = static_cast<const Matrix&>(table);
  SAKER_RETURN_IF_ERROR(ref::embedding(m.parts[0], step_.tokens, f32(out.data, {out.rows, out.cols})));
  if (scale != 1.0f) {
    for (int64_t i = 0; i < out.rows * out.cols; ++i) out.data[i] *= scale;
  }
  return {};
}

Status CpuBackend::load_input(const Act& out) {
  SAKER_RETURN_IF_ERROR(check_load_input(out, step_.input_rows, step_tokens(), kept_cols_, n_kept_rows()));
  for (int64_t t = 0; t < out.rows; ++t) {
    std::copy_n(kept_.data() + step_.input_rows[t] * kept_cols_, out.cols, out.data + t * out.stride);
  }
  return {};
}

Result<int64_t> CpuBackend::keep_rows(const FloatRows& src, int64_t cols) {
  if (src.on_device) return make_error(StatusCode::kInvalidArgument, "keep_rows: the CPU backend reads no GPU memory");
  const int64_t first = n_kept_rows();
  SAKER_RETURN_IF_ERROR(check_keep_rows(src, cols, first, &kept_cols_));
  kept_.resize(static_cast<size_t>((first + src.n) * cols));
  for (int64_t i = 0; i < src.n; ++i) std::copy_n(src.row_data(i), cols, kept_.data() + (first + i) * cols);
  return first;
}

Status CpuBackend::rms_norm(const Act& x, const PreparedVector& w, float eps, const Act& out) {
  const auto& v = static_cast<const Vector&>(w);
  return ref::rms_norm(f32(x.data, {x.rows, x.cols}), v.view, f32(out.data, {out.rows, out.cols}), eps);
}

Status CpuBackend::matmul_part(const TensorView& x, const TensorView& w, const TensorView& out) const {
  if (!options_.fast_matmul) return ref::matmul(x, w, out);
  const int64_t T = x.dim(0);
  if (runs_.empty()) return cpu::matmul(x, w, out, options_.matmul);
  if (T != runs_.back().end || x.n_dims != 2) {
    // The output head's gathered rows: BLAS only when every row of one long run is an output (teacher-forced
    // prompt logits, which take the branch below); gathered rows take the row-independent paths, so a
    // sequence's outputs round the same alone or beside others.
    cpu::MatmulOptions o = options_.matmul;
    o.blas = false;
    return cpu::matmul(x, w, out, o);
  }
  if (runs_.size() == 1 && runs_[0].blas) return cpu::matmul(x, w, out, options_.matmul);  // one long run
  for (const RowRun& r : runs_) {
    cpu::MatmulOptions o = options_.matmul;
    o.blas = o.blas && r.blas;
    const TensorView xs = f32(static_cast<float*>(x.row(r.begin)), {r.end - r.begin, x.dim(1)});
    const TensorView os = f32(static_cast<float*>(out.row(r.begin)), {r.end - r.begin, out.dim(1)});
    SAKER_RETURN_IF_ERROR(cpu::matmul(xs, w, os, o));
  }
  return {};
}

Status CpuBackend::matmul(const PreparedMatrix& w, const Act& x, const Act& out, bool accumulate) {
  const auto& m = static_cast<const Matrix&>(w);
  if (!x.contiguous()) return make_error(StatusCode::kInvalidArgument, "cpu matmul: x rows must be contiguous");
  const TensorView xv = f32(x.data, {x.rows, x.cols});
  if (!accumulate && m.parts.size() == 1 && out.contiguous()) {
    return matmul_part(xv, m.parts[0], f32(out.data, {out.rows, out.cols}));
  }
  // Composed: each part into scratch, then copied into its columns (or added: the residual, out = out + x W).
  int64_t col = 0;
  for (const TensorView& part : m.parts) {
    const int64_t n = part.dim(0);
    tmp_.resize(x.rows * n);  // [rows, n]
    SAKER_RETURN_IF_ERROR(matmul_part(xv, part, f32(tmp_.data(), {x.rows, n})));
    if (accumulate && out.contiguous() && m.parts.size() == 1) {
      ref::add_f32(out.data, tmp_.data(), out.data, out.rows * out.cols);
    } else {
      for (int64_t r = 0; r < x.rows; ++r) {
        float* o = out.data + r * out.stride + col;
        if (accumulate) {
          ref::add_f32(o, tmp_.data() + r * n, o, n);
        } else {
          std::copy_n(tmp_.data() + r * n, n, o);
        }
      }
    }
    col += n;
  }
  return {};
}

Status CpuBackend::qk_norm_rope_kv_write(const Act& qkv, const PreparedVector* qkv_bias, const AttentionSpec& a,
                                         const PreparedVector* q_norm, const PreparedVector* k_norm, float eps,
                                         const RopeSpec& spec, int layer) {
  if (qkv_bias)
    ref::add_row_bias(qkv.data, static_cast<const Vector*>(qkv_bias)->f32.data(), qkv.rows, qkv.cols, qkv.stride);
  return norm_rope_kv_write(qkv, a, q_norm, k_norm, eps, spec, layer);
}

Status CpuBackend::add(const Act& a, const Act& b, const Act& out) {
  ref::add_f32(a.data, b.data, out.data, out.rows * out.cols);
  return {};
}

Status CpuBackend::norm_rope_kv_write(const Act& qkv, const AttentionSpec& a, const PreparedVector* q_norm,
                                      const PreparedVector* k_norm, float eps, const RopeSpec& spec, int layer) {
  const int64_t T = qkv.rows, hd = a.head_dim;
  const int64_t qd = a.n_head * hd, kd = a.n_head_kv * hd;
  q_.resize(T * qd);
  k_.resize(T * kd);
  v_.resize(T * kd);
  copy_rows(qkv.data, qkv.stride, q_.data(), qd, T, qd);
  copy_rows(qkv.data + qd, qkv.stride, k_.data(), kd, T, kd);
  copy_rows(qkv.data + qd + kd, qkv.stride, v_.data(), kd, T, kd);
  const bool has_q = qd > 0;  // n_head 0: k|v rows only
  if (q_norm || k_norm) {
    // Per-head RMSNorm over head_dim: the same op on [T * n_head, head_dim].
    const TensorView qh = f32(q_.data(), {T * a.n_head, hd});
    const TensorView kh = f32(k_.data(), {T * a.n_head_kv, hd});
    if (has_q && q_norm) SAKER_RETURN_IF_ERROR(ref::rms_norm(qh, static_cast<const Vector*>(q_norm)->view, qh, eps));
    if (k_norm) SAKER_RETURN_IF_ERROR(ref::rms_norm(kh, static_cast<const Vector*>(k_norm)->view, kh, eps));
  }
  ref::RopeParams rope;
  rope.style = spec.style;
  rope.n_rot = spec.n_rot;
  rope.theta_base = spec.theta_base;
  rope.freq_scale = spec.freq_scale;
  rope.freq_factors = spec.freq_factors ? static_cast<const Vector*>(spec.freq_factors)->f32.data() : nullptr;
  const TensorView q3 = f32(q_.data(), {T, a.n_head, hd});
  const TensorView k3 = f32(k_.data(), {T, a.n_head_kv, hd});
  const TensorView v3 = f32(v_.data(), {T, a.n_head_kv, hd});
  if (has_q) SAKER_RETURN_IF_ERROR(ref::rope(q3, step_.attn->token_pos, rope));
  SAKER_RETURN_IF_ERROR(ref::rope(k3, step_.attn->token_pos, rope));
  if (has_q) saker::trace(q3, "q_rope", layer);
  saker::trace(k3, "k_rope", layer);
  SAKER_RETURN_IF_ERROR(ref::kv_write(k3, v3, step_.kv[layer].k, step_.kv[layer].v, *step_.attn));
  // q and k back into the fused row, as the one-launch CUDA op leaves them.
  copy_rows(q_.data(), qd, qkv.data, qkv.stride, T, qd);
  copy_rows(k_.data(), kd, qkv.data + qd, qkv.stride, T, kd);
  return {};
}

Status CpuBackend::attention(const Act& q, int layer, const AttentionSpec& a, const Act& out) {
  const int64_t T = q.rows, hd = a.head_dim;
  float* qd = dense(q, q_);
  ref::AttentionParams p;
  p.scale = a.scale;
  p.soft_cap = a.soft_cap;
  p.sliding_window = a.sliding_window;
  const TensorView q3 = f32(qd, {T, a.n_head, hd});
  const TensorView o3 = f32(out.data, {T, a.n_head, hd});
  const LayerKv& kv = step_.kv[layer];
  return options_.fast_attention ? cpu::attention(q3, kv.k, kv.v, *step_.attn, p, o3)
                                 : ref::attention(q3, kv.k, kv.v, *step_.attn, p, o3);
}

Status CpuBackend::swiglu(const Act& gate, const Act& up, const Act& out) {
  const TensorView gv = f32(dense(gate, g_), {gate.rows, gate.cols});
  const TensorView uv = f32(dense(up, u_), {up.rows, up.cols});
  return ref::swiglu(gv, uv, f32(out.data, {out.rows, out.cols}));
}

Status CpuBackend::geglu_tanh(const Act& gate, const Act& up, const Act& out) {
  const TensorView gv = f32(dense(gate, g_), {gate.rows, gate.cols});
  const TensorView uv = f32(dense(up, u_), {up.rows, up.cols});
  return ref::geglu_tanh(gv, uv, f32(out.data, {out.rows, out.cols}));
}

Status CpuBackend::gather_outputs(const Act& x, int64_t first, const Act& out) {
  for (int64_t i = 0; i < out.rows; ++i) {
    std::copy_n(x.data + step_.output_rows[first + i] * x.stride, out.cols, out.data + i * out.stride);
  }
  return {};
}

Status CpuBackend::soft_cap(const Act& x, float cap) {
  for (int64_t i = 0; i < x.rows * x.cols; ++i) x.data[i] = cap * std::tanh(x.data[i] / cap);
  return {};
}

Status CpuBackend::all_reduce(const Act& x) {
  if (!options_.communicator || options_.communicator->size() == 1) return {};
  if (!x.contiguous()) return make_error(StatusCode::kInvalidArgument, "cpu all_reduce: x rows must be contiguous");
  return options_.communicator->all_reduce_sum(x.data, x.rows * x.cols);
}

Status CpuBackend::emit_outputs(const Act& logits, int64_t first) {
  if (step_.top_k > 0) {
    const int64_t k = step_.top_k;
    for (int64_t i = 0; i < logits.rows; ++i) {
      const std::span<const float> row(logits.data + i * logits.stride, static_cast<size_t>(logits.cols));
      const float log_z = log_sum_exp(row);
      const std::vector<int32_t> ids = top_ids(row, k);
      for (int64_t j = 0; j < k; ++j) {
        step_.top_ids[(first + i) * k + j] = ids[j];
        step_.top_logprobs[(first + i) * k + j] = row[ids[j]] - log_z;
      }
    }
  }
  if (!step_.argmax) return {};
  const std::span<int32_t> ids(step_.argmax + first, static_cast<size_t>(logits.rows));
  SAKER_RETURN_IF_ERROR(ref::argmax(f32(logits.data, {logits.rows, logits.cols}), ids));  // ties: the lowest id
  for (int64_t i = 0; i < logits.rows; ++i) {
    if (ids[i] < 0) return make_error(StatusCode::kInternal, "forward: the logits of output {} are all NaN", first + i);
  }
  return {};
}

Status CpuBackend::tap_rows(const Act& x, int64_t col) {
  if (step_.taps_out == nullptr || col < 0 || col + x.cols > step_.taps_stride || x.rows != step_tokens()) {
    return make_error(StatusCode::kInvalidArgument,
                      "forward: a hidden-state copy of {} x {} to column {} of taps rows of {}", x.rows, x.cols, col,
                      step_.taps_stride);
  }
  copy_rows(x.data, x.stride, step_.taps_out + col, step_.taps_stride, x.rows, x.cols);
  return {};
}

void CpuBackend::trace(const Act& x, const char* name, int layer, int64_t heads) {
  if (!options_.trace || !trace_enabled()) return;
  if (heads > 0) {
    saker::trace(f32(dense(x, tmp_), {x.rows, heads, x.cols / heads}), name, layer);
  } else {
    saker::trace(f32(dense(x, tmp_), {x.rows, x.cols}), name, layer);
  }
}

}  // namespace saker
