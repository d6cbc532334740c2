#include "device_probe.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace mxtb::paging {

namespace {
__global__ void xor_index(uint32_t* data, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    data[i] ^= static_cast<uint32_t>(i * 2654435761u);
}

std::string err(const char* what, cudaError_t e) { return std::string(what) + ": " + cudaGetErrorString(e); }
}  // namespace

int device_count(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device";
  return n;
}

std::string roundtrip_check(size_t bytes) {
  size_t n = bytes / sizeof(uint32_t);
  std::vector<uint32_t> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<uint32_t>(i * 0x9E3779B9u + 7);
  uint32_t* dev = nullptr;
  if (auto e = cudaMalloc(&dev, n * sizeof(uint32_t)); e != cudaSuccess) return err("cudaMalloc", e);
  std::string result;
  if (auto e = cudaMemcpy(dev, host.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice); e != cudaSuccess) {
    result = err("copy to device", e);
  } else {
    xor_index<<<256, 256>>>(dev, n);
    if (auto e = cudaDeviceSynchronize(); e != cudaSuccess) {
      result = err("kernel", e);
    } else if (auto e2 = cudaMemcpy(back.data(), dev, n * sizeof(uint32_t), cudaMemcpyDeviceToHost); e2 != cudaSuccess) {
      result = err("copy to host", e2);
    } else {
      for (size_t i = 0; i < n && result.empty(); ++i)
        if (back[i] != (host[i] ^ static_cast<uint32_t>(i * 2654435761u)))
          result = "word " + std::to_string(i) + " came back wrong";
    }
  }
  cudaFree(dev);
  return result;
}

}  // namespace mxtb::paging
