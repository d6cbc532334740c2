// CUDA device probe: what the GPU tests and later the paging engine ask first. Builds only when
// nvcc is found; callers treat zero devices as "skip", never as "pass".
#pragma once

#include <cstddef>
#include <string>

namespace mxtb::paging {

// Number of usable CUDA devices; 0 when the driver or a device is missing (reason in *why).
int device_count(std::string* why = nullptr);

// Copies `bytes` of a pattern to device 0, transforms it in a kernel, copies it back and checks
// every byte. Returns an empty string on success, else what went wrong.
std::string roundtrip_check(size_t bytes);

}  // namespace mxtb::paging
