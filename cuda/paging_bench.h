// `mxtb bench paging`: bandwidth of each copy backend and tier against ceilings measured in the
// same run. The CPU part always runs; the GPU part runs when built with CUDA and a device exists.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mxtb::paging {

struct PagingBenchOptions {
  std::vector<size_t> sizes{4096, 16384, 65536, 262144, 1 << 20};  // bytes per block (descriptor)
  std::vector<size_t> counts{16, 256, 4096, 16384};                // blocks per copy
  size_t cpu_max_total = size_t{64} << 20;   // cells moving more bytes than this are skipped
  size_t gpu_max_total = size_t{512} << 20;
  int reps = 5;
  std::string json;  // also PREFIX.gp, PREFIX.dat and PREFIX.svg, PREFIX = json without .json
};

// Throws std::invalid_argument naming the bad option (sizes must be multiples of 16, counts ≥ 1).
void validate(const PagingBenchOptions& o);
// Prints the tables and goals; writes the JSON and plot when o.json is set. Returns the exit code
// (0: measured; goals are reported, not asserted).
int run_paging_bench(const PagingBenchOptions& o);

}  // namespace mxtb::paging
