#include "models/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/env.h"
#include "core/log.h"
#include "formats/quant/codec.h"
#include "ops/cuda/chained_launch.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_devices.h"
#include "ops/cuda/gather_rows.h"

namespace saker {
namespace {

constexpr int64_t kGraphMaxTokens = 64;   // the verify widths speculative decoding needs
constexpr int64_t kMinCtxCapacity = 256;  // smallest context bucket a graph is captured for
constexpr size_t kMaxKvBindings = 32;     // distinct KV pointer sets that keep captured graphs

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(const OpsOptions& options, int device,
                                                         DeviceCommunicator* communicator) {
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  b->options_ = options;
  b->device_ = device;
  b->communicator_ = communicator;
  // A collective staged through the host waits for the stream: not in a graph.
  if (communicator && !communicator->capturable()) b->options_.cuda_graphs = false;
  const cuda::ScopedDevice on(device);
  if (!on.ok()) return make_error(StatusCode::kInvalidArgument, "CUDA device {} cannot be used", device);
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&b->stream_, cudaStreamNonBlocking));
  if (communicator) communicator->bind_stream(b->stream_);
  // Ask once, outside graph capture, whether kernels launch chained on this device.
  const bool chained = cuda::chained_launches_enabled();
  SAKER_LOG_DEBUG("cuda device {}: chained kernel launches {}", device, chained ? "on" : "off");
  const DebugEnv& env = debug_env();
  if (!env.cuda_skip_unknown.empty()) {
    return make_error(StatusCode::kInvalidArgument, "SAKER_CUDA_SKIP: unknown op class '{}' ({})",
                      env.cuda_skip_unknown, cuda_skip_classes());
  }
  if (env.cuda_skip != 0) {
    SAKER_LOG_WARN("SAKER_CUDA_SKIP is set: the CUDA backend leaves op classes out of every step; outputs are "
                   "meaningless (for timing only)");
  }
  return b;
}

Status CudaBackend::all_reduce(const Act& x) {
  if (!communicator_ || communicator_->size() == 1) return {};
  if (!x.contiguous()) return make_error(StatusCode::kInvalidArgument, "cuda all_reduce: x rows must be contiguous");
  return communicator_->all_reduce_sum(x.data, x.rows * x.cols);
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(device_);  // the members free their memory after this body, on the backend's device
  for (auto& [shape, exec] : graphs_) cudaGraphExecDestroy(exec);
  for (auto& m : matrices_) {
    for (cuda::DeviceMatrix& part : m->parts) cuda::free_matrix(&part);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

Result<const PreparedMatrix*> CudaBackend::prepare_matrix(std::span<const TensorView> parts, const std::string& name) {
  const cuda::ScopedDevice on(device_);
  for (const TensorView& t : parts) {
    if (!cuda::matmul_supports(t.dtype)) {
      return make_error(StatusCode::kUnsupported, "the CUDA backend cannot multiply {} ({})", name,
                        dtype_name(t.dtype));
    }
    if (width_dependent_.empty() && !cuda::matmul_width_invariant(t.dtype, t.dim(1), matmul_options())) {
      width_dependent_ = name + " (" + std::string(dtype_name(t.dtype)) + ")";
    }
  }
  auto m = std::make_unique<Matrix>();
  m->n_in = parts[0].dim(1);
  const bool same =
      std::all_of(parts.begin(), parts.end(), [&](const TensorView& t) { return t.dtype == parts[0].dtype; });
  if (same) {  // one launch reads them all
    SAKER_ASSIGN_OR_RETURN(cuda::DeviceMatrix d, cuda::upload_matrix(parts));
    weight_bytes_ += d.bytes;
    m->parts.push_back(d);
    m->column.push_back(0);
    m->n_out = d.n_out;
  } else {  // e.g. Q4_K_M's Q6_K attn_v beside Q4_K q and k: each part writes its columns
    for (const TensorView& t : parts) {
      SAKER_ASSIGN_OR_RETURN(cuda::DeviceMatrix d, cuda::upload_matrix(std::span<const TensorView>(&t, 1)));
      weight_bytes_ += d.bytes;
      m->parts.push_back(d);
      m->column.push_back(m->n_out);
      m->n_out += t.dim(0);
    }
  }
  max_n_in_ = std::max(max_n_in_, m->n_in);
  max_n_out_ = std::max(max_n_out_, m->n_out);
  matrices_.push_back(std::move(m));
  return static_cast<const PreparedMatrix*>(matrices_.back().get());
}

Result<const PreparedVector*> CudaBackend::prepare_vector(std::span<const TensorView> parts) {
  const cuda::ScopedDevice on(device_);
  auto v = std::make_unique<Vector>();
  for (const TensorView& t : parts) v->n += t.n_elements();
  std::vector<float> host(v->n);  // [n] every part side by side
  int64_t at = 0;
  for (const TensorView& t : parts) {
    SAKER_RETURN_IF_ERROR(dequantize_row(t.dtype, t.data, host.data() + at, t.n_elements()));
    at += t.n_elements();
  }
  SAKER_ASSIGN_OR_RETURN(v->data, mem_.alloc_array<float>(v->n, "norm weights"));
  // On the backend's stream and waited for: a pageable copy on the default stream may land after the
  // non-blocking stream's first kernels read it.
  SAKER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(v->data, host.data(), v->n * sizeof(float), cudaMemcpyHostToDevice, stream_));
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  vectors_.push_back(std::move(v));
  return static_cast<const PreparedVector*>(vectors_.back().get());
}

Status CudaBackend::reserve(std::span<const ActivationSpec> buffers, int64_t n_vocab, const AttentionSpec& attention) {
  const cuda::ScopedDevice on(device_);
  geometry_ = attention;
  n_vocab_ = n_vocab;
  max_tokens_ = std::max<int64_t>(kGraphMaxTokens, options_.max_batch_tokens);
  // Logits rows per head pass: every decode/verify step in one pass, prefill outputs in slices of ~256 MB.
  head_rows_ = std::clamp<int64_t>((int64_t{256} << 20) / (n_vocab * 4), kGraphMaxTokens, max_tokens_);
  for (const ActivationSpec& s : buffers) {
    SAKER_ASSIGN_OR_RETURN(float* p,
                           mem_.alloc_array<float>((s.per_output ? head_rows_ : max_tokens_) * s.cols, "activations"));
    buffers_.push_back(p);
    buffer_cols_.push_back(s.cols);
  }
  SAKER_ASSIGN_OR_RETURN(logits_dev_, mem_.alloc_array<float>(head_rows_ * n_vocab, "logits"));
  SAKER_ASSIGN_OR_RETURN(void* lh, mem_.alloc_host(head_rows_ * n_vocab * sizeof(float), "logits"));
  logits_host_ = static_cast<float*>(lh);
  SAKER_ASSIGN_OR_RETURN(argmax_dev_, mem_.alloc_array<int32_t>(head_rows_, "argmax ids"));
  SAKER_ASSIGN_OR_RETURN(void* ah, mem_.alloc_host(head_rows_ * sizeof(int32_t), "argmax ids"));
  argmax_host_ = static_cast<int32_t*>(ah);
  SAKER_ASSIGN_OR_RETURN(top_ids_dev_, mem_.alloc_array<int32_t>(head_rows_ * kMaxTopK, "top-k ids"));
  SAKER_ASSIGN_OR_RETURN(top_lp_dev_, mem_.alloc_array<float>(head_rows_ * kMaxTopK, "top-k log-probabilities"));
  SAKER_ASSIGN_OR_RETURN(void* ti, mem_.alloc_host(head_rows_ * kMaxTopK * sizeof(int32_t), "top-k ids"));
  top_ids_host_ = static_cast<int32_t*>(ti);
  SAKER_ASSIGN_OR_RETURN(void* tl, mem_.alloc_host(head_rows_ * kMaxTopK * sizeof(float), "top-k log-probabilities"));
  top_lp_host_ = static_cast<float*>(tl);
  SAKER_ASSIGN_OR_RETURN(matmul_, cuda::MatmulContext::create(max_tokens_, max_n_in_, max_n_out_, matmul_options()));
  SAKER_LOG_INFO("CUDA decoder: {:.2f} GiB of weights and buffers on the GPU, batches of up to {} tokens, "
                 "{} logits rows per head pass",
                 static_cast<double>(mem_.device_bytes() + weight_bytes_) / (1 << 30), max_tokens_, head_rows_);
  return {};
}

Result<CudaBackend::DeviceKv> CudaBackend::bind_kv(std::span<const LayerKv> kv) const {
  DeviceKv d;
  const TensorView& k0 = kv[0].k;
  if (k0.n_dims == 4) {
    d.n_blocks = k0.dim(0);
    d.block_size = k0.dim(1);
  }
  d.pointers.resize(2 * kv.size());
  for (size_t l = 0; l < kv.size(); ++l) {
    for (int which = 0; which < 2; ++which) {
      const TensorView& t = which == 0 ? kv[l].k : kv[l].v;
      if (t.device != Device::kCuda || t.data == nullptr) {
        return make_error(StatusCode::kInvalidArgument,
                          "forward: the KV views of layer {} are not GPU memory (device {}): the CUDA decoder reads "
                          "KV storage from its allocate_kv",
                          l, device_name(t.device));
      }
      if (t.dtype != DType::kF16) {
        return make_error(StatusCode::kInvalidArgument, "forward: KV of layer {} is {}; the CUDA decoder reads f16", l,
                          dtype_name(t.dtype));
      }
      if (t.n_dims != 4 || t.dim(0) != d.n_blocks || t.dim(1) != d.block_size || t.dim(2) != geometry_.n_head_kv ||
          t.dim(3) != geometry_.head_dim || d.n_blocks <= 0 || d.block_size <= 0 || !t.is_contiguous()) {
        return make_error(StatusCode::kInvalidArgument,
                          "forward: KV cache {} of layer {} does not fit {} kv heads of {} (contiguous, the same "
                          "blocks in every layer)",
                          t.shape_string(), l, geometry_.n_head_kv, geometry_.head_dim);
      }
      (which == 0 ? d.k : d.v).push_back(static_cast<__half*>(t.data));
      d.pointers[which * kv.size() + l] = t.data;
    }
  }
  return d;
}

Status CudaBackend::drop_graphs() {
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  for (auto& [shape, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
  return {};
}

Status CudaBackend::touch_kv_binding(const std::vector<const void*>& kv) {
  kv_bindings_[kv] = ++n_steps_;
  if (kv_bindings_.size() <= kMaxKvBindings) return {};
  auto oldest = std::min_element(kv_bindings_.begin(), kv_bindings_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  for (auto it = graphs_.begin(); it != graphs_.end();) {
    if (it->first.kv == oldest->first) {
      cudaGraphExecDestroy(it->second);
      it = graphs_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(seen_shapes_, [&](const StepShape& s) { return s.kv == oldest->first; });
  kv_bindings_.erase(oldest);
  return {};
}

cuda::AttentionLaunch CudaBackend::attention_launch(int64_t ctx_capacity) const {
  cuda::AttentionLaunch launch;
  launch.n_head = static_cast<int32_t>(geometry_.n_head);
  launch.n_head_kv = static_cast<int32_t>(geometry_.n_head_kv);
  launch.head_dim = static_cast<int32_t>(geometry_.head_dim);
  launch.max_ctx = static_cast<int32_t>(ctx_capacity);
  return launch;
}

Status CudaBackend::ensure_attention_workspace(size_t bytes) {
  if (bytes <= attn_ws_bytes_) return {};
  // Graphs captured so far point at the old workspace: drop them before it goes.
  SAKER_RETURN_IF_ERROR(drop_graphs());
  const size_t grown = std::max(bytes, attn_ws_bytes_ * 2);
  if (attn_ws_) mem_.release(attn_ws_);
  attn_ws_ = nullptr;
  attn_ws_bytes_ = 0;
  SAKER_ASSIGN_OR_RETURN(attn_ws_, mem_.alloc(grown, "the attention workspace"));
  attn_ws_bytes_ = grown;
  return {};
}

Status CudaBackend::ensure_input_capacity(int64_t n) {
  if (n <= in_capacity_) return {};
  // Graphs copy from and to the old buffers: drop them, then the buffers.
  SAKER_RETURN_IF_ERROR(drop_graphs());
  mem_.release(in_host_);
  mem_.release(in_dev_);
  const int64_t cap = std::max<int64_t>(n, 2 * in_capacity_);
  SAKER_ASSIGN_OR_RETURN(void* hp, mem_.alloc_host(cap * sizeof(int32_t), "step inputs"));
  SAKER_ASSIGN_OR_RETURN(in_dev_, mem_.alloc_array<int32_t>(cap, "step inputs"));
  in_host_ = static_cast<int32_t*>(hp);
  in_capacity_ = cap;
  return {};
}

Status CudaBackend::ensure_taps_capacity(int64_t n, bool on_device) {
  float*& buf = on_device ? taps_dev_ : taps_host_;
  int64_t& capacity = on_device ? taps_dev_capacity_ : taps_capacity_;
  if (n <= capacity) return {};
  SAKER_RETURN_IF_ERROR(drop_graphs());  // their tap copies write to the old buffer
  const int64_t cap = std::max<int64_t>(n, 2 * capacity);
  mem_.release(buf);
  buf = nullptr;
  capacity = 0;
  const size_t bytes = static_cast<size_t>(cap) * sizeof(float);
  SAKER_ASSIGN_OR_RETURN(void* p, on_device ? mem_.alloc(bytes, "hidden-state taps on the device")
                                            : mem_.alloc_host(bytes, "hidden-state taps"));
  buf = static_cast<float*>(p);
  capacity = cap;
  return {};
}

Status CudaBackend::take_outputs(const Chunk& c, int64_t first, int64_t n) const {
  if (c.logits && n > 0) std::memcpy(c.logits + first * n_vocab_, logits_host_, n * n_vocab_ * sizeof(float));
  if (c.argmax) {
    for (int64_t i = 0; i < n; ++i) {
      if (argmax_host_[i] < 0) {
        return make_error(StatusCode::kInternal, "forward: the logits of output {} are all NaN", first + i);
      }
      c.argmax[first + i] = argmax_host_[i];
    }
  }
  if (c.top_k > 0 && n > 0) {
    std::memcpy(c.top_ids + first * c.top_k, top_ids_host_, n * c.top_k * sizeof(int32_t));
    std::memcpy(c.top_logprobs + first * c.top_k, top_lp_host_, n * c.top_k * sizeof(float));
  }
  return {};
}

Status CudaBackend::enqueue_step(const StepShape& s, const cuda::PackedAttentionLayout& layout,
                                 const StepProgram& program) {
  const int64_t n_in = s.n_tokens + s.n_out + layout.total + (s.input_rows ? s.n_tokens : 0);
  SAKER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(in_dev_, in_host_, n_in * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  cur_.n_tokens = s.n_tokens;
  cur_.want_logits = s.want_logits;
  cur_.want_argmax = s.want_argmax;
  cur_.top_k = s.top_k;
  cur_.tokens = in_dev_;
  cur_.rows = in_dev_ + s.n_tokens;
  cur_.input_rows = s.input_rows ? in_dev_ + s.n_tokens + s.n_out + layout.total : nullptr;
  cur_.batch.layout = layout;
  cur_.batch.data = in_dev_ + s.n_tokens + s.n_out;
  cur_.batch.block_size = static_cast<int32_t>(kv_.block_size);
  cur_.launch = attention_launch(s.ctx_capacity);
  SAKER_RETURN_IF_ERROR(program.body());
  if (s.n_out > 0 && s.n_out <= head_rows_) SAKER_RETURN_IF_ERROR(program.head(0, s.n_out));
  return {};
}

Status CudaBackend::run_chunk(const Chunk& c, const StepProgram& program) {
  const AttentionBatch& attn = *c.attn;
  const int64_t T = attn.n_tokens();
  const int64_t n_out = static_cast<int64_t>(c.output_rows.size());

  // Context capacity: a power of two covering every sequence, so a graph serves many steps; block tables
  // are padded (with block 0, never read) or cut to exactly that many blocks, which fixes the packed layout.
  int32_t max_ctx = 0;
  for (const AttentionSequence& q : attn.sequences) max_ctx = std::max(max_ctx, q.n_ctx);
  const int64_t cache_tokens = kv_.n_blocks * kv_.block_size;
  const int64_t ctx_cap = std::min(cache_tokens, std::max(kMinCtxCapacity, next_pow2(max_ctx)));
  const int64_t table_len = (ctx_cap + kv_.block_size - 1) / kv_.block_size;
  std::vector<std::vector<int32_t>> tables(attn.sequences.size());
  std::vector<AttentionSequence> seqs(attn.sequences.begin(), attn.sequences.end());
  for (size_t i = 0; i < seqs.size(); ++i) {
    tables[i].assign(table_len, 0);
    const auto& src = attn.sequences[i].block_table;
    std::copy_n(src.begin(), std::min<int64_t>(table_len, static_cast<int64_t>(src.size())), tables[i].begin());
    seqs[i].block_table = tables[i];
  }
  AttentionBatch padded = attn;
  padded.sequences = seqs;
  std::vector<int32_t> packed;
  const cuda::PackedAttentionLayout layout = cuda::pack_attention_batch(padded, &packed);

  StepShape s;
  s.n_tokens = T;
  s.n_out = n_out;
  s.n_seqs = static_cast<int64_t>(seqs.size());
  s.packed_total = layout.total;
  s.ctx_capacity = ctx_cap;
  s.block_size = kv_.block_size;
  s.want_logits = c.logits != nullptr;
  s.want_argmax = c.argmax != nullptr;
  s.top_k = c.top_k;
  s.kv = kv_.pointers;
  if (c.taps || c.taps_on_device) {
    s.taps_stride = c.taps_stride;
    s.taps_on_device = c.taps_on_device;
    s.taps_row0 = c.taps_on_device ? c.row0 : 0;  // baked into a captured graph's copies
    s.tap_layers.assign(c.tap_layers.begin(), c.tap_layers.end());
  }
  s.input_rows = !c.input_rows.empty();

  cuda::DeviceAttentionBatch probe;
  probe.layout = layout;
  probe.block_size = static_cast<int32_t>(kv_.block_size);
  SAKER_RETURN_IF_ERROR(ensure_attention_workspace(cuda::attention_workspace_bytes(probe, attention_launch(ctx_cap))));
  SAKER_RETURN_IF_ERROR(ensure_input_capacity(T + n_out + layout.total + (s.input_rows ? T : 0)));
  if (!s.taps_on_device) SAKER_RETURN_IF_ERROR(ensure_taps_capacity(T * s.taps_stride, false));

  std::copy(c.tokens.begin(), c.tokens.end(), in_host_);
  std::copy(c.output_rows.begin(), c.output_rows.end(), in_host_ + T);
  std::copy(packed.begin(), packed.end(), in_host_ + T + n_out);
  std::copy(c.input_rows.begin(), c.input_rows.end(), in_host_ + T + n_out + layout.total);

  // tap_rows writes at fixed addresses: the pinned staging, or the device rows of a chunk that starts at row0
  // (part of the shape: equal chunks of a long batch, each small enough for a graph, sit at different rows).
  cur_.taps = s.taps_stride == 0 ? nullptr : s.taps_on_device ? taps_dev_ + s.taps_row0 * s.taps_stride : taps_host_;
  cur_.taps_kind = s.taps_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  cur_.taps_stride = s.taps_stride;

  const bool use_graph = options_.cuda_graphs && !c.one_off && T <= kGraphMaxTokens &&
                         T <= matmul_->max_kernel_rows() && n_out <= head_rows_;
  // A shape runs eagerly the first time (library kernels load lazily, which must not happen inside a
  // capture) and is captured the second time, then replayed.
  if (use_graph) SAKER_RETURN_IF_ERROR(touch_kv_binding(s.kv));
  const bool seen = use_graph && !seen_shapes_.insert(s).second;
  if (use_graph && seen) {
    auto it = graphs_.find(s);
    if (it == graphs_.end()) {
      cudaGraph_t graph = nullptr;
      SAKER_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      const Status st = enqueue_step(s, layout, program);
      const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
      SAKER_RETURN_IF_ERROR(st);
      SAKER_CUDA_RETURN_IF_ERROR(end);
      cudaGraphExec_t exec = nullptr;
      const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      SAKER_CUDA_RETURN_IF_ERROR(inst);
      it = graphs_.emplace(s, exec).first;
    }
    SAKER_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(it->second, stream_));
  } else {
    SAKER_RETURN_IF_ERROR(enqueue_step(s, layout, program));
  }

  // Taps kept on the device are read by another stream (a drafter's keep_rows) once this returns.
  if (n_out <= head_rows_ || s.taps_stride > 0) SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  if (c.taps) std::memcpy(c.taps, taps_host_, T * s.taps_stride * sizeof(float));
  if (n_out <= head_rows_) return take_outputs(c, 0, n_out);
  // More outputs than one head pass holds (prompt logits of a long prompt): slices, each copied out.
  for (int64_t b = 0; b < n_out; b += head_rows_) {
    const int64_t n = std::min(head_rows_, n_out - b);
    SAKER_RETURN_IF_ERROR(program.head(b, n));
    SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    SAKER_RETURN_IF_ERROR(take_outputs(c, b, n));
  }
  return {};
}

Status CudaBackend::run_step(const StepRequest& r, const StepProgram& program) {
  const cuda::ScopedDevice on(device_);
  const int64_t T = static_cast<int64_t>(r.tokens.size());
  if (T == 0) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  if (r.attn->n_tokens() != T) {
    return make_error(StatusCode::kInvalidArgument, "forward: {} tokens but attention metadata for {}", T,
                      r.attn->n_tokens());
  }
  const bool taps = r.taps_out || r.taps_on_device;
  if (taps && (r.taps_stride <= 0 || r.tap_layers.empty())) {
    return make_error(StatusCode::kInvalidArgument, "forward: hidden-state taps of row stride {} and {} layers",
                      r.taps_stride, r.tap_layers.size());
  }
  if (!r.input_rows.empty() && static_cast<int64_t>(r.input_rows.size()) != T) {
    return make_error(StatusCode::kInvalidArgument, "forward: {} input rows for {} tokens", r.input_rows.size(), T);
  }
  if (!input_rows_kept(r.input_rows, n_kept_)) {  // the gather reads device memory: no index past the kept rows
    return make_error(StatusCode::kInvalidArgument, "forward: an input row outside the {} kept rows", n_kept_);
  }
  SAKER_RETURN_IF_ERROR(flush_kept_copies());  // before the program gathers kept rows
  last_device_taps_ = {};
  if (r.taps_on_device) SAKER_RETURN_IF_ERROR(ensure_taps_capacity(T * r.taps_stride, true));
  // Tokens index the embedding table, whose rows can outnumber the head's (a tensor-parallel rank's head holds
  // a slice of the vocabulary): checked against the table once embedding() has seen it (the first, eager run of
  // any step), and in embedding() itself.
  const int64_t rows = embedding_rows_ > 0 ? embedding_rows_ : INT64_MAX;
  for (int32_t t : r.tokens) {
    if (t < 0 || t >= rows) {
      return make_error(StatusCode::kInvalidArgument, "forward: token {} outside the vocabulary (0..{})", t, rows - 1);
    }
  }
  SAKER_ASSIGN_OR_RETURN(kv_, bind_kv(r.kv));
  SAKER_RETURN_IF_ERROR(r.attn->validate(kv_.n_blocks, kv_.block_size));
  SAKER_RETURN_IF_ERROR(check_top_k(r));
  const Chunk whole{.tokens = r.tokens,
                    .attn = r.attn,
                    .output_rows = r.output_rows,
                    .logits = r.logits,
                    .argmax = r.argmax,
                    .taps = r.taps_on_device ? nullptr : r.taps_out,
                    .taps_on_device = r.taps_on_device,
                    .taps_stride = taps ? r.taps_stride : 0,
                    .tap_layers = r.tap_layers,
                    .input_rows = r.input_rows,
                    .top_k = r.top_k,
                    .top_ids = r.top_ids,
                    .top_logprobs = r.top_logprobs,
                    .one_off = r.one_off};
  const auto done = [&] {
    if (r.taps_on_device) last_device_taps_ = {.data = taps_dev_, .stride = r.taps_stride, .n = T, .on_device = true};
    return Status{};
  };
  if (T <= max_tokens_) {
    SAKER_RETURN_IF_ERROR(run_chunk(whole, program));
    return done();
  }
  if (r.top_k > 0) {  // a drafter's blocks fit one batch (DFlashDrafter splits them so)
    return make_error(StatusCode::kInvalidArgument,
                      "forward: top-k outputs of a batch of {} tokens, over the CUDA batch size {}", T, max_tokens_);
  }

  // Split a long batch into chunks in batch order. Causal and tree queries only see keys written by earlier
  // tokens, so chunk i sees everything it needs once chunks < i have run; a full (bidirectional) mask or a
  // tree that straddles chunks cannot be split.
  for (const AttentionSequence& q : r.attn->sequences) {
    if (q.mask != AttentionMask::kCausal) {
      return make_error(StatusCode::kInvalidArgument,
                        "forward: a batch of {} tokens with a tree or full mask exceeds the CUDA batch size {}", T,
                        max_tokens_);
    }
  }
  for (int64_t b = 0; b < T; b += max_tokens_) {
    const int64_t e = std::min(T, b + max_tokens_);
    std::vector<int32_t> rows;
    std::vector<int64_t> where;  // index into r.output_rows of each chunk output
    for (size_t i = 0; i < r.output_rows.size(); ++i) {
      const int32_t row = r.output_rows[i];
      if (row >= b && row < e) {
        rows.push_back(static_cast<int32_t>(row - b));
        where.push_back(static_cast<int64_t>(i));
      }
    }
    AttentionBatch sub = *r.attn;
    sub.token_seq = r.attn->token_seq.subspan(b, e - b);
    sub.token_slot = r.attn->token_slot.subspan(b, e - b);
    sub.token_pos = r.attn->token_pos.subspan(b, e - b);
    sub.token_parent = {};
    std::vector<float> chunk_logits(r.logits ? rows.size() * n_vocab_ : 0);  // [chunk outputs, n_vocab]
    std::vector<int32_t> chunk_ids(rows.size());                             // [chunk outputs]
    Chunk chunk = whole;
    chunk.tokens = r.tokens.subspan(b, e - b);
    chunk.attn = &sub;
    chunk.output_rows = rows;
    chunk.logits = r.logits ? chunk_logits.data() : nullptr;
    chunk.argmax = r.argmax ? chunk_ids.data() : nullptr;
    chunk.taps = whole.taps ? r.taps_out + b * r.taps_stride : nullptr;  // the chunk's tokens' rows
    chunk.row0 = b;
    chunk.input_rows = r.input_rows.empty() ? r.input_rows : r.input_rows.subspan(b, e - b);
    SAKER_RETURN_IF_ERROR(run_chunk(chunk, program));
    for (size_t i = 0; i < where.size(); ++i) {
      if (r.logits) {
        std::memcpy(r.logits + where[i] * n_vocab_, chunk_logits.data() + i * n_vocab_, n_vocab_ * sizeof(float));
      }
      if (r.argmax) r.argmax[where[i]] = chunk_ids[i];
    }
  }
  return done();
}

Act CudaBackend::buffer(int id, int64_t rows) {
  const int64_t cols = buffer_cols_[id];
  return {buffers_[id], rows, cols, cols};
}

// Each head pass fills the logits buffer from its first row; take_outputs places the rows.
Act CudaBackend::logits(int64_t, int64_t n) { return {logits_dev_, n, n_vocab_, n_vocab_}; }

// The kept rows the step names, gathered on the device: indices from the step's inputs, so a graph replays it.
Status CudaBackend::load_input(const Act& out) {
  if (cur_.input_rows == nullptr || out.rows != cur_.n_tokens || out.cols != kept_cols_ || !out.contiguous()) {
    return make_error(StatusCode::kInvalidArgument,
                      "load_input: {} rows of {} floats asked, the step reads {} kept rows of {} floats", out.rows,
                      out.cols, cur_.input_rows ? cur_.n_tokens : 0, kept_cols_);
  }
  return cuda::gather_rows(kept_dev_, cur_.input_rows, out.rows, out.cols, out.data, stream_);
}

Result<int64_t> CudaBackend::keep_rows(const FloatRows& src, int64_t cols) {
  const cuda::ScopedDevice on(device_);
  std::lock_guard<std::mutex> lock(mutex_);
  SAKER_RETURN_IF_ERROR(check_keep_rows(src, cols, n_kept_, &kept_cols_));
  const int64_t first = n_kept_;
  if ((first + src.n) * cols > kept_capacity_) {
    // Grown on the stream's order: the old rows (their waiting copies first) move over before the old buffer
    // goes. Graphs that gather from the old buffer go first.
    SAKER_RETURN_IF_ERROR(flush_kept_copies());
    SAKER_RETURN_IF_ERROR(drop_graphs());
    const int64_t cap = std::max<int64_t>({(first + src.n) * cols, 2 * kept_capacity_, 64 * cols});
    SAKER_ASSIGN_OR_RETURN(float* grown, mem_.alloc_array<float>(static_cast<size_t>(cap), "kept input rows"));
    if (first > 0) {
      cudaError_t moved =
          cudaMemcpyAsync(grown, kept_dev_, first * cols * sizeof(float), cudaMemcpyDeviceToDevice, stream_);
      if (moved == cudaSuccess) moved = cudaStreamSynchronize(stream_);
      if (moved != cudaSuccess) {
        mem_.release(grown);  // the old buffer and its rows stay
        SAKER_CUDA_RETURN_IF_ERROR(moved);
      }
    }
    mem_.release(kept_dev_);
    kept_dev_ = grown;
    kept_capacity_ = cap;
  }
  float* dst = kept_dev_ + first * cols;
  if (src.on_device) {
    // Device rows wait in kept_copies_, each appended to the last when it continues it on both sides: a step's
    // sequences keep their rows in batch order, so one copy carries them all (16 streams: one call, not 16).
    for (int64_t i = 0; i < src.n; ++i) {
      const float* from = src.row_data(i);
      float* to = dst + i * cols;
      if (!kept_copies_.empty()) {
        KeptCopy& last = kept_copies_.back();
        if (last.src_stride == src.stride && last.src + last.rows * src.stride == from &&
            last.dst + last.rows * cols == to) {
          ++last.rows;
          continue;
        }
      }
      kept_copies_.push_back({.dst = to, .src = from, .src_stride = src.stride, .rows = 1});
    }
  } else if (src.n > 0) {
    // A host source is copied now (staged before the call returns): the caller's buffer may go at once.
    SAKER_RETURN_IF_ERROR(flush_kept_copies());
    const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
    const int64_t copies = src.pick.empty() ? 1 : src.n;  // rows in order: one 2D copy; picked: one a row
    for (int64_t i = 0; i < copies; ++i) {
      SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst + i * cols, row_bytes, src.row_data(i),
                                                   src.stride * sizeof(float), row_bytes, src.n / copies,
                                                   cudaMemcpyHostToDevice, stream_));
    }
  }
  n_kept_ = first + src.n;
  unsettled_ = unsettled_ || src.n > 0;
  return first;
}

Status CudaBackend::flush_kept_copies() {
  const size_t row_bytes = static_cast<size_t>(kept_cols_) * sizeof(float);
  for (const KeptCopy& c : kept_copies_) {
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(c.dst, row_bytes, c.src, c.src_stride * sizeof(float), row_bytes,
                                                 c.rows, cudaMemcpyDeviceToDevice, stream_));
  }
  kept_copies_.clear();
  return {};
}

Status CudaBackend::settle() {
  if (!unsettled_) return {};
  const cuda::ScopedDevice on(device_);
  std::lock_guard<std::mutex> lock(mutex_);
  SAKER_RETURN_IF_ERROR(flush_kept_copies());
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  unsettled_ = false;
  return {};
}

}  // namespace saker
