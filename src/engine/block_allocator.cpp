#include "engine/block_allocator.h"

namespace saker {

BlockAllocator::BlockAllocator(int32_t n_blocks) : ref_counts_(n_blocks, 0) {
  free_.reserve(n_blocks);
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 first
}

Status BlockAllocator::allocate(int32_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > n_free()) {
    return make_error(StatusCode::kOutOfRange, "KV cache full: {} blocks needed, {} of {} free", n, n_free(),
                      n_blocks());
  }
  for (int32_t i = 0; i < n; ++i) {
    const int32_t b = free_.back();
    free_.pop_back();
    ref_counts_[b] = 1;
    out->push_back(b);
  }
  return {};
}

void BlockAllocator::retain(int32_t block) { ++ref_counts_[block]; }

void BlockAllocator::release(int32_t block) {
  if (ref_counts_[block] > 0 && --ref_counts_[block] == 0) free_.push_back(block);
}

Status BlockAllocator::validate() const {
  std::vector<int> listed(ref_counts_.size(), 0);
  for (int32_t b : free_) {
    if (b < 0 || b >= n_blocks()) return make_error(StatusCode::kInternal, "free list holds invalid block {}", b);
    if (++listed[b] > 1) return make_error(StatusCode::kInternal, "block {} is on the free list twice", b);
    if (ref_counts_[b] != 0) {
      return make_error(StatusCode::kInternal, "block {} is free but has {} owners", b, ref_counts_[b]);
    }
  }
  for (int32_t b = 0; b < n_blocks(); ++b) {
    if (ref_counts_[b] < 0) return make_error(StatusCode::kInternal, "block {} has a negative count", b);
    if (ref_counts_[b] == 0 && !listed[b]) return make_error(StatusCode::kInternal, "block {} is lost", b);
  }
  return {};
}

}  // namespace saker
