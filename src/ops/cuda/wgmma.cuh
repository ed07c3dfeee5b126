#pragma once
// Hopper's warpgroup MMA on int8 (internal; include only from .cu files): the four warps of a warpgroup
// multiply a 64-row A (u8, from registers: each warp's 16 rows as mma.m16n8k32's A fragment) by an N-column B
// (s8, from shared memory through a matrix descriptor) into s32 accumulators laid out as mma.m16n8's C, one
// fragment per 8 columns: d[4i + 0, 1] at (row g, columns 8i + 2t, + 1), d[4i + 2, 3] at row g + 8 (g = lane / 4,
// t = lane % 4, rows counted from 16 x warp). The instruction is asynchronous: its A registers and accumulators
// must not be touched until a wait_group says it finished (wgmma_wait keeps the A registers named to it live
// until then, so the compiler cannot reuse them), and wgmma_fence must come between the register writes of
// a fragment and the MMAs that read it.
// Needs sm_90a; other targets get a trap (the launcher selects these kernels only where hopper_code_on).
#include <cstdint>

#include "ops/cuda/cp_async.cuh"

namespace saker::cuda::detail {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SAKER_WGMMA_DEVICE 1
#define SAKER_WGMMA_ELSE
#elif defined(__CUDA_ARCH__)
#define SAKER_WGMMA_ELSE __trap();
#else
#define SAKER_WGMMA_ELSE
#endif

// The descriptor of a K-major operand stored as 128-byte rows under the 128-byte swizzle (a TMA copy with
// CU_TENSOR_MAP_SWIZZLE_128B into a 1024-byte aligned buffer): groups of eight rows 1024 bytes apart (the
// stride field); the leading field is unused for swizzled K-major operands. p may point up to 96 bytes into
// a row (the k-step's 32 bytes): the swizzle is applied to the address the hardware forms, as the copy did.
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void* p) {
  const uint32_t a = smem_addr(p);
  return static_cast<uint64_t>((a >> 4) & 0x3FFF) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

__device__ __forceinline__ void wgmma_fence() {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  SAKER_WGMMA_ELSE
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  SAKER_WGMMA_ELSE
#endif
}
// Waits until at most kPending committed groups are still running; `keep` (the A fragments of the groups
// that finish) stays in its registers until then.
template <int kPending, int kRegs>
__device__ __forceinline__ void wgmma_wait(uint32_t (&keep)[kRegs]) {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+r"(keep[i])::"memory");
#else
  (void)keep;
  SAKER_WGMMA_ELSE
#endif
}
// After a wait: the accumulators are read only from here on (the compiler may not move their reads above it).
template <int kRegs>
__device__ __forceinline__ void wgmma_fence_operands(int (&d)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// d (+)= a b: m64nNk32, A u8 (weight codes times a scale digit), B s8 (activation codes); accumulate 0
// overwrites d.
__device__ __forceinline__ void wgmma_u8s8(int (&d)[8], const uint32_t (&a)[4], uint64_t b, int accumulate) {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k32.s32.u8.s8 {%0, %1, %2, %3, %4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, %12, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
#else
  SAKER_WGMMA_ELSE
#endif
}

__device__ __forceinline__ void wgmma_u8s8(int (&d)[16], const uint32_t (&a)[4], uint64_t b, int accumulate) {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
#else
  SAKER_WGMMA_ELSE
#endif
}

__device__ __forceinline__ void wgmma_u8s8(int (&d)[32], const uint32_t (&a)[4], uint64_t b, int accumulate) {
#ifdef SAKER_WGMMA_DEVICE
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
#else
  SAKER_WGMMA_ELSE
#endif
}
}  // namespace saker::cuda::detail
