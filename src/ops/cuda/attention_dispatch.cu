// Public entry points of the paged attention: argument checks, the launch plan (rows per block, number of
// key splits, workspace) and the choice of kernel. The plan depends only on the packed layout (n_tokens,
// n_seqs), the AttentionLaunch capacities and whether q can be read as float4, never on the lengths in
// device memory.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/env.h"

#include "ops/cuda/attention.h"
#include "ops/cuda/attention_kernels.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kq_device.cuh"

namespace saker::cuda {
namespace {

struct Plan {
  bool tiled = false;
  bool decode = false;
  bool verify = false;
  bool warp = false;    // the warp decode kernel
  bool decode_mma = false;  // the tensor-core flash-decoding kernel over fixed slices
  bool paired = false;  // tiled with two query heads per block
  int32_t rows_per_tile = 1;
  int32_t n_splits = 1;
  int32_t split_keys = 0;  // > 0: fixed absolute slices (kSplitFixed)
  size_t ml_bytes = 0, acc_bytes = 0;  // split-K partials, each 256-byte aligned
};

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

// Most scratch the fixed slices may ask for before the automatic choice falls back to the grid plan.
constexpr size_t kFixedMaxPartialBytes = size_t{512} << 20;

int sm_count() {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError();  // clear it: the plan falls back to an H200's count
    return 132;
  }
  return n;
}

// Automatic choices the debug switch SAKER_CUDA_ATTENTION turns off.
bool auto_allows(const char* what) {
  const char* v = debug_env().cuda_attention;
  return v == nullptr || std::strstr(v, what) == nullptr;
}

Status check(const DeviceAttentionBatch& batch, const AttentionLaunch& launch) {
  if (launch.n_head <= 0 || launch.n_head_kv <= 0 || launch.n_head % launch.n_head_kv != 0) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: n_head must be a positive multiple of n_head_kv");
  }
  if (!detail::attention_head_dim_supported(launch.head_dim)) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: head_dim must be 32, 64, 80, 96, 128 or 256");
  }
  if (launch.n_head / launch.n_head_kv > detail::split_max_queries(launch.head_dim)) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: GQA group too large for head_dim");
  }
  if (launch.max_ctx <= 0 || batch.block_size <= 0 || launch.sliding_window < 0 || launch.soft_cap < 0.0f ||
      !std::isfinite(launch.scale) || !std::isfinite(launch.soft_cap)) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda attention: max_ctx and block_size must be > 0, window and soft_cap >= 0, scale finite");
  }
  return {};
}

// Workspace of the split partials: (m, l) and the unnormalised sums of every split, token and head.
void size_partials(Plan& plan, const PackedAttentionLayout& L, const AttentionLaunch& launch) {
  if (plan.n_splits <= 1) return;
  const size_t rows = static_cast<size_t>(plan.n_splits) * L.n_tokens * launch.n_head;
  plan.ml_bytes = align256(rows * sizeof(float2));
  plan.acc_bytes = align256(rows * launch.head_dim * sizeof(float));
}

// Rows per block and key splits of a split-K style plan: rows of one sequence up to max_rows_per_tile per
// tile, then enough splits that the grid reaches `target` blocks, but at most one split per
// keys_per_split keys at the capacity length and at most max_splits; sizes the split partials.
void plan_splits(Plan& plan, const PackedAttentionLayout& L, const AttentionLaunch& launch, int32_t per_seq,
                 int32_t max_rows_per_tile, int64_t target, int64_t keys_per_split, int64_t max_splits) {
  plan.rows_per_tile = std::clamp(per_seq, 1, max_rows_per_tile);
  const int64_t n_tiles = (L.n_tokens + plan.rows_per_tile - 1) / plan.rows_per_tile;
  const int64_t base = n_tiles * launch.n_head_kv;
  const int64_t max_by_ctx = std::max<int64_t>(1, (launch.max_ctx + keys_per_split - 1) / keys_per_split);
  int64_t splits = base >= target ? 1 : (target + base - 1) / base;
  splits = std::min<int64_t>({splits, max_by_ctx, max_splits});
  plan.n_splits = static_cast<int32_t>(splits);
  size_partials(plan, L, launch);
}

// Query vectors (token rows x the GQA group) one block of the fixed-slice tensor-core kernel takes: 16, 32 or
// 64 (one to four m-tiles). A block's time grows with its m-tiles while the K/V it reads does not, so a
// sequence's verify rows go to more blocks of fewer m-tiles as long as the grid stays within about three
// blocks a SM (counting the empty slices of the capacity): the fewest vectors a block whose grid fits.
// Measured on an H100 against 64 vectors a block (docs/performance.md): 8B Q4_K_M, one sequence's 16 verify
// rows after 512 tokens (capacity 1024), 8.09 -> 7.22 ms a step with 16 a block; attention_cuda_bench, 16 rows
// at 512 keys 43.3 -> 19.7 us, 64 rows at 512 45.6 -> 38.2 us with 32 a block; but 16 rows at 4096 keys 50.8
// -> 55.6 us with 32 a block (a grid of four blocks a SM), which this bound leaves at 64.
// A vector's bits do not depend on its block's m-tiles (attention_decode_mma.cu). SAKER_CUDA_ATTENTION=mt1 /
// mt2 / mt4 forces 16 / 32 / 64 (to measure).
int32_t decode_mma_vectors(const PackedAttentionLayout& L, int32_t n_splits, int32_t n_head_kv, int32_t per_seq,
                           int32_t group) {
  if (!auto_allows("mt1")) return std::max(16, group);
  if (!auto_allows("mt2")) return std::max(32, group);
  if (!auto_allows("mt4")) return 64;
  const int64_t room = 3LL * sm_count();
  for (int32_t v = 16; v < 64; v *= 2) {
    if (v < group) continue;
    const int32_t rows = v / group;
    if (rows >= per_seq) return v;  // every sequence's rows fit already
    const int64_t tiles = (L.n_tokens + rows - 1) / rows;
    if (static_cast<int64_t>(n_splits) * n_head_kv * tiles <= room) return v;
  }
  return 64;
}

// q and q_stride only decide whether kernels that read q as float4 may run (null: assume they may).
Plan make_plan(const DeviceAttentionBatch& batch, const AttentionLaunch& launch, const float* q = nullptr,
               int64_t q_stride = 4) {
  Plan plan;
  const PackedAttentionLayout& L = batch.layout;
  const int32_t group = launch.n_head / launch.n_head_kv;
  const int32_t max_rows = std::min(64, detail::split_max_queries(launch.head_dim) / group);
  // One token per sequence (plain decode): tiles of one row, so no block mixes sequences. Otherwise as
  // many rows as a sequence has on average, up to what the block holds.
  const int32_t per_seq = L.n_seqs > 0 ? (L.n_tokens + L.n_seqs - 1) / L.n_seqs : 1;
  // Tensor-core tiles pay off once a sequence brings enough query rows to fill them.
  // kAuto keeps the tiled kernel to the head sizes it has been measured on; forced, it runs any.
  const bool tiled_measured = launch.head_dim == 64 || launch.head_dim == 128 || launch.head_dim == 256;
  // The automatic choice keeps a row's numbers independent of the batch (fixed splits) unless asked for
  // the grid-filling plan ("grid") or the context is beyond what the fixed slices cover.
  const bool auto_choice = launch.kernel == AttentionKernel::kAuto;
  const bool fixed = launch.kernel == AttentionKernel::kSplitFixed || launch.kernel == AttentionKernel::kVerifyFixed ||
                     (auto_choice && auto_allows("grid") && launch.max_ctx <= fixed_split_max_ctx(launch.head_dim));
  plan.paired = launch.kernel == AttentionKernel::kTiledPair && group % 2 == 0;
  // With fixed splits, only batches whose sequences bring more than 64 rows on average (prefill) go to the
  // tiles: a speculative verify of up to 64 rows must meet its keys as a one-row decode does.
  const bool prefill_sized = fixed ? L.n_tokens > 64LL * L.n_seqs : per_seq >= 48;
  plan.tiled = launch.kernel == AttentionKernel::kTiled || launch.kernel == AttentionKernel::kTiledPair ||
               (auto_choice && tiled_measured && L.n_tokens >= 128 && prefill_sized && auto_allows("notiled"));
  if (plan.tiled) return plan;
  if (fixed) {
    plan.split_keys = fixed_split_keys(launch.head_dim);
    plan.n_splits = static_cast<int32_t>((std::max(launch.max_ctx, 1) + plan.split_keys - 1) / plan.split_keys);
    size_partials(plan, L, launch);
    // Fixed slices keep partials for every slice of the capacity and every token: a wide step at a long
    // capacity (64 sequences x 16 verify rows at 65536 keys: 8.6 GB) would ask for more scratch than it is
    // worth, so the automatic choice takes the grid plan below (whose rows' bits depend on the batch).
    if (!auto_choice || plan.ml_bytes + plan.acc_bytes <= kFixedMaxPartialBytes) {
      // The tensor-core flash-decoding kernel (kVerifyFixed) unless f32 is asked for (or q cannot be read as
      // float4, which a model's q inside its q|k|v rows always can); every width of one launch shape uses it.
      const bool q_aligned = (reinterpret_cast<uintptr_t>(q) & 15) == 0 && q_stride % 4 == 0;
      plan.decode_mma = q_aligned && group <= 64 && launch.kernel != AttentionKernel::kSplitFixed &&
                        (launch.kernel == AttentionKernel::kVerifyFixed || auto_allows("fixedf32"));
      plan.rows_per_tile = std::clamp(
          per_seq, 1,
          plan.decode_mma ? decode_mma_vectors(L, plan.n_splits, launch.n_head_kv, per_seq, group) / group : max_rows);
      return plan;
    }
    plan = Plan{};
  }
  // The verify kernel: one KV head's GQA group over up to 64 / group rows fills the 64 rows of its tiles.
  plan.verify = group <= 64 && (launch.kernel == AttentionKernel::kVerify ||
                                (launch.kernel == AttentionKernel::kAuto && per_seq * group >= 32 && per_seq <= 64 &&
                                 auto_allows("noverify")));
  if (plan.verify) {
    // Slices of >= 256 keys (four 64-key tiles through the cp.async pipeline) at the capacity length.
    plan_splits(plan, L, launch, per_seq, 64 / group, 4LL * sm_count(), 256, 512);
    return plan;
  }
  // The warp decode kernel, one token and GQA group per block, for one token per sequence only when asked
  // for (SAKER_CUDA_ATTENTION=warp): measured on the H200 (attention_cuda_bench, 32/8 heads, d 128) it loses
  // to split-K at every context (ctx 512: 27.7 vs 18.8 us; 4096: 33.8 vs 27.4; 32768: 180.8 vs 115.6; 32
  // sequences x 4096: 427 vs 346): each warp waits on the page lookup and loads of one 8-key chunk at a time.
  // Slices of at least 128 keys at the capacity length, split until the grid has ~4 blocks per SM.
  const bool q_vec = (reinterpret_cast<uintptr_t>(q) & 15) == 0 && q_stride % 4 == 0;
  const bool warp_fits = q_vec && detail::warp_decode_supports(launch.head_dim, group, L.n_tokens);
  plan.warp = warp_fits && (launch.kernel == AttentionKernel::kWarpDecode ||
                            (launch.kernel == AttentionKernel::kAuto && per_seq == 1 && !auto_allows("warp")));
  if (plan.warp) {
    plan_splits(plan, L, launch, 1, 1, 4LL * sm_count(),
                std::max<int64_t>(128, detail::warp_decode_slice_keys(launch.head_dim)), 256);
    return plan;
  }
  // The decode kernel holds at most kDecodeMaxQueries query vectors per block: rows of one sequence times
  // the GQA group.
  // Automatic choice keeps the split-K kernel for 1-7 rows: measured on the H200 (attention_cuda_bench, 32/8
  // heads, d 128, before the combine read splits in parallel) it beats the decode kernel at every context
  // (ctx 4096: 31.7 vs 51.3 us; 32768: 132 vs 234; 32 sequences x 4096: 346 vs 511).
  // SAKER_CUDA_ATTENTION=decode opts back in.
  plan.decode = group <= detail::kDecodeMaxQueries &&
                (launch.kernel == AttentionKernel::kDecode ||
                 (launch.kernel == AttentionKernel::kAuto && per_seq <= 64 && !auto_allows("decode")));
  if (plan.decode) {
    // One slice of decode_key_tile keys per split at the capacity length, as long as the grid is below
    // ~8 blocks per SM; beyond that, fewer splits with several rounds each.
    plan_splits(plan, L, launch, per_seq, detail::kDecodeMaxQueries / group, 8LL * sm_count(),
                detail::decode_key_tile(launch.head_dim), 512);
    return plan;
  }
  // Split the keys until the grid fills the GPU a few times over, but keep >= 2 tiles per split at the
  // capacity length (shorter contexts just give each split fewer keys).
  plan_splits(plan, L, launch, per_seq, max_rows, 4LL * sm_count(), 2 * static_cast<int64_t>(detail::split_key_tile(launch.head_dim)), 256);
  return plan;
}

}  // namespace

int32_t fixed_split_keys(int32_t head_dim) { return std::max(128, detail::split_key_tile(head_dim)); }
int32_t fixed_split_max_ctx(int32_t head_dim) { return detail::kCombineMaxSplits * fixed_split_keys(head_dim); }

size_t attention_workspace_bytes(const DeviceAttentionBatch& batch, const AttentionLaunch& launch) {
  if (!check(batch, launch).ok() || batch.layout.n_tokens <= 0) return 0;
  // The plan depends on whether q can be read as float4, which the caller may not know yet: the workspace
  // covers both plans (and split-K, which stands in for the tiled and verify kernels with an unaligned q).
  const float* unaligned = reinterpret_cast<const float*>(uintptr_t{4});
  const Plan aligned_plan = make_plan(batch, launch);
  const Plan unaligned_plan = make_plan(batch, launch, unaligned, 1);
  AttentionLaunch split_launch = launch;
  split_launch.kernel = AttentionKernel::kSplitK;
  const Plan split = make_plan(batch, split_launch);
  return std::max({aligned_plan.ml_bytes + aligned_plan.acc_bytes, unaligned_plan.ml_bytes + unaligned_plan.acc_bytes,
                   split.ml_bytes + split.acc_bytes});
}

Status attention(const float* q, int64_t q_stride, const __half* k_cache, const __half* v_cache,
                 const DeviceAttentionBatch& batch, const AttentionLaunch& launch, float* out, void* workspace,
                 size_t workspace_bytes, cudaStream_t stream, MatmulContext* quant) {
  SAKER_RETURN_IF_ERROR(check(batch, launch));
  if (batch.layout.n_tokens <= 0) return {};
  const int64_t n_out = static_cast<int64_t>(launch.n_head) * launch.head_dim;
  detail::Q8Scratch q8;
  if (quant != nullptr) {
    q8 = detail::q8_scratch(*quant);
    if (!detail::q8_scratch_holds(q8, batch.layout.n_tokens, n_out)) {
      return make_error(StatusCode::kInvalidArgument, "cuda attention: output outside the int8 scratch");
    }
  }
  if (q_stride < n_out) {
    return make_error(StatusCode::kInvalidArgument, "cuda attention: q_stride below n_head * head_dim");
  }
  Plan plan = make_plan(batch, launch, q, q_stride);
  if (workspace_bytes < plan.ml_bytes + plan.acc_bytes || (plan.n_splits > 1 && workspace == nullptr)) {
    return make_error(StatusCode::kInvalidArgument,
                      "cuda attention: workspace smaller than attention_workspace_bytes()");
  }
  // The tiled kernel reads q as float4; otherwise (rare) the split-K kernel without splits stands in, which
  // needs no workspace.
  const bool q_vec = (reinterpret_cast<uintptr_t>(q) & 15) == 0 && q_stride % 4 == 0;
  if ((plan.tiled || plan.verify) && !q_vec) plan = Plan{};
  detail::SplitAttentionArgs a;
  a.q = q;
  a.q_stride = q_stride;
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.packed = batch.data;
  a.layout = batch.layout;
  a.block_size = batch.block_size;
  a.block_shift = batch.block_size > 0 && (batch.block_size & (batch.block_size - 1)) == 0
                      ? __builtin_ctz(static_cast<unsigned>(batch.block_size))
                      : -1;
  a.n_head = launch.n_head;
  a.n_head_kv = launch.n_head_kv;
  a.head_dim = launch.head_dim;
  a.group = launch.n_head / launch.n_head_kv;
  a.rows_per_tile = plan.rows_per_tile;
  a.scale = launch.scale != 0.0f ? launch.scale : 1.0f / std::sqrt(static_cast<float>(launch.head_dim));
  a.soft_cap = launch.soft_cap;
  a.window = launch.sliding_window;
  a.n_splits = plan.n_splits;
  a.split_keys = plan.split_keys;
  a.out = out;
  if (plan.n_splits > 1) {
    a.part_ml = static_cast<float2*>(workspace);
    a.part_acc = reinterpret_cast<float*>(static_cast<char*>(workspace) + plan.ml_bytes);
  }
  if (quant != nullptr) {
    a.out_xq = q8.xq;
    a.out_kx = q8.xs;
  }
  if (plan.tiled) {
    SAKER_RETURN_IF_ERROR(detail::launch_tiled_attention(a, stream, plan.paired));
  } else if (plan.warp) {
    SAKER_RETURN_IF_ERROR(detail::launch_warp_decode_attention(a, stream));
  } else if (plan.decode_mma) {
    SAKER_RETURN_IF_ERROR(detail::launch_decode_mma_attention(a, stream));
  } else if (plan.verify) {
    SAKER_RETURN_IF_ERROR(detail::launch_verify_attention(a, stream));
  } else {
    SAKER_RETURN_IF_ERROR(plan.decode ? detail::launch_decode_attention(a, stream)
                                      : detail::launch_split_attention(a, stream));
  }
  // The plans whose combine did not write the blocks (one split, the tiles): quantised here, as the matmul would.
  if (quant != nullptr && (plan.tiled || !detail::combine_quantizes(a))) {
    return detail::launch_kx_quantize(out, batch.layout.n_tokens, n_out, q8.xq, reinterpret_cast<kq::KxBlock*>(q8.xs),
                                      stream);
  }
  return {};
}

}  // namespace saker::cuda
