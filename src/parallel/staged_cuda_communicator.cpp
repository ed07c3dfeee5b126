#include "parallel/staged_cuda_communicator.h"

#include <cuda_runtime.h>

namespace saker {
namespace {

Status cuda_error(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return make_error(StatusCode::kInternal, "{}: {}", what, cudaGetErrorString(e));
}

}  // namespace

Status StagedCudaCommunicator::all_reduce_sum(float* data, int64_t n) {
  if (size() == 1 || n == 0) return {};
  send_.resize(static_cast<size_t>(n));
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  SAKER_RETURN_IF_ERROR(cuda_error(cudaMemcpyAsync(send_.data(), data, bytes, cudaMemcpyDeviceToHost, stream_),
                                   "staged all-reduce: copy to the host"));
  SAKER_RETURN_IF_ERROR(cuda_error(cudaStreamSynchronize(stream_), "staged all-reduce: wait for the stream"));
  SAKER_RETURN_IF_ERROR(host_.all_reduce_sum(send_.data(), n));
  SAKER_RETURN_IF_ERROR(cuda_error(cudaMemcpyAsync(data, send_.data(), bytes, cudaMemcpyHostToDevice, stream_),
                                   "staged all-reduce: copy back"));
  // The host buffer is reused by the next collective: the copy must be done with it first.
  return cuda_error(cudaStreamSynchronize(stream_), "staged all-reduce: wait for the copy back");
}

Status StagedCudaCommunicator::all_gather(const float* send, int64_t n, float* recv) {
  send_.resize(static_cast<size_t>(n));
  recv_.resize(static_cast<size_t>(n) * static_cast<size_t>(size()));
  SAKER_RETURN_IF_ERROR(cuda_error(cudaMemcpyAsync(send_.data(), send, static_cast<size_t>(n) * sizeof(float),
                                                   cudaMemcpyDeviceToHost, stream_),
                                   "staged all-gather: copy to the host"));
  SAKER_RETURN_IF_ERROR(cuda_error(cudaStreamSynchronize(stream_), "staged all-gather: wait for the stream"));
  SAKER_RETURN_IF_ERROR(host_.all_gather(send_.data(), n, recv_.data()));
  SAKER_RETURN_IF_ERROR(cuda_error(cudaMemcpyAsync(recv, recv_.data(), recv_.size() * sizeof(float),
                                                   cudaMemcpyHostToDevice, stream_),
                                   "staged all-gather: copy back"));
  return cuda_error(cudaStreamSynchronize(stream_), "staged all-gather: wait for the copy back");
}

Status StagedCudaCommunicator::barrier() {
  SAKER_RETURN_IF_ERROR(cuda_error(cudaStreamSynchronize(stream_), "staged barrier: wait for the stream"));
  return host_.barrier();
}

}  // namespace saker
