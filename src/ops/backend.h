#pragma once
// OpBackend: the one op surface a model's forward is written against. A model binds its weights through it
// once (prepare_matrix / prepare_vector), declares its activation buffers (reserve), and writes its forward
// once as a StepProgram of op calls; cpu/CpuBackend runs the ops on host f32 buffers (ref/ and cpu/ kernels),
// models/cuda/CudaBackend enqueues the cuda/ kernels on its stream and may capture the program in a CUDA
// graph. A backend without a fused op composes it from simple ones so that its numbers stay its own.
//
// Activations are f32 rows in the backend's memory (host or device): an Act is a [rows, cols] window with a
// row stride, so a column range of a wider buffer (q inside a fused q|k|v row) is an Act too.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/logits.h"
#include "core/float_rows.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ops/attention_batch.h"
#include "ops/layer_kv.h"
#include "ops/ref/rope.h"

namespace saker {

struct Act {
  float* data = nullptr;  // [rows, stride] of which the first cols columns are this window
  int64_t rows = 0, cols = 0, stride = 0;
  Act columns(int64_t first, int64_t n) const { return {data + first, rows, n, stride}; }
  bool contiguous() const { return stride == cols; }
};

// A prepared weight matrix [n_out, n_in] (several host tensors stacked along n_out: q|k|v, gate|up) and a
// prepared f32 vector (norm weights, biases, RoPE frequency factors). Owned by the backend that made them.
class PreparedMatrix {
 public:
  virtual ~PreparedMatrix() = default;
  int64_t n_out = 0, n_in = 0;
};
class PreparedVector {
 public:
  virtual ~PreparedVector() = default;
  int64_t n = 0;
};

// Activation buffers a model declares once: cols floats per row, for every step token (rows = the step's
// tokens) or for every output row of one head pass.
struct ActivationSpec {
  int64_t cols = 0;
  bool per_output = false;
};

// The feed-forward block's gate activation: SwiGLU (silu) or GeGLU with the tanh GELU (Gemma).
enum class GatedAct { kSilu, kGeluTanh };

struct RopeSpec {
  ref::RopeStyle style = ref::RopeStyle::kNeox;
  int64_t n_rot = 0;  // 0: head_dim
  double theta_base = 10000.0;
  double freq_scale = 1.0;
  const PreparedVector* freq_factors = nullptr;  // [n_rot / 2] or null
};

struct AttentionSpec {
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 0.0f;          // 0: 1 / sqrt(head_dim)
  float soft_cap = 0.0f;       // > 0: attention logits capped
  int32_t sliding_window = 0;  // > 0: local layer
};

// What one forward asks of the backend (the model's ForwardBatch, less what only the model reads).
struct StepRequest {
  std::span<const int32_t> tokens;       // [n_tokens]
  const AttentionBatch* attn = nullptr;  // per-token sequence, slot, position; per-sequence block tables
  std::span<const int32_t> output_rows;  // [n_outputs]
  std::span<const LayerKv> kv;           // [n_layer] views of KV storage on the backend's device
  float* logits = nullptr;               // [n_outputs, n_vocab] host, or null
  int32_t* argmax = nullptr;             // [n_outputs] host, or null
  int64_t n_vocab = 0;
  // Hidden-state taps: the program's tap_rows calls fill every column of [n_tokens, taps_stride] rows: taps_out
  // on the host, or with taps_on_device the backend's own device rows (device_taps()), for a drafter on the same
  // GPU; taps_stride 0: none. tap_layers fixes which copies the program makes, so a backend that replays a
  // captured program keys it by them.
  float* taps_out = nullptr;
  bool taps_on_device = false;
  int64_t taps_stride = 0;
  std::span<const int32_t> tap_layers;
  // Rows a program reads instead of (or besides) token embeddings (load_input): step token t reads kept row
  // input_rows[t] (OpBackend::keep_rows; a drafter's context: the target's tapped hidden states); empty: none.
  std::span<const int32_t> input_rows;
  // Top-k outputs: each output row's top_k ids (highest first, the lowest id among equals; NaN never chosen)
  // and their log-probabilities (logit - log_sum_exp of the row, core/logits.h), [n_outputs, top_k] host each;
  // top_k 0: none. A drafter's tree needs only these, not [n_outputs, n_vocab] logits.
  int32_t top_k = 0;  // at most kMaxTopK (core/logits.h)
  int32_t* top_ids = nullptr;
  float* top_logprobs = nullptr;
  // A shape that will rarely recur (a drafter's context rows, whose count follows each step's acceptance): a
  // backend that captures repeated steps (CUDA graphs) runs this one as it comes instead of capturing it.
  bool one_off = false;
};


// A forward written once: body() runs embedding and layers over the backend's current step (step_tokens()
// rows); head(first, n) runs the output head for output rows [first, first + n) of the step. The backend
// calls them (once, per chunk of a long batch, or in a captured graph) and copies the outputs out.
struct StepProgram {
  std::function<Status()> body;
  std::function<Status(int64_t first, int64_t n)> head;
};

// The top-k outputs' check, the same on every backend: k within [0, kMaxTopK] and the vocabulary, somewhere to
// write them.
inline Status check_top_k(const StepRequest& r) {
  if (r.top_k == 0) return {};
  if (r.top_k < 0 || r.top_k > kMaxTopK || r.top_k > r.n_vocab || !r.top_ids || !r.top_logprobs) {
    return make_error(StatusCode::kInvalidArgument, "forward: top-{} outputs asked (1..{}, with both buffers)",
                      r.top_k, kMaxTopK);
  }
  return {};
}

// Whether every index of a step's input_rows names one of the n_kept kept rows.
inline bool input_rows_kept(std::span<const int32_t> input_rows, int64_t n_kept) {
  return std::all_of(input_rows.begin(), input_rows.end(), [&](int32_t r) { return r >= 0 && r < n_kept; });
}

// load_input's check, the same on every backend: the step reads kept rows (has_input) of at least out.cols
// floats (kept_cols), one for each of its n_tokens, each a kept row (n_kept of them).
inline Status check_load_input(const Act& out, std::span<const int32_t> input_rows, int64_t n_tokens, int64_t kept_cols,
                               int64_t n_kept) {
  if (!input_rows.empty() && kept_cols >= out.cols && out.rows == n_tokens &&
      static_cast<int64_t>(input_rows.size()) == n_tokens && input_rows_kept(input_rows, n_kept)) {
    return {};
  }
  return make_error(StatusCode::kInvalidArgument,
                    "load_input: {} rows of {} floats asked, the step reads {} of {} kept rows of {} floats", out.rows,
                    out.cols, input_rows.size(), n_kept, kept_cols);
}

// keep_rows' check, the same on every backend: src's rows are at least cols wide and there, and cols is the width
// of the rows kept already (*kept_cols, which the first rows after clear_kept_rows set: n_kept 0).
inline Status check_keep_rows(const FloatRows& src, int64_t cols, int64_t n_kept, int64_t* kept_cols) {
  if (n_kept == 0) *kept_cols = cols;
  if (cols > 0 && cols == *kept_cols && cols <= src.stride && src.n >= 0 && (src.n == 0 || src.data != nullptr)) {
    return {};
  }
  return make_error(StatusCode::kInvalidArgument, "keep_rows: {} rows of {} floats (stride {}) beside rows of {}",
                    src.n, cols, src.stride, *kept_cols);
}

class OpBackend {
 public:
  virtual ~OpBackend() = default;
  virtual Device device() const = 0;
  virtual DType kv_dtype() const = 0;
  // The first prepared weight whose matmul rounds a row differently at different batch widths (decode and
  // verify widths, 1-64 rows), as "name (dtype)"; empty when none does, so that a speculative verify row
  // gets the bits of plain decoding. The CPU backend's decode and verify paths are row-independent.
  virtual std::string width_dependent_weight() const { return {}; }
  // The most rows a step may feed while every row keeps the numbers it gets alone (the width-invariant kernels'
  // limit); 0: any number.
  virtual int64_t invariant_rows() const { return 0; }

  // Weights. `name` appears in errors (a dtype the backend cannot multiply).
  virtual Result<const PreparedMatrix*> prepare_matrix(std::span<const TensorView> parts, const std::string& name) = 0;
  virtual Result<const PreparedVector*> prepare_vector(std::span<const TensorView> parts) = 0;
  // After the weights: the activation buffers (ids = positions in `buffers`), the logits width and the
  // attention geometry (heads, head_dim) the backend's attention scratch is sized for.
  virtual Status reserve(std::span<const ActivationSpec> buffers, int64_t n_vocab, const AttentionSpec& attention) = 0;

  // One forward: checks the request, then runs the program (see StepProgram).
  virtual Status run_step(const StepRequest& request, const StepProgram& program) = 0;
  // The last step's taps when it asked for them on the device: [n_tokens, taps_stride] device rows, valid until
  // the next step; empty otherwise and on a backend without device memory.
  virtual FloatRows device_taps() const { return {}; }

  // Rows kept between steps for a later step's load_input (StepRequest::input_rows): a drafter's queued context,
  // which arrives a few rows a step and is read in one forward. keep_rows appends the first `cols` floats of
  // each of src's rows (cols the same for every call until clear_kept_rows) and returns the index of the first;
  // a device source must be GPU memory this backend can read. Its reads of src may still run after it returns:
  // settle() waits for them (before src's producer writes it again). clear_kept_rows forgets every kept row.
  virtual Result<int64_t> keep_rows(const FloatRows& src, int64_t cols) {
    (void)src;
    (void)cols;
    return Status(StatusCode::kUnsupported, "this backend keeps no input rows");
  }
  virtual void clear_kept_rows() {}
  virtual int64_t n_kept_rows() const { return 0; }
  virtual Status settle() { return {}; }

  // Inside a program.
  virtual int64_t step_tokens() const = 0;
  virtual Act buffer(int id, int64_t rows) = 0;
  // The head's logits rows for outputs [first, first + n).
  virtual Act logits(int64_t first, int64_t n) = 0;

  // Ops. Row counts come from the Acts; every op over the step's tokens reads the step's inputs.
  virtual Status embedding(const PreparedMatrix& table, float scale, const Act& out) = 0;  // out [T, n_embd]
  // out [T, cols] = the kept rows the request's input_rows name (their first cols floats). A backend without
  // it says so.
  virtual Status load_input(const Act& out) {
    (void)out;
    return Status(StatusCode::kUnsupported, "this backend does not read kept input rows in a step");
  }
  virtual Status rms_norm(const Act& x, const PreparedVector& w, float eps, const Act& out) = 0;
  // out (+)= x W^T: x [rows, n_in] contiguous, out [rows, n_out]; accumulate adds to out (the residual).
  virtual Status matmul(const PreparedMatrix& w, const Act& x, const Act& out, bool accumulate) = 0;
  // normed = rms_norm(x); out (+)= normed W^T. One op so a backend can fold the norm into the matmul's input
  // preparation (the CUDA backend quantises the activations for its K-quant kernels inside the norm);
  // `normed` is still written. Same result as the two ops; by default it is the two ops.
  virtual Status norm_matmul(const Act& x, const PreparedVector& norm, float eps, const Act& normed,
                             const PreparedMatrix& w, const Act& out, bool accumulate) {
    if (Status s = rms_norm(x, norm, eps, normed); !s.ok()) return s;
    return matmul(w, normed, out, accumulate);
  }
  virtual Status add(const Act& a, const Act& b, const Act& out) = 0;          // contiguous, same shape
  // qkv [T, (n_head + 2 n_head_kv) head_dim]: the projection's row bias added to every row (qkv_bias null: none;
  // qwen2), optional per-head RMSNorm of q and k (norms null: none), RoPE of q and k at the step's positions,
  // then k and v into layer `layer`'s KV pages at the step's slots. n_head 0: rows of k|v only (a drafter's
  // context rows, which never query). One op, so a backend does all of it in one pass over the rows.
  virtual Status qk_norm_rope_kv_write(const Act& qkv, const PreparedVector* qkv_bias, const AttentionSpec& a,
                                       const PreparedVector* q_norm, const PreparedVector* k_norm, float eps,
                                       const RopeSpec& rope, int layer) = 0;
  // q [T, n_head head_dim] (rows may be strided), out [T, n_head head_dim] contiguous.
  virtual Status attention(const Act& q, int layer, const AttentionSpec& a, const Act& out) = 0;
  // attn = attention(q, layer, a); out (+)= attn W^T (the output projection). One op so a backend can have the
  // attention write the matmul's prepared input (the CUDA backend: its K-quant kernels' int8 blocks); `attn` is
  // still written. Same result as the two ops; by default it is the two ops.
  virtual Status attention_matmul(const Act& q, int layer, const AttentionSpec& a, const Act& attn,
                                  const PreparedMatrix& w, const Act& out, bool accumulate) {
    if (Status s = attention(q, layer, a, attn); !s.ok()) return s;
    return matmul(w, attn, out, accumulate);
  }
  // out [T, n] = act(gate) * up; gate, up [T, n] with the same stride (halves of one gate|up row).
  virtual Status swiglu(const Act& gate, const Act& up, const Act& out) = 0;
  virtual Status geglu_tanh(const Act& gate, const Act& up, const Act& out) = 0;
  // act = swiglu or geglu_tanh(gate, up); out (+)= act W^T. One op so a backend can have the gated unit write
  // the matmul's prepared input (the CUDA backend: its K-quant kernels' int8 blocks); `act` is still written.
  // Same result as the two ops; by default it is the two ops.
  virtual Status gated_matmul(GatedAct kind, const Act& gate, const Act& up, const Act& act, const PreparedMatrix& w,
                              const Act& out, bool accumulate) {
    Status s = kind == GatedAct::kSilu ? swiglu(gate, up, act) : geglu_tanh(gate, up, act);
    if (!s.ok()) return s;
    return matmul(w, act, out, accumulate);
  }
  // out [n, cols] = x rows output_rows[first .. first + n).
  virtual Status gather_outputs(const Act& x, int64_t first, const Act& out) = 0;
  virtual Status soft_cap(const Act& x, float cap) = 0;
  // Tensor parallelism: x [rows, cols] contiguous (+)= the same window of every other rank, in place, with the
  // same bits on every rank (parallel/communicator.h). n_ranks() is how many ranks the backend reduces over; a
  // backend without a communicator is one rank and all_reduce does nothing.
  virtual int n_ranks() const { return 1; }
  virtual Status all_reduce(const Act&) { return {}; }
  // The head's last op: argmax ids or top-k outputs of logits(first, n) (when asked) and the copies out.
  virtual Status emit_outputs(const Act& logits, int64_t first) = 0;
  // Hidden-state taps: x [T, n] into columns [col, col + n) of the step's taps rows (StepRequest::taps_out, or
  // the device rows); they are there when run_step returns.
  virtual Status tap_rows(const Act& x, int64_t col) = 0;
  // The trace hook (core/trace.h) on a host backend; heads > 0 views x as [rows, heads, cols / heads].
  virtual void trace(const Act& x, const char* name, int layer = -1, int64_t heads = 0) = 0;
};

}  // namespace saker
