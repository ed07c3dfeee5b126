#pragma once
// Figures worked out once per device (and, for some, per key of the call) and then read by every launch: a
// kernel's resident blocks (resident_blocks.h), whether chained launches work. Host code without CUDA calls,
// so the unit tests check it on any machine.
#include <atomic>
#include <cstdint>

#include "core/status.h"

namespace saker::cuda::detail {

// A per-device figure computed once (devices 0..63), such as an instantiation's resident blocks.
template <class Compute>
Result<int64_t> once_per_device(std::atomic<int64_t> (&cache)[64], int device, Compute&& compute) {
  std::atomic<int64_t>& slot = cache[device & 63];
  if (const int64_t v = slot.load(std::memory_order_acquire); v > 0) return v;
  SAKER_ASSIGN_OR_RETURN(const int64_t v, compute());
  slot.store(v, std::memory_order_release);
  return v;
}

// The same for a figure that also depends on a key of the call (a kernel whose shared memory grows with the
// row: a few sizes a model), computed once per (device, key): up to kKeys keys a device are kept, and a key past
// them is computed at every call. Values and keys are 32-bit and the value is never 0 (an empty slot).
template <int kKeys, class Compute>
Result<int64_t> once_per_device_key(std::atomic<uint64_t> (&cache)[64][kKeys], int device, uint32_t key,
                                    Compute&& compute) {
  std::atomic<uint64_t>(&slots)[kKeys] = cache[device & 63];
  for (std::atomic<uint64_t>& slot : slots) {
    const uint64_t v = slot.load(std::memory_order_acquire);
    if (v == 0) break;
    if (static_cast<uint32_t>(v >> 32) == key) return static_cast<int64_t>(static_cast<uint32_t>(v));
  }
  SAKER_ASSIGN_OR_RETURN(const int64_t v, compute());
  const uint64_t packed = (uint64_t{key} << 32) | static_cast<uint32_t>(v);
  for (std::atomic<uint64_t>& slot : slots) {
    uint64_t seen = 0;
    if (slot.compare_exchange_strong(seen, packed, std::memory_order_acq_rel)) break;
    if (static_cast<uint32_t>(seen >> 32) == key) break;  // another thread kept it first
  }
  return v;
}

}  // namespace saker::cuda::detail
