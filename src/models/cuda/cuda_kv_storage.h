#pragma once
// CudaKvStorage: KvStorage in GPU memory, f16 (the dtype the CUDA kernels read and write). Every layer's K and
// V is one [n_blocks, block_size, n_head_kv, head_dim] tensor; all of them sit in one allocation at a fixed
// stride, so a page transfer is one strided copy over every layer instead of one per tensor, and a step's slot
// moves one kernel over every layer.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "models/kv_storage.h"

namespace saker {

class CudaKvStorage final : public KvStorage {
 public:
  // On the current CUDA device (its calls later run there whatever device is current); refuses any dtype but
  // f16.
  static Result<std::unique_ptr<CudaKvStorage>> create(const KvCacheConfig& config);
  ~CudaKvStorage() override;
  CudaKvStorage(const CudaKvStorage&) = delete;
  CudaKvStorage& operator=(const CudaKvStorage&) = delete;

  const KvCacheConfig& config() const override { return config_; }
  Device device() const override { return Device::kCuda; }
  std::span<const LayerKv> layers() const override { return layers_; }
  uint64_t size_bytes() const override { return 2 * static_cast<uint64_t>(config_.n_layer) * stride_; }
  // Every sequence's moves in one kernel (cuda/kv_move_rows.h); returns once they are done (the decoder's
  // stream does not wait on ours).
  using KvStorage::copy_slots;
  Status copy_slots(std::span<const SlotMoves> seqs) override;
  Status read_page(int32_t page, void* host) const override;
  Status write_page(int32_t page, const void* host) override;

 private:
  CudaKvStorage() = default;
  uint64_t tensor_page_bytes() const { return static_cast<uint64_t>(config_.block_size) * kv_row_bytes(config_); }
  // `width` bytes at dst + t * dst_pitch <- src + t * src_pitch for every tensor t = 0 .. 2 n_layer - 1, on
  // stream_ (one 2D copy when the pitches allow it, one copy per tensor otherwise).
  Status copy_tensors(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                      cudaMemcpyKind kind) const;

  KvCacheConfig config_;
  int device_ = 0;
  void* base_ = nullptr;  // [2 n_layer] tensors (k0, v0, k1, ...) of stride_ bytes each
  uint64_t stride_ = 0;
  size_t max_pitch_ = 0;  // the device's largest 2D-copy pitch
  cudaStream_t stream_ = nullptr;
  std::vector<LayerKv> layers_;
  // copy_slots' move lists: built on the host, uploaded to a device buffer that grows as needed.
  std::vector<int64_t> moves_;   // (from, to) storage slots
  std::vector<int32_t> groups_;  // a sequence's moves are moves_[2 groups_[g] .. 2 groups_[g + 1])
  void* moves_dev_ = nullptr;
  size_t moves_dev_bytes_ = 0;
};

}  // namespace saker
