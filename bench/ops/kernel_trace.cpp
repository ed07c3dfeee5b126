// Every kernel's start and end on the GPU, inside CUDA graphs too, for any CUDA program, with no change to it:
// a CUDA injection library (the driver loads the file CUDA_INJECTION64_PATH names when the program first
// initialises CUDA and calls its InitializeInjection) that turns on CUPTI's concurrent-kernel activity records
// and writes them as CSV when the program exits.
//
// Why: a decode step is one graph of ~400 chained kernels whose launches overlap (programmatic dependent
// launch), so kernels timed one at a time (Nsight Compute) read long and say nothing of what each adds to the
// step; these records carry the times of the graph run itself. In a chain, a kernel's end minus the previous
// kernel's end is what it added to the step (bench/kernel_trace.py sums that by kernel).
//
//   export CUDA_INJECTION64_PATH=build/lib/libsaker_kernel_trace.so SAKER_KERNEL_TRACE=trace.csv
//   build/bin/saker bench -m 8b.gguf --device cuda -p 16 --decode-ctx 0 -n 32 --rows 1 -r 1
//   python3 bench/kernel_trace.py trace.csv
//
// Columns: start, end (ns, GPU clock), graph (graph id, 0 outside one), node (graph node id), corr (the
// launch's correlation id: a graph launch's kernels share it), stream, grid and block (x*y*z), dyn_smem
// (bytes a block asked for), smem_config (the shared memory the SM was configured with for it: its carveout),
// regs (a thread's), name (demangled). Records the library could not keep (a full buffer) are counted on
// stderr at exit.
#include <cupti.h>
#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelRecord {
  uint64_t start, end, graph_node;
  uint32_t graph, corr, stream;
  int64_t grid, block;
  int32_t dyn_smem;
  uint32_t smem_config;
  uint16_t regs;
  std::string name;
};

std::mutex g_mu;
std::vector<KernelRecord> g_records;
size_t g_dropped = 0;
constexpr size_t kBufferBytes = size_t{8} << 20;

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI wants 8-byte aligned buffers.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<KernelRecord> got;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    got.push_back(KernelRecord{k->start, k->end, k->graphNodeId, k->graphId, k->correlationId, k->streamId,
                               static_cast<int64_t>(k->gridX) * k->gridY * k->gridZ,
                               static_cast<int64_t>(k->blockX) * k->blockY * k->blockZ, k->dynamicSharedMemory,
                               k->sharedMemoryExecuted, k->registersPerThread, demangle(k->name)});
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(g_mu);
  g_dropped += dropped;
  for (KernelRecord& r : got) g_records.push_back(std::move(r));
}

// CSV field: quoted, inner quotes doubled (template arguments hold commas).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_trace() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* path = std::getenv("SAKER_KERNEL_TRACE");
  if (path == nullptr || *path == '\0') path = "kernel_trace.csv";
  const std::lock_guard<std::mutex> lock(g_mu);
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "kernel_trace: cannot write %s\n", path);
    return;
  }
  std::fprintf(f, "start,end,graph,node,corr,stream,grid,block,dyn_smem,smem_config,regs,name\n");
  for (const KernelRecord& r : g_records) {
    std::fprintf(f, "%llu,%llu,%u,%llu,%u,%u,%lld,%lld,%d,%u,%u,%s\n", static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), r.graph, static_cast<unsigned long long>(r.graph_node), r.corr,
                 r.stream, static_cast<long long>(r.grid), static_cast<long long>(r.block), r.dyn_smem, r.smem_config,
                 static_cast<unsigned>(r.regs), quoted(r.name).c_str());
  }
  std::fclose(f);
  std::fprintf(stderr, "kernel_trace: %zu kernels to %s (%zu records dropped)\n", g_records.size(), path, g_dropped);
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "kernel_trace: %s failed: %s\n", what, msg != nullptr ? msg : "?");
  return false;
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. Returns 1 when tracing is on.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (!check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks") ||
      !check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enabling concurrent-kernel records")) {
    return 0;
  }
  std::atexit(write_trace);
  return 1;
}
