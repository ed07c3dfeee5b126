// CudaBackend's op surface: each OpBackend op of a step as launches on the backend's stream, into the step's
// buffers (cuda_backend.cpp holds the rest: weights, KV binding, steps, graphs and outputs).
#include <algorithm>
#include <cstdint>

#include "core/env.h"
#include "models/cuda/cuda_backend.h"
#include "ops/cuda/add.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/gather_rows.h"
#include "ops/cuda/norm_rope.h"
#include "ops/cuda/qk_norm_rope_kv_write.h"
#include "ops/cuda/soft_cap.h"
#include "ops/cuda/top_k.h"

namespace saker {

Status CudaBackend::embedding(const PreparedMatrix& table, float scale, const Act& out) {
  const auto& m = static_cast<const Matrix&>(table);
  embedding_rows_ = std::max(embedding_rows_, m.n_out);
  for (int64_t i = 0; i < out.rows; ++i) {  // the step's host tokens, packed before the program runs
    if (in_host_[i] < 0 || in_host_[i] >= m.n_out) {
      return make_error(StatusCode::kInvalidArgument, "forward: token {} outside the vocabulary (0..{})", in_host_[i],
                        m.n_out - 1);
    }
  }
  return cuda::embedding(m.parts[0], cur_.tokens, out.rows, scale, out.data, stream_);
}

// SAKER_CUDA_SKIP (core/env.h): whether this op class is left out of every step, to time a step without it.
static bool skipped(CudaSkip op) { return (debug_env().cuda_skip & op) != 0; }

Status CudaBackend::rms_norm(const Act& x, const PreparedVector& w, float eps, const Act& out) {
  if (skipped(kSkipNorm)) return {};
  return cuda::rms_norm(x.data, static_cast<const Vector&>(w).data, out.data, x.rows, x.cols, eps, false, stream_);
}

Status CudaBackend::matmul(const PreparedMatrix& w, const Act& x, const Act& out, bool accumulate) {
  if (skipped(kSkipMatmul)) return {};
  const auto& m = static_cast<const Matrix&>(w);
  for (size_t i = 0; i < m.parts.size(); ++i) {  // accumulate: the residual add in the epilogue
    SAKER_RETURN_IF_ERROR(
        cuda::matmul(*matmul_, m.parts[i], x.data, x.rows, out.data + m.column[i], out.stride, accumulate, stream_));
  }
  return {};
}

// When every part of w takes the width-invariant K-quant path for in's rows, the op that produces `in` (the
// norm of norm_matmul, the gated unit of gated_matmul, the attention of attention_matmul) also writes its int8
// blocks and the parts' matmuls skip their quantisation launches (same bits). Measured on the H200 (8B Q4_K_M
// tg128): 312.2 -> 316.9 tok/s with the norm's quantisation fused. The gated unit's and the attention's
// together, on an H100 (one row after 512 tokens): qwen2 1.5B geometry 1.671 -> 1.629 ms a step, 8B 3.450 ->
// 3.393 ms (about 0.75 us a launch removed; an earlier SwiGLU-only fusion had measured no gain on the H200).
bool CudaBackend::input_fusable(const PreparedMatrix& w, const Act& in) {
  const auto& m = static_cast<const Matrix&>(w);
  bool fused = !m.parts.empty() && in.stride == in.cols;
  for (const cuda::DeviceMatrix& part : m.parts) {
    fused = fused && part.n_in == in.cols && cuda::matmul_quantizes_input(*matmul_, part, in.data, in.rows);
  }
  return fused;
}

Status CudaBackend::matmul_quantized(const PreparedMatrix& w, const Act& in, const Act& out, bool accumulate) {
  if (skipped(kSkipMatmul)) return {};
  const auto& m = static_cast<const Matrix&>(w);
  for (size_t i = 0; i < m.parts.size(); ++i) {
    SAKER_RETURN_IF_ERROR(cuda::matmul(*matmul_, m.parts[i], in.data, in.rows, out.data + m.column[i], out.stride,
                                       accumulate, stream_, /*x_quantized=*/true));
  }
  return {};
}

Status CudaBackend::norm_matmul(const Act& x, const PreparedVector& norm, float eps, const Act& normed,
                                const PreparedMatrix& w, const Act& out, bool accumulate) {
  if (!input_fusable(w, normed)) return OpBackend::norm_matmul(x, norm, eps, normed, w, out, accumulate);
  if (!skipped(kSkipNorm)) {
    SAKER_RETURN_IF_ERROR(cuda::rms_norm_quantized(*matmul_, x.data, static_cast<const Vector&>(norm).data,
                                                   normed.data, x.rows, x.cols, eps, stream_));
  }
  return matmul_quantized(w, normed, out, accumulate);
}

int64_t CudaBackend::invariant_rows() const { return matmul_ ? matmul_->max_kernel_rows() : 0; }

Status CudaBackend::add(const Act& a, const Act& b, const Act& out) {
  if (skipped(kSkipAdd)) return {};
  return cuda::add_f32(a.data, b.data, out.data, out.rows * out.cols, stream_);
}

Status CudaBackend::qk_norm_rope_kv_write(const Act& qkv, const PreparedVector* qkv_bias, const AttentionSpec& a,
                                          const PreparedVector* q_norm, const PreparedVector* k_norm, float eps,
                                          const RopeSpec& spec, int layer) {
  if (skipped(kSkipQkNorm)) return {};
  const int32_t* positions = cur_.batch.data + cur_.batch.layout.token_pos;
  cuda::RopeConfig rope;
  rope.neox = spec.style == ref::RopeStyle::kNeox;
  rope.n_rot = static_cast<int32_t>(spec.n_rot);
  rope.theta_base = static_cast<float>(spec.theta_base);
  rope.freq_scale = static_cast<float>(spec.freq_scale);
  rope.freq_factors = spec.freq_factors ? static_cast<const Vector*>(spec.freq_factors)->data : nullptr;
  const float* qn = q_norm ? static_cast<const Vector*>(q_norm)->data : nullptr;
  const float* kn = k_norm ? static_cast<const Vector*>(k_norm)->data : nullptr;
  const float* bias = qkv_bias ? static_cast<const Vector*>(qkv_bias)->data : nullptr;
  const auto n_head = static_cast<int32_t>(a.n_head), n_head_kv = static_cast<int32_t>(a.n_head_kv);
  const auto head_dim = static_cast<int32_t>(a.head_dim);
  if (!debug_env().cuda_unfused) {  // one launch: bias, per-head norms, RoPE, K/V into the cache
    return cuda::qk_norm_rope_kv_write(qkv.data, qkv.stride, n_head, n_head_kv, head_dim, bias, qn, kn, eps, false,
                                       positions, rope, kv_.k[layer], kv_.v[layer], cur_.batch, stream_);
  }
  if (bias) SAKER_RETURN_IF_ERROR(cuda::add_row_bias(qkv.data, bias, qkv.rows, qkv.cols, qkv.stride, stream_));
  float* q = qkv.data;                         // [T, n_head, head_dim] inside rows of qkv.stride
  float* k = qkv.data + a.n_head * a.head_dim;  // [T, n_head_kv, head_dim]
  const float* v = k + a.n_head_kv * a.head_dim;
  SAKER_RETURN_IF_ERROR(
      cuda::head_norm_rope(q, qkv.rows, qkv.stride, n_head, head_dim, qn, eps, false, positions, rope, stream_));
  SAKER_RETURN_IF_ERROR(
      cuda::head_norm_rope(k, qkv.rows, qkv.stride, n_head_kv, head_dim, kn, eps, false, positions, rope, stream_));
  return cuda::kv_write(k, v, qkv.stride, kv_.k[layer], kv_.v[layer], cur_.batch, n_head_kv, head_dim, stream_);
}

Status CudaBackend::attention(const Act& q, int layer, const AttentionSpec& a, const Act& out) {
  return run_attention(q, layer, a, out, nullptr);
}

Status CudaBackend::run_attention(const Act& q, int layer, const AttentionSpec& a, const Act& out,
                                  cuda::MatmulContext* quant) {
  if (skipped(kSkipAttention)) return {};
  cuda::AttentionLaunch launch = cur_.launch;
  launch.scale = a.scale;
  launch.soft_cap = a.soft_cap;
  launch.sliding_window = a.sliding_window;
  return cuda::attention(q.data, q.stride, kv_.k[layer], kv_.v[layer], cur_.batch, launch, out.data, attn_ws_,
                         attn_ws_bytes_, stream_, quant);
}

Status CudaBackend::attention_matmul(const Act& q, int layer, const AttentionSpec& a, const Act& attn,
                                     const PreparedMatrix& w, const Act& out, bool accumulate) {
  if (!input_fusable(w, attn)) return OpBackend::attention_matmul(q, layer, a, attn, w, out, accumulate);
  SAKER_RETURN_IF_ERROR(run_attention(q, layer, a, attn, matmul_.get()));
  return matmul_quantized(w, attn, out, accumulate);
}

Status CudaBackend::swiglu(const Act& gate, const Act& up, const Act& out) {
  if (skipped(kSkipGated)) return {};
  return cuda::swiglu(gate.data, up.data, gate.stride, out.data, gate.rows, gate.cols, stream_);
}

Status CudaBackend::geglu_tanh(const Act& gate, const Act& up, const Act& out) {
  if (skipped(kSkipGated)) return {};
  return cuda::geglu_tanh(gate.data, up.data, gate.stride, out.data, gate.rows, gate.cols, stream_);
}

Status CudaBackend::gated_matmul(GatedAct kind, const Act& gate, const Act& up, const Act& act, const PreparedMatrix& w,
                                 const Act& out, bool accumulate) {
  if (!input_fusable(w, act) || gate.stride != up.stride) {
    return OpBackend::gated_matmul(kind, gate, up, act, w, out, accumulate);
  }
  const cuda::GatedKind k = kind == GatedAct::kSilu ? cuda::GatedKind::kSilu : cuda::GatedKind::kGeluTanh;
  if (!skipped(kSkipGated)) {
    SAKER_RETURN_IF_ERROR(
        cuda::gated_quantized(*matmul_, k, gate.data, up.data, gate.stride, act.data, gate.rows, gate.cols, stream_));
  }
  return matmul_quantized(w, act, out, accumulate);
}

Status CudaBackend::gather_outputs(const Act& x, int64_t first, const Act& out) {
  return cuda::gather_rows(x.data, cur_.rows + first, out.rows, out.cols, out.data, stream_);
}

Status CudaBackend::soft_cap(const Act& x, float cap) {
  return cuda::soft_cap(x.data, x.rows * x.cols, cap, stream_);
}

Status CudaBackend::emit_outputs(const Act& logits, int64_t) {
  const int64_t n = logits.rows;
  if (cur_.top_k > 0) {  // a drafter's tree: k ids and log-probabilities a row instead of n_vocab logits
    const int64_t k = cur_.top_k;
    SAKER_RETURN_IF_ERROR(cuda::top_k_rows(logits.data, n, logits.cols, cur_.top_k, top_ids_dev_, top_lp_dev_, stream_));
    SAKER_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(top_ids_host_, top_ids_dev_, n * k * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
    SAKER_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(top_lp_host_, top_lp_dev_, n * k * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  }
  if (cur_.want_argmax) {  // greedy: n ids cross the bus instead of [n, n_vocab] logits
    SAKER_RETURN_IF_ERROR(cuda::argmax_rows(logits.data, n, logits.cols, argmax_dev_, stream_));
    SAKER_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(argmax_host_, argmax_dev_, n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  }
  if (cur_.want_logits) {
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logits_host_, logits.data, n * logits.cols * sizeof(float),
                                               cudaMemcpyDeviceToHost, stream_));
  }
  return {};
}

// Into the staging buffer (or the device taps) at column col of the step's taps rows: a graph replayed for a
// later call then still writes the right place; run_chunk copies host rows out after the step.
Status CudaBackend::tap_rows(const Act& x, int64_t col) {
  if (cur_.taps == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "forward: a hidden-state copy in a step that asked for no taps");
  }
  if (x.rows != cur_.n_tokens || col < 0 || col + x.cols > cur_.taps_stride) {
    return make_error(StatusCode::kInvalidArgument,
                      "forward: a hidden-state copy of {} x {} to column {} of taps rows of {} in a step of {} tokens",
                      x.rows, x.cols, col, cur_.taps_stride, cur_.n_tokens);
  }
  SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(cur_.taps + col, cur_.taps_stride * sizeof(float), x.data,
                                               x.stride * sizeof(float), x.cols * sizeof(float), x.rows, cur_.taps_kind,
                                               stream_));
  return {};
}

}  // namespace saker
