#include "models/cuda/cuda_kv_storage.h"

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_devices.h"

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

Status CudaKvStorage::copy_slots(std::span<const int32_t> block_table, std::span<const int32_t> from,
                                 std::span<const int32_t> to) {
  const KvCacheConfig& c = config_;
  SAKER_RETURN_IF_ERROR(check_copy_slots(c, block_table, from, to));
  const cuda::ScopedDevice on(device_);
  const uint64_t row_bytes = kv_row_bytes(c);
  auto offset = [&](int32_t slot) -> uint64_t {
    const int32_t block = block_table[slot / c.block_size];
    return (static_cast<uint64_t>(block) * c.block_size + slot % c.block_size) * row_bytes;
  };
  auto* base = static_cast<uint8_t*>(base_);
  // Stream order keeps i = 0, 1, ... in sequence; distinct slots never overlap within one copy.
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == to[i]) continue;
    SAKER_RETURN_IF_ERROR(
        copy_tensors(base + offset(to[i]), stride_, base + offset(from[i]), stride_, row_bytes, cudaMemcpyDeviceToDevice));
  }
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
