#pragma once
// BlockAllocator: hands out KV cache blocks by id, with reference counts so that a block shared by several
// sequences (a common prefix) is freed only when the last one lets go. Host-side bookkeeping only.
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace saker {

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }

  // n blocks, all or none: kOutOfRange (naming how many are free) when there are not enough.
  Status allocate(int32_t n, std::vector<int32_t>* out);
  void retain(int32_t block);   // one more owner
  void release(int32_t block);  // one owner fewer; back on the free list at zero
  int32_t ref_count(int32_t block) const { return ref_counts_[block]; }

  // Free list and reference counts agree: every block is either free (count 0, listed once) or owned.
  Status validate() const;

 private:
  std::vector<int32_t> ref_counts_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first (warm in cache)
};

}  // namespace saker
