// Test patterns for KV chunks: every byte depends on (sequence, block index, layer, K or V), so a
// descriptor that lands one chunk off, or swaps K and V, changes what is read back.
#pragma once

#include "cuda/paged_attention.h"
#include "cuda/paging.h"

#include <cstdint>
#include <vector>

namespace mxtb::paging::test {

inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t chunk_seed(uint64_t seq, size_t index, int layer, Kv kv, uint64_t salt = 0) {
  return mix(seq * 1000003 + index * 7919 + static_cast<uint64_t>(layer) * 131 + static_cast<uint64_t>(kv) * 0x4B56 + salt);
}

// Values in [-1, 1) stored in the shape's dtype (finite, so the attention reference stays finite).
inline void fill_chunk(std::byte* p, const ModelShape& s, uint64_t seed) {
  size_t n = s.chunk_bytes() / dtype_bytes(s.dtype);
  for (size_t i = 0; i < n; ++i) {
    double v = static_cast<double>(mix(seed + i) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    store_elem(p + i * dtype_bytes(s.dtype), s.dtype, static_cast<float>(v));
  }
}

inline std::vector<std::byte> chunk_image(const ModelShape& s, uint64_t seed) {
  std::vector<std::byte> v(s.chunk_bytes());
  fill_chunk(v.data(), s, seed);
  return v;
}

}  // namespace mxtb::paging::test
