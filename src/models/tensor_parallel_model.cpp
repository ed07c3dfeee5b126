#include "models/tensor_parallel_model.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/log.h"
#include "core/thread_pool.h"
#include "models/registry.h"
#include "models/sharded_kv_storage.h"
#include "models/tensor_shard.h"
#include "ops/cpu/cpu_backend.h"

#if SAKER_HAS_CUDA
#include "models/cuda/cuda_backend.h"
#include "ops/cuda/cuda_devices.h"
#include "parallel/staged_cuda_communicator.h"
#if SAKER_HAS_NCCL
#include "parallel/nccl_communicator.h"
#endif
#endif

namespace saker {

Result<std::unique_ptr<Model>> TensorParallelModel::create(std::shared_ptr<const ModelWeights> weights,
                                                           const OpsOptions& options) {
  const int n = options.tensor_parallel;
  if (n < 2) return make_error(StatusCode::kInvalidArgument, "tensor parallelism needs at least 2 ranks (got {})", n);
  if (options.device != Device::kCpu && options.device != Device::kCuda) {
    return make_error(StatusCode::kUnsupported, "tensor parallelism runs on CPU ranks or CUDA devices");
  }
  const std::string& arch = weights->hparams().arch;
  const ModelArchitecture* a = find_architecture(arch);
  if (!a) return make_error(StatusCode::kUnsupported, "no forward pass for architecture '{}'", arch);
  SAKER_RETURN_IF_ERROR(check_tensor_parallel(*weights, n));

  std::unique_ptr<TensorParallelModel> m(new TensorParallelModel());
  m->weights_ = weights;
  m->hp_ = weights->hparams();
  m->device_ = options.device;
  if (m->device_ == Device::kCpu) {
    m->group_ = std::make_unique<LocalGroup>(n);
  } else {
    m->devices_ = options.tensor_parallel_devices;
    SAKER_RETURN_IF_ERROR(m->make_device_communicators(n));
  }
  for (int r = 0; r < n; ++r) {
    auto backend = m->rank_backend(r, options);
    if (!backend.ok()) return backend.status().with_context(fmt::format("tensor-parallel rank {} of {}", r, n));
    auto rank = a->create(weights, std::move(backend).value(), TensorShard{r, n});
    if (!rank.ok()) return rank.status().with_context(fmt::format("tensor-parallel rank {} of {}", r, n));
    m->ranks_.push_back(std::move(rank).value());
  }
  // The cores shared out: each CPU rank's matmuls on about 1 / N of the threads the one-rank model would use; a
  // GPU rank's thread only enqueues.
  const int threads = m->device_ == Device::kCpu ? std::max(1, ThreadPool::global().size() / n) : 1;
  m->threads_ = std::make_unique<RankThreads>(n, threads);
  m->logits_.resize(n);
  if (m->device_ == Device::kCpu) {
    SAKER_LOG_INFO("tensor parallel: {} CPU ranks of {} thread(s) each", n, threads);
  } else {
    SAKER_LOG_INFO("tensor parallel: {} CUDA ranks on devices {}{}", n, fmt::join(m->devices_, ", "),
                   m->group_ ? " (ranks sharing a device: all-reduces through host memory)" : " (NCCL)");
  }
  return std::unique_ptr<Model>(std::move(m));
}

// CUDA: the ranks' devices and communicators. Distinct devices: NCCL, one rank per GPU; a device given twice:
// every rank staged through a LocalGroup on the host.
Status TensorParallelModel::make_device_communicators(int n) {
#if SAKER_HAS_CUDA
  std::string why;
  const int available = static_cast<int>(cuda::list_devices(&why).size());
  if (devices_.empty()) {
    for (int r = 0; r < n; ++r) devices_.push_back(r);
  }
  if (static_cast<int>(devices_.size()) != n) {
    return make_error(StatusCode::kInvalidArgument, "tensor parallelism: {} devices given for {} ranks",
                      devices_.size(), n);
  }
  for (int d : devices_) {
    if (d < 0 || d >= available) {
      return make_error(StatusCode::kInvalidArgument,
                        "--tensor-parallel {}: CUDA device {} does not exist ({} device(s) here{}{})", n, d, available,
                        why.empty() ? "" : ": ", why);
    }
  }
  std::vector<int> sorted = devices_;
  std::sort(sorted.begin(), sorted.end());
  const bool shared = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  if (shared) {
    group_ = std::make_unique<LocalGroup>(n);
    for (int r = 0; r < n; ++r) device_comms_.push_back(std::make_unique<StagedCudaCommunicator>(group_->rank(r)));
    return {};
  }
#if SAKER_HAS_NCCL
  SAKER_ASSIGN_OR_RETURN(auto comms, NcclCommunicator::create_group(devices_));
  for (auto& c : comms) device_comms_.push_back(std::move(c));
  return {};
#else
  return make_error(StatusCode::kUnsupported,
                    "tensor parallelism over {} GPUs needs saker built with NCCL (not found when it was built)", n);
#endif
#else
  (void)n;
  return make_error(StatusCode::kUnsupported, "this saker was built without the CUDA backend");
#endif
}

Result<std::unique_ptr<OpBackend>> TensorParallelModel::rank_backend(int r, const OpsOptions& options) {
  if (device_ == Device::kCpu) {
    CpuBackendOptions o;
    o.fast_matmul = options.fast_matmul;
    o.fast_attention = options.fast_attention;
    o.matmul = options.matmul;
    o.communicator = &group_->rank(r);
    o.trace = r == 0;  // the residual stream is the same on every rank; rank 0 speaks for them
    return std::unique_ptr<OpBackend>(std::make_unique<CpuBackend>(o));
  }
#if SAKER_HAS_CUDA
  OpsOptions o = options;
  o.tensor_parallel = 1;
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> b, CudaBackend::create(o, devices_[r], device_comms_[r].get()));
  return std::unique_ptr<OpBackend>(std::move(b));
#else
  return make_error(StatusCode::kUnsupported, "this saker was built without the CUDA backend");
#endif
}

TensorParallelModel::~TensorParallelModel() = default;

Result<std::unique_ptr<KvStorage>> TensorParallelModel::allocate_kv(const KvCacheConfig& config) const {
  const ModelHParams& h = hp_;
  if (config.n_layer != h.n_layer || config.n_head_kv != h.n_head_kv || config.head_dim != h.head_dim) {
    return make_error(StatusCode::kInvalidArgument,
                      "KV cache of {} layers x {} kv heads x {} does not fit the model's {} x {} x {}", config.n_layer,
                      config.n_head_kv, config.head_dim, h.n_layer, h.n_head_kv, h.head_dim);
  }
  std::vector<std::unique_ptr<KvStorage>> parts;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    KvCacheConfig c = config;
    c.n_head_kv = ranks_[r]->kv_heads();
#if SAKER_HAS_CUDA
    // Each rank's pages on its own GPU (the storage is made on the current device).
    std::optional<cuda::ScopedDevice> on;
    if (device_ == Device::kCuda) on.emplace(devices_[r]);
#endif
    SAKER_ASSIGN_OR_RETURN(std::unique_ptr<KvStorage> part, ranks_[r]->allocate_kv(c));
    parts.push_back(std::move(part));
  }
  SAKER_ASSIGN_OR_RETURN(std::unique_ptr<ShardedKvStorage> kv, ShardedKvStorage::create(config, std::move(parts)));
  return std::unique_ptr<KvStorage>(std::move(kv));
}

Status TensorParallelModel::forward(const ForwardBatch& batch, std::span<const LayerKv> kv, float* logits) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ModelHParams& h = hp_;
  const int n = n_ranks();
  if (static_cast<int64_t>(kv.size()) != n * h.n_layer) {
    return make_error(StatusCode::kInvalidArgument,
                      "forward: {} KV layer views given for {} ranks x {} layers (a ShardedKvStorage's layers())",
                      kv.size(), n, h.n_layer);
  }
  const int64_t n_out = static_cast<int64_t>(batch.output_rows.size());
  if (n_out > 0 && logits == nullptr && batch.argmax == nullptr) {
    return make_error(StatusCode::kInvalidArgument, "forward: output rows but neither logits nor argmax wanted");
  }
  for (int r = 0; r < n; ++r) logits_[r].resize(n_out * TensorShard{r, n}.count(h.n_vocab));

  std::mutex error_mutex;
  Status first_error;
  if (group_) group_->reset();
  threads_->run([&](int r) {
    ForwardBatch b = batch;
    b.argmax = nullptr;  // picked below over every rank's slice
    if (r > 0) b.taps = {};
    const Status s = ranks_[r]->forward(b, kv.subspan(static_cast<size_t>(r) * h.n_layer, h.n_layer),
                                        n_out > 0 ? logits_[r].data() : nullptr);
    if (s.ok()) return;
    {
      std::lock_guard<std::mutex> elock(error_mutex);
      // The first failure is the cause; the others fail because it aborted the group.
      if (first_error.ok()) first_error = s.with_context(fmt::format("tensor-parallel rank {} of {}", r, n));
    }
    if (group_) group_->abort();
  });
  SAKER_RETURN_IF_ERROR(first_error);

  for (int64_t i = 0; i < n_out; ++i) {
    int32_t best = -1;
    float best_value = 0.0f;
    for (int r = 0; r < n; ++r) {
      const TensorShard shard{r, n};
      const int64_t nv = shard.count(h.n_vocab), first = shard.first(h.n_vocab);
      const float* row = logits_[r].data() + i * nv;  // [nv] the rank's slice of output i
      if (logits) std::copy_n(row, nv, logits + i * h.n_vocab + first);
      if (!batch.argmax) continue;
      for (int64_t j = 0; j < nv; ++j) {  // strict >, slices in vocabulary order: the lowest id among maxima
        if (std::isnan(row[j])) continue;
        if (best < 0 || row[j] > best_value) {
          best = static_cast<int32_t>(first + j);
          best_value = row[j];
        }
      }
    }
    if (!batch.argmax) continue;
    if (best < 0) return make_error(StatusCode::kInternal, "forward: the logits of output {} are all NaN", i);
    batch.argmax[i] = best;
  }
  return {};
}

}  // namespace saker
