#include "paged_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mxtb::paging {

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        man <<= 1;
        ++e;
      } while (!(man & 0x400));
      u = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
  } else if (exp == 31) {
    u = sign | 0x7F800000u | man << 13;
  } else {
    u = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((u >> 23) & 0xFF) - 127 + 15;
  uint32_t man = u & 0x7FFFFF;
  if (((u >> 23) & 0xFF) == 0xFF) return static_cast<uint16_t>(sign | 0x7C00 | (man ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = static_cast<uint32_t>(exp) << 10 | man >> 13, rem = man & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into the exponent, which is right
  return static_cast<uint16_t>(sign | h);
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float load_elem(const std::byte* p, DType t) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::F16 ? half_to_float(h) : bf16_to_float(h);
}

void store_elem(std::byte* p, DType t, float v) {
  if (t == DType::F32) {
    std::memcpy(p, &v, 4);
    return;
  }
  uint16_t h = t == DType::F16 ? float_to_half(v) : float_to_bf16(v);
  std::memcpy(p, &h, 2);
}

void AttentionBatch::validate(const ModelShape& s) const {
  if (q_heads <= 0 || q_heads % s.kv_heads != 0)
    throw std::invalid_argument("attention: q_heads " + std::to_string(q_heads) + " is not a positive multiple of kv_heads " +
                                std::to_string(s.kv_heads));
  if (tables.size() != context_lens.size())
    throw std::invalid_argument("attention: " + std::to_string(tables.size()) + " block tables for " +
                                std::to_string(context_lens.size()) + " context lengths");
  size_t want = tables.size() * static_cast<size_t>(q_heads) * static_cast<size_t>(s.head_size);
  if (q.size() != want)
    throw std::invalid_argument("attention: query has " + std::to_string(q.size()) + " values, want " + std::to_string(want));
  for (size_t i = 0; i < tables.size(); ++i) {
    size_t cap = tables[i].size() * static_cast<size_t>(s.tokens_per_block);
    if (context_lens[i] <= 0 || static_cast<size_t>(context_lens[i]) > cap)
      throw std::invalid_argument("attention: sequence " + std::to_string(i) + " context " + std::to_string(context_lens[i]) +
                                  " tokens does not fit its " + std::to_string(tables[i].size()) + " blocks");
  }
}

std::vector<float> paged_attention_cpu(const ModelShape& s, const std::byte* base, size_t pool_blocks, int layer,
                                       const AttentionBatch& batch) {
  batch.validate(s);
  const size_t D = static_cast<size_t>(s.head_size), eb = dtype_bytes(s.dtype);
  const int group = batch.q_heads / s.kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> out(batch.q.size(), 0.0f);
  for (size_t seq = 0; seq < batch.tables.size(); ++seq) {
    const int n = batch.context_lens[seq];
    for (int qh = 0; qh < batch.q_heads; ++qh) {
      const int kvh = qh / group;
      const float* q = &batch.q[(seq * static_cast<size_t>(batch.q_heads) + static_cast<size_t>(qh)) * D];
      auto at = [&](int t, Kv kv) {
        int blk = batch.tables[seq][static_cast<size_t>(t / s.tokens_per_block)];
        size_t tok = static_cast<size_t>(t % s.tokens_per_block);
        return base + chunk_offset(s, Layout::LayerMajor, pool_blocks, blk, layer, kv) +
               (tok * static_cast<size_t>(s.kv_heads) + static_cast<size_t>(kvh)) * D * eb;
      };
      std::vector<float> score(static_cast<size_t>(n));
      float mx = -INFINITY;
      for (int t = 0; t < n; ++t) {
        const std::byte* k = at(t, Kv::K);
        float dot = 0;
        for (size_t d = 0; d < D; ++d) dot += q[d] * load_elem(k + d * eb, s.dtype);
        score[static_cast<size_t>(t)] = dot * scale;
        mx = std::max(mx, dot * scale);
      }
      float sum = 0;
      for (float& x : score) sum += (x = std::exp(x - mx));
      float* o = &out[(seq * static_cast<size_t>(batch.q_heads) + static_cast<size_t>(qh)) * D];
      for (int t = 0; t < n; ++t) {
        const std::byte* v = at(t, Kv::V);
        float w = score[static_cast<size_t>(t)] / sum;
        for (size_t d = 0; d < D; ++d) o[d] += w * load_elem(v + d * eb, s.dtype);
      }
    }
  }
  return out;
}

}  // namespace mxtb::paging
