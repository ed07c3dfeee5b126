#include "parallel/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/log.h"

namespace saker {

namespace {

Status nccl_error(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return {};
  return make_error(StatusCode::kInternal, "{}: {}", what, ncclGetErrorString(r));
}

Status cuda_error(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return make_error(StatusCode::kInternal, "{}: {}", what, cudaGetErrorString(e));
}

// NVLink multicast (NVLS) off on every rank, before NCCL reads its environment.
void disable_nvls() {
  const char* v = std::getenv("NCCL_NVLS_ENABLE");
  if (v == nullptr) {
    setenv("NCCL_NVLS_ENABLE", "0", 0);
  } else if (std::strcmp(v, "0") != 0) {
    SAKER_LOG_WARN("NCCL_NVLS_ENABLE={}: tensor parallelism expects NVLink multicast off (NCCL_NVLS_ENABLE=0)", v);
  }
}

}  // namespace

Result<NcclCommunicator::UniqueId> NcclCommunicator::make_unique_id() {
  static_assert(sizeof(ncclUniqueId) == sizeof(UniqueId), "ncclUniqueId is 128 bytes");
  disable_nvls();
  ncclUniqueId id;
  SAKER_RETURN_IF_ERROR(nccl_error(ncclGetUniqueId(&id), "ncclGetUniqueId"));
  UniqueId out;
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(const UniqueId& id, int rank, int size,
                                                                   int cuda_device, CUstream_st* stream) {
  if (size < 1 || rank < 0 || rank >= size) {
    return make_error(StatusCode::kInvalidArgument, "NCCL communicator: rank {} of {}", rank, size);
  }
  disable_nvls();
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->rank_ = rank;
  c->size_ = size;
  c->device_ = cuda_device;
  c->stream_ = stream;
  SAKER_RETURN_IF_ERROR(cuda_error(cudaSetDevice(cuda_device), "cudaSetDevice"));
  SAKER_RETURN_IF_ERROR(cuda_error(cudaMalloc(reinterpret_cast<void**>(&c->scratch_), sizeof(float)), "cudaMalloc"));
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof(nid));
  SAKER_RETURN_IF_ERROR(nccl_error(ncclCommInitRank(&c->comm_, size, nid, rank), "ncclCommInitRank"));
  return c;
}

Result<std::vector<std::unique_ptr<NcclCommunicator>>> NcclCommunicator::create_group(
    const std::vector<int>& devices) {
  const int n = static_cast<int>(devices.size());
  if (n < 1) return make_error(StatusCode::kInvalidArgument, "NCCL group: no devices");
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        return make_error(StatusCode::kInvalidArgument,
                          "NCCL group: ranks {} and {} on the same GPU {} (NCCL runs one rank per GPU)", j, i,
                          devices[i]);
      }
    }
  }
  disable_nvls();
  std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
  SAKER_RETURN_IF_ERROR(nccl_error(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll"));
  std::vector<std::unique_ptr<NcclCommunicator>> out;
  for (int r = 0; r < n; ++r) {
    std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
    c->comm_ = comms[r];
    c->rank_ = r;
    c->size_ = n;
    c->device_ = devices[r];
    out.push_back(std::move(c));  // owns comms[r] from here on
  }
  for (int r = 0; r < n; ++r) {
    SAKER_RETURN_IF_ERROR(cuda_error(cudaSetDevice(devices[r]), "cudaSetDevice"));
    SAKER_RETURN_IF_ERROR(
        cuda_error(cudaMalloc(reinterpret_cast<void**>(&out[r]->scratch_), sizeof(float)), "cudaMalloc"));
  }
  return out;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(comm_);
  if (scratch_) cudaFree(scratch_);
}

Status NcclCommunicator::all_reduce_sum(float* data, int64_t n) {
  if (size_ == 1 || n == 0) return {};
  return nccl_error(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat32, ncclSum, comm_, stream_),
                    "ncclAllReduce");
}

Status NcclCommunicator::all_gather(const float* send, int64_t n, float* recv) {
  return nccl_error(ncclAllGather(send, recv, static_cast<size_t>(n), ncclFloat32, comm_, stream_), "ncclAllGather");
}

Status NcclCommunicator::barrier() {
  SAKER_RETURN_IF_ERROR(nccl_error(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_),
                                   "ncclAllReduce (barrier)"));
  return cuda_error(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (barrier)");
}

}  // namespace saker
