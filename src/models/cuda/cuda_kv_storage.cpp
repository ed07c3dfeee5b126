#include "models/cuda/cuda_kv_storage.h"

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_devices.h"
#include "ops/cuda/kv_move_rows.h"

namespace saker {
namespace {

constexpr uint64_t kTensorAlign = 256;  // each layer tensor starts as cudaMalloc would start it

}  // namespace

Result<std::unique_ptr<CudaKvStorage>> CudaKvStorage::create(const KvCacheConfig& c) {
  SAKER_RETURN_IF_ERROR(check_kv_config(c));
  if (c.dtype != DType::kF16) {
    return make_error(StatusCode::kUnsupported, "the CUDA backend keeps its KV cache in f16 (asked for {})",
                      dtype_name(c.dtype));
  }
  std::unique_ptr<CudaKvStorage> s(new CudaKvStorage());
  s->config_ = c;
  const uint64_t tensor_bytes = static_cast<uint64_t>(c.n_blocks) * s->tensor_page_bytes();
  s->stride_ = (tensor_bytes + kTensorAlign - 1) / kTensorAlign * kTensorAlign;
  const uint64_t total = 2 * static_cast<uint64_t>(c.n_layer) * s->stride_;
  int dev = 0, pitch = 0;
  SAKER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  s->device_ = dev;
  SAKER_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, dev));
  s->max_pitch_ = static_cast<size_t>(pitch);
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s->stream_, cudaStreamNonBlocking));
  if (const cudaError_t e = cudaMalloc(&s->base_, total); e != cudaSuccess) {
    cudaGetLastError();  // a failed allocation leaves no sticky error behind
    s->base_ = nullptr;
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    return make_error(StatusCode::kOutOfRange,
                      "GPU memory: cannot allocate a KV cache of {} MiB ({} tokens; {} MiB free of {} MiB): {}",
                      total >> 20, c.n_blocks * c.block_size, free_b >> 20, total_b >> 20, cudaGetErrorString(e));
  }
  // Zeroed like the host cache, so a slot read before it is written holds the same bits on every backend.
  SAKER_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s->base_, 0, total, s->stream_));
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s->stream_));
  auto* base = static_cast<uint8_t*>(s->base_);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    LayerKv layer;
    for (int which = 0; which < 2; ++which) {
      void* data = base + (2 * l + which) * s->stride_;
      (which == 0 ? layer.k : layer.v) = TensorView::contiguous(
          data, c.dtype, {c.n_blocks, c.block_size, c.n_head_kv, c.head_dim}, Device::kCuda);
    }
    s->layers_.push_back(layer);
  }
  return s;
}

CudaKvStorage::~CudaKvStorage() {
  const cuda::ScopedDevice on(device_);
  if (stream_) cudaStreamDestroy(stream_);
  if (moves_dev_) cudaFree(moves_dev_);
  if (base_) cudaFree(base_);
}

Status CudaKvStorage::copy_tensors(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                                   cudaMemcpyKind kind) const {
  const size_t n = 2 * static_cast<size_t>(config_.n_layer);
  if (dst_pitch <= max_pitch_ && src_pitch <= max_pitch_) {
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, n, kind, stream_));
    return {};
  }
  for (size_t t = 0; t < n; ++t) {
    SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<uint8_t*>(dst) + t * dst_pitch,
                                               static_cast<const uint8_t*>(src) + t * src_pitch, width, kind, stream_));
  }
  return {};
}

Status CudaKvStorage::copy_slots(std::span<const SlotMoves> seqs) {
  const KvCacheConfig& c = config_;
  SAKER_RETURN_IF_ERROR(check_copy_slots(c, seqs));
  moves_.clear();
  groups_.assign(1, 0);
  size_t total = 0;
  for (const SlotMoves& m : seqs) total += m.from.size();
  if (total > static_cast<size_t>(INT32_MAX / 2)) {
    return make_error(StatusCode::kInvalidArgument, "copy_slots: {} moves in one call", total);
  }
  for (const SlotMoves& m : seqs) {
    for (size_t i = 0; i < m.from.size(); ++i) {
      if (m.from[i] == m.to[i]) continue;  // a chain's accepted rows are in place already
      moves_.push_back(storage_slot(c, m.block_table, m.from[i]));
      moves_.push_back(storage_slot(c, m.block_table, m.to[i]));
    }
    const auto n_moves = static_cast<int32_t>(moves_.size() / 2);
    if (n_moves > groups_.back()) groups_.push_back(n_moves);  // a group per sequence with something to move
  }
  const int64_t n_groups = static_cast<int64_t>(groups_.size()) - 1;
  if (n_groups == 0) return {};
  const cuda::ScopedDevice on(device_);
  const size_t move_bytes = moves_.size() * sizeof(int64_t), group_bytes = groups_.size() * sizeof(int32_t);
  if (move_bytes + group_bytes > moves_dev_bytes_) {
    void* old = moves_dev_;
    moves_dev_ = nullptr;
    moves_dev_bytes_ = 0;
    if (old) SAKER_CUDA_RETURN_IF_ERROR(cudaFree(old));
    const size_t want = 2 * (move_bytes + group_bytes);
    if (const cudaError_t e = cudaMalloc(&moves_dev_, want); e != cudaSuccess) {
      cudaGetLastError();  // not sticky: the decoder's next error check must not find it
      moves_dev_ = nullptr;
      return make_error(StatusCode::kOutOfRange, "GPU memory: cannot allocate {} bytes for the KV row moves: {}", want,
                        cudaGetErrorString(e));
    }
    moves_dev_bytes_ = want;
  }
  auto* moves_dev = static_cast<int64_t*>(moves_dev_);
  auto* groups_dev = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(moves_dev_) + move_bytes);
  SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(moves_dev, moves_.data(), move_bytes, cudaMemcpyHostToDevice, stream_));
  SAKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(groups_dev, groups_.data(), group_bytes, cudaMemcpyHostToDevice, stream_));
  SAKER_RETURN_IF_ERROR(
      cuda::move_kv_rows(base_, stride_, 2 * c.n_layer, kv_row_bytes(c), moves_dev, groups_dev, n_groups, stream_));
  // Also keeps moves_ / groups_ alive until the uploads have read them.
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return {};
}

Status CudaKvStorage::read_page(int32_t page, void* host) const {
  SAKER_RETURN_IF_ERROR(check_page(config_, page, host, "read_page"));
  const cuda::ScopedDevice on(device_);
  const uint64_t n = tensor_page_bytes();
  SAKER_RETURN_IF_ERROR(copy_tensors(host, n, static_cast<const uint8_t*>(base_) + page * n, stride_, n,
                                     cudaMemcpyDeviceToHost));
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return {};
}

Status CudaKvStorage::write_page(int32_t page, const void* host) {
  SAKER_RETURN_IF_ERROR(check_page(config_, page, host, "write_page"));
  const cuda::ScopedDevice on(device_);
  const uint64_t n = tensor_page_bytes();
  SAKER_RETURN_IF_ERROR(copy_tensors(static_cast<uint8_t*>(base_) + page * n, stride_, host, n, n,
                                     cudaMemcpyHostToDevice));
  // The host buffer may go as soon as this returns.
  SAKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return {};
}

}  // namespace saker
