#include "ops/cuda/tensor_map.h"

#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/cuda_check.h"

namespace saker::cuda::detail {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

Result<EncodeTiled> encoder() {
  static const auto fn = []() -> EncodeTiled {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<EncodeTiled>(p);
  }();
  if (fn == nullptr) return make_error(StatusCode::kUnsupported, "cuda: the driver offers no cuTensorMapEncodeTiled");
  return fn;
}

}  // namespace

Result<CUtensorMap> encode_tensor_map(const ByteTensor& t) {
  if (t.rank < 2 || t.rank > 3 || (reinterpret_cast<uintptr_t>(t.base) & 15) != 0 || t.box[0] % 16 != 0 ||
      (t.swizzle_128b && t.box[0] > 128)) {
    return make_error(StatusCode::kInvalidArgument, "cuda tensor map: unaligned base or box");
  }
  for (int d = 0; d + 1 < t.rank; ++d) {
    if (t.strides[d] % 16 != 0) return make_error(StatusCode::kInvalidArgument, "cuda tensor map: stride not 16-byte");
  }
  SAKER_ASSIGN_OR_RETURN(const EncodeTiled encode, encoder());
  CUtensorMap map{};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, static_cast<cuuint32_t>(t.rank),
                            const_cast<void*>(t.base), t.dims, t.strides, t.box, element_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE,
                            t.swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return make_error(StatusCode::kInternal, "cuda tensor map: cuTensorMapEncodeTiled failed (" + std::to_string(r) + ")");
  }
  return map;
}

}  // namespace saker::cuda::detail
