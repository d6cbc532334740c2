// Paged decode attention, CPU reference: one query token per sequence attends over its context,
// reading K and V through the sequence's block table in a layer-major pool. It is the oracle for the
// GPU kernel and the check that a sequence paged out and back in gives identical output.
#pragma once

#include "paging.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace mxtb::paging {

// Element conversions shared by tests, the CPU reference and pattern fills (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
inline float bf16_to_float(uint16_t b) {
  uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16(float f);
float load_elem(const std::byte* p, DType t);
void store_elem(std::byte* p, DType t, float v);

struct AttentionBatch {
  int q_heads = 1;  // a multiple of the shape's kv_heads (grouped-query attention)
  std::vector<std::vector<int>> tables;  // device block ids per sequence
  std::vector<int> context_lens;          // tokens per sequence, at most blocks × tokens_per_block
  std::vector<float> q;                   // [sequence][q_head][head_size]
  // Throws std::invalid_argument naming what does not fit the shape.
  void validate(const ModelShape& s) const;
};

// out[sequence][q_head][head_size] for one layer of a layer-major pool of `pool_blocks` blocks at `base`.
std::vector<float> paged_attention_cpu(const ModelShape& s, const std::byte* base, size_t pool_blocks, int layer,
                                       const AttentionBatch& batch);

}  // namespace mxtb::paging
