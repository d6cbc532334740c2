// Entry points of `mxtb alloc ...` and `mxtb bench alloc ...` (see docs/alloc.md).
#pragma once

#include <string>
#include <vector>

namespace mxtb::host::alloc {

// args: the words after `alloc`. Prints to stdout; returns a process exit code
// (0 ok, 1 run-time failure such as an unreadable workload, 2 bad arguments).
int run_alloc_command(const std::vector<std::string>& args);
// args: the words after `bench alloc`.
int run_alloc_bench(const std::vector<std::string>& args);

}  // namespace mxtb::host::alloc
