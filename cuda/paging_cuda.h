// The paging engine on a GPU: device, peer and pinned memory for the tiers, the three GPU copy
// backends and the paged decode attention kernel. Built only when nvcc is found (MXTB_HAVE_CUDA);
// every function throws std::runtime_error naming the CUDA call that failed.
#pragma once

#include "paged_attention.h"
#include "paging.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace mxtb::paging {

std::unique_ptr<Memory> make_device_memory(size_t bytes, int device = 0);
std::unique_ptr<Memory> make_pinned_memory(size_t bytes);
// Device tier on device 0; Remote on device 1 with peer access both ways when two or more GPUs
// exist, else a second allocation on device 0; Host in pinned memory. *where says which.
MemoryFactory gpu_memory_factory(std::string* where = nullptr);

// Copies between host memory and a Memory of any kind (synchronous; for tests and setup).
void copy_to_memory(Memory& m, size_t offset, const void* src, size_t bytes);
void copy_from_memory(Memory& m, size_t offset, void* dst, size_t bytes);

enum class GpuBackendKind { PerBlock, Batched, Gather };
const char* gpu_backend_name(GpuBackendKind k);
// A GPU copy backend: everything runs on its own stream, in order; copy() only enqueues.
class GpuBackend : public CopyBackend {
 public:
  virtual cudaStream_t stream() const = 0;
  // Records `event` on the backend's stream (after everything enqueued so far).
  void record(cudaEvent_t event) const;
};
// PerBlock: one cudaMemcpyAsync per descriptor (the baseline). Batched: cudaMemcpyBatchAsync.
// Gather: one kernel launch over the whole descriptor table, 16-byte vectors, at most
// `max_blocks` thread blocks (0: 8 per SM).
std::unique_ptr<GpuBackend> make_gpu_backend(GpuBackendKind kind, int device = 0, int max_blocks = 0);
// All three behind the crossover measured between `src` and `dst` (any kinds of memory).
std::unique_ptr<AutoBackend> make_auto_gpu_backend(Memory& src, Memory& dst, int device = 0);

// Paged decode attention on device 0: the batch's metadata is uploaded once, then each enqueue()
// computes one layer on a stream, so a caller can run layer i while layer i+1 is still paging in.
class GpuAttention {
 public:
  GpuAttention(const ModelShape& shape, const AttentionBatch& batch);
  ~GpuAttention();
  GpuAttention(const GpuAttention&) = delete;
  GpuAttention& operator=(const GpuAttention&) = delete;
  void enqueue(const std::byte* pool, size_t pool_blocks, int layer, cudaStream_t stream);
  // Synchronises the device and returns out[layer][sequence][q_head][head_size].
  std::vector<std::vector<float>> results();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Benchmark figures measured on device 0 (cudaEvent timing; best of `reps`).
struct GpuBenchCell {
  std::string backend, tier;  // tier: "remote" (device→remote), "host-out" (device→pinned), "host-in"
  size_t block_bytes = 0, blocks = 0;
  double gbps = 0, ceiling_gbps = 0;  // ceiling: one copy of the same total bytes, same direction
  double submit_ns_per_block = 0;     // host time to enqueue, per block
};
struct GpuBenchResult {
  std::string device, remote_where;
  double d2d_ceiling_gbps = 0, pinned_out_ceiling_gbps = 0, pinned_in_ceiling_gbps = 0;  // largest total
  std::vector<GpuBenchCell> cells;
};
GpuBenchResult run_gpu_bench(const std::vector<size_t>& sizes, const std::vector<size_t>& counts, size_t max_total,
                             int reps);

}  // namespace mxtb::paging
