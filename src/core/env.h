#pragma once
// Every environment variable saker reads, in one place. Most are debug switches; the interface is
// command-line flags (the two `saker pull` settings also have flags).
//   SAKER_LOG_LEVEL   trace|debug|info|warn|error|off: overrides the log level
//   SAKER_TRACE       comma-separated tensor names (or "all") for the trace hook to dump
//   SAKER_TRACE_DIR   folder the trace hook writes tensors to (default: print summaries to stderr)
//   SAKER_NUM_THREADS default size of the global thread pool
//   SAKER_CUDA_MATMUL "simple": every CUDA matmul runs the simple reference kernel; "fma": no tensor-core
//                     kernel for 2-64 rows (to bisect kernel bugs); "legacy": K-quant rows take the dispatch
//                     before the width-invariant kernels (to compare); "kqmma": every K-quant width up to 64
//                     takes the width-invariant tensor-core kernel; "kql1": that kernel reads the K-quants'
//                     activation codes through L1 instead of staging them; "q8narrow": the legacy dp4a decode
//                     kernel keeps one output row per warp at 4-8 rows; "kqcp": the staged K-quant
//                     kernel fills its stages with cp.async instead of Hopper's TMA copies (same bits);
//                     "kqnt2": its calls of 17-64 rows take units of 16 activation rows instead of 32;
//                     "kqearly": its calls of up to 16 rows let the next kernel launch right after their wait
//   SAKER_CUDA_PDL    "0": CUDA kernels launch one after another instead of chained (programmatic dependent
//                     launch, ops/cuda/chained_launch.cuh), to compare or to bisect a race
//   SAKER_CUDA_UNFUSED "1": the CUDA decoder runs q/k norm + RoPE + KV write as three ops instead of one
//   SAKER_CUDA_SKIP   comma-separated op classes the CUDA backend leaves out of every step: "norm", "qknorm"
//                     (q/k norm + RoPE + K/V write), "attention", "gated" (SwiGLU / GeGLU), "matmul", "add".
//                     For timing only: what a step costs without them, so what fusing them away could buy at
//                     most. The outputs are meaningless (a warning says so).
//   SAKER_CACHE_DIR   folder `saker pull` keeps models in (default $XDG_CACHE_HOME/saker or ~/.cache/saker)
//   SAKER_PYTHON      the Python interpreter whose pip `saker pull` runs (default python3)
//   SAKER_CUDA_ATTENTION comma-separated: "grid": automatic CUDA attention splits the keys to fill the GPU
//                     (the bits of a row then depend on the batch) instead of fixed 128-key slices; with it,
//                     "decode": the flash-decode kernel (kDecode) for 1-7 rows instead of split-K; "noverify":
//                     never the verify kernel (kVerify); "warp": the warp decode kernel (kWarpDecode) for one
//                     token per sequence. "notiled": never the tiled prefill kernel; "oneslice": the fixed-slice
//                     tensor-core kernel runs one block a key slice instead of blocks that take several (same
//                     bits). Forced kernels are unaffected.

#include <string>

namespace saker {

struct DebugEnv {
  const char* log_level = nullptr;
  const char* trace = nullptr;
  const char* trace_dir = nullptr;
  int num_threads = 0;  // 0: hardware concurrency
  const char* cuda_matmul = nullptr;
  const char* cache_dir = nullptr;
  const char* python = nullptr;
  const char* cuda_attention = nullptr;
  const char* cuda_pdl = nullptr;
  bool cuda_unfused = false;
  unsigned cuda_skip = 0;        // CudaSkip bits
  std::string cuda_skip_unknown;  // SAKER_CUDA_SKIP's names that are no class
};

// The op classes SAKER_CUDA_SKIP names.
enum CudaSkip : unsigned {
  kSkipNorm = 1u << 0,
  kSkipQkNorm = 1u << 1,
  kSkipAttention = 1u << 2,
  kSkipGated = 1u << 3,
  kSkipMatmul = 1u << 4,
  kSkipAdd = 1u << 5,
};

const DebugEnv& debug_env();

// SAKER_CUDA_SKIP's list as CudaSkip bits; names that are no class are appended to `unknown`, comma-separated.
unsigned parse_cuda_skip(const std::string& list, std::string& unknown);

// The names SAKER_CUDA_SKIP knows, comma-separated (for error messages).
std::string cuda_skip_classes();

// Whether SAKER_CUDA_MATMUL is exactly `value` (each comparison path's switch; callers keep the answer).
bool cuda_matmul_is(const char* value);

// The folder saker keeps pulled models in (under models/): SAKER_CACHE_DIR, else $XDG_CACHE_HOME/saker, else
// ~/.cache/saker, else a folder in the system's temporary directory.
std::string model_cache_dir();

}  // namespace saker
