#include "models/model.h"

#include "core/log.h"
#include "models/kv_cache.h"
#include "ops/device_info.h"
#if SAKER_HAS_CUDA
#include "models/cuda/cuda_kv_storage.h"
#endif

namespace saker {

Result<Device> parse_device(const std::string& name) {
  if (name == "cpu") return Device::kCpu;
  if (name == "cuda" || name == "auto") {
#if SAKER_HAS_CUDA
    std::string why;
    if (!cuda_devices(&why).empty()) return Device::kCuda;
    if (name == "auto") return Device::kCpu;
    return make_error(StatusCode::kUnsupported, "--device cuda: no usable GPU ({})", why);
#else
    if (name == "auto") return Device::kCpu;
    return make_error(StatusCode::kUnsupported, "--device cuda: this saker was built without the CUDA backend");
#endif
  }
  return make_error(StatusCode::kInvalidArgument, "unknown device '{}' (expected cpu, cuda or auto)", name);
}

Result<std::unique_ptr<KvStorage>> allocate_kv_storage(Device device, const KvCacheConfig& config) {
  if (device == Device::kCuda) {
#if SAKER_HAS_CUDA
    if (config.dtype != DType::kF16) {
      return make_error(StatusCode::kUnsupported, "the CUDA decoder keeps KV in f16 (asked for {}): use kv_dtype()",
                        dtype_name(config.dtype));
    }
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<CudaKvStorage> kv, CudaKvStorage::create(config));
    SAKER_LOG_INFO("CUDA decoder: KV cache of {} tokens on the GPU ({} MiB, f16)", config.n_blocks * config.block_size,
                   kv->size_bytes() >> 20);
    return std::unique_ptr<KvStorage>(std::move(kv));
#else
    return make_error(StatusCode::kUnsupported, "this saker was built without the CUDA backend");
#endif
  }
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::create(config));
  return std::unique_ptr<KvStorage>(std::move(kv));
}

Result<std::unique_ptr<KvStorage>> Model::allocate_kv(const KvCacheConfig& config) const {
  const ModelHParams& h = hparams();
  if (config.n_layer != h.n_layer || config.n_head_kv != kv_heads() || config.head_dim != h.head_dim) {
    return make_error(StatusCode::kInvalidArgument,
                      "KV cache of {} layers x {} kv heads x {} does not fit the model's {} x {} x {}", config.n_layer,
                      config.n_head_kv, config.head_dim, h.n_layer, kv_heads(), h.head_dim);
  }
  return allocate_kv_storage(device(), config);
}

}  // namespace saker
