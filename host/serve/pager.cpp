// The KV pager over the paging engine (cuda/paging.h), and the constant FabricLinks for fast tests.
#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "cuda/paging.h"
#include "host/serve/serve.h"

namespace mxtb::host::serve {


Policy policy_by_name(const std::string& name) {
  if (name == "fcfs") return Policy::Fcfs;
  if (name == "vllm-0.3") return Policy::Vllm03;
  if (name == "recompute") return Policy::Recompute;
  if (name == "aqua-host") return Policy::AquaHost;
  if (name == "aqua-fabric") return Policy::AquaFabric;
  if (name == "aqua") return Policy::Aqua;
  throw InputError(fmt::format(
      "unknown policy '{}': expected fcfs, vllm-0.3, recompute, aqua-host, aqua-fabric or aqua", name));
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::Fcfs: return "fcfs";
    case Policy::Vllm03: return "vllm-0.3";
    case Policy::Recompute: return "recompute";
    case Policy::AquaHost: return "aqua-host";
    case Policy::AquaFabric: return "aqua-fabric";
    case Policy::Aqua: return "aqua";
  }
  return "?";
}

namespace {
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// FNV-1a over 64-bit words (then the tail bytes): a block digest, not a cryptographic one.
uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void token_bytes(uint8_t* out, uint32_t n, SeqId seq, uint64_t token) {
  uint64_t base = mix(seq * 0x9E3779B97F4A7C15ull ^ (token + 1));
  for (uint32_t i = 0; i < n; i += 8) {
    uint64_t w = mix(base + i);
    std::memcpy(out + i, &w, std::min<uint32_t>(8, n - i));
  }
}
}  // namespace

DeviceKvPool::DeviceKvPool(uint32_t blocks, uint32_t block_tokens, uint32_t real_bytes_per_token)
    : blocks_(blocks), block_tokens_(block_tokens), bytes_per_token_(real_bytes_per_token) {
  if (blocks == 0 || block_tokens == 0 || real_bytes_per_token == 0)
    throw InputError(fmt::format("KV pool of {} blocks × {} tokens × {} B is empty", blocks, block_tokens,
                                 real_bytes_per_token));
  bytes_.assign(static_cast<size_t>(blocks) * block_bytes(), 0);
}

uint8_t* DeviceKvPool::block(BlockId b) { return bytes_.data() + static_cast<size_t>(b) * block_bytes(); }
const uint8_t* DeviceKvPool::block(BlockId b) const { return bytes_.data() + static_cast<size_t>(b) * block_bytes(); }

void DeviceKvPool::write_token(BlockId b, uint32_t slot, SeqId seq, uint64_t token) {
  token_bytes(block(b) + static_cast<size_t>(slot) * bytes_per_token_, bytes_per_token_, seq, token);
}

bool DeviceKvPool::token_matches(BlockId b, uint32_t slot, SeqId seq, uint64_t token) const {
  std::vector<uint8_t> want(bytes_per_token_);
  token_bytes(want.data(), bytes_per_token_, seq, token);
  return std::memcmp(want.data(), block(b) + static_cast<size_t>(slot) * bytes_per_token_, bytes_per_token_) == 0;
}

// ---------------------------------------------------------------------------------------------

namespace {
}  // namespace

struct PagingEngineKvPager::Impl {
  // One page-out: an engine sequence whose blocks are in the tier.
  struct Run {
    paging::SeqId id = 0;
    std::vector<uint64_t> digests;  // FNV-1a of each block as it left the device, in token order
  };
  struct Paged {
    std::vector<Run> runs;  // in the sequence's token order
    uint64_t blocks = 0;
  };
  std::unique_ptr<paging::PagingEngine> eng;
  std::map<std::pair<SeqId, Tier>, Paged> tiers;
  paging::SeqId next_id = 1;
  uint32_t block_tokens = 0, bytes_per_token = 0, piece = 0;  // piece: one (layer, K/V) of one token
  std::vector<uint8_t> staging;                              // one block in token order
  size_t run_blocks = 256;  // a run grows to this many blocks before a new one starts

  // FNV-1a over block `index` of engine sequence `id` as the engine holds it (each layer's K, V).
  uint64_t digest(paging::SeqId id, size_t index) {
    const auto& sh = eng->shape();
    uint64_t h = 0xcbf29ce484222325ull;
    for (int l = 0; l < sh.layers; ++l)
      for (paging::Kv kv : {paging::Kv::K, paging::Kv::V})
        h = fnv1a(reinterpret_cast<const uint8_t*>(eng->chunk(id, index, l, kv)), sh.chunk_bytes(), h);
    return h;
  }

  // A block of the serving pool (token-major) into block `index` of engine sequence `id`
  // (each token's bytes split over layer 0 K, layer 0 V, layer 1 K, layer 1 V).
  void scatter(const uint8_t* src, paging::SeqId id, size_t index) {
    const auto& sh = eng->shape();
    for (int l = 0; l < sh.layers; ++l)
      for (paging::Kv kv : {paging::Kv::K, paging::Kv::V}) {
        std::byte* dst = eng->chunk(id, index, l, kv);
        size_t at = static_cast<size_t>(l * 2 + static_cast<int>(kv)) * piece;
        for (uint32_t t = 0; t < block_tokens; ++t)
          std::memcpy(dst + static_cast<size_t>(t) * piece, src + static_cast<size_t>(t) * bytes_per_token + at, piece);
      }
  }
  void gather(paging::SeqId id, size_t index, uint8_t* dst) {
    const auto& sh = eng->shape();
    for (int l = 0; l < sh.layers; ++l)
      for (paging::Kv kv : {paging::Kv::K, paging::Kv::V}) {
        const std::byte* src = eng->chunk(id, index, l, kv);
        size_t at = static_cast<size_t>(l * 2 + static_cast<int>(kv)) * piece;
        for (uint32_t t = 0; t < block_tokens; ++t)
          std::memcpy(dst + static_cast<size_t>(t) * bytes_per_token + at, src + static_cast<size_t>(t) * piece, piece);
      }
  }
};

PagingEngineKvPager::PagingEngineKvPager(DeviceKvPool& pool, TierBlocks capacity)
    : pool_(pool), impl_(std::make_unique<Impl>()) {
  if (pool.real_bytes_per_token() % 8 != 0)
    throw InputError(fmt::format("real bytes per token {} is not a multiple of 8 (the paging engine's token is "
                                 "2 layers x K, V x fp16 elements)",
                                 pool.real_bytes_per_token()));
  paging::ModelShape shape;
  shape.layers = 2;
  shape.kv_heads = 1;
  shape.head_size = static_cast<int>(pool.real_bytes_per_token() / 8);
  shape.tokens_per_block = static_cast<int>(pool.block_tokens());
  shape.dtype = paging::DType::F16;
  impl_->block_tokens = pool.block_tokens();
  impl_->bytes_per_token = pool.real_bytes_per_token();
  impl_->piece = pool.real_bytes_per_token() / 4;
  impl_->staging.resize(pool.block_bytes());
  impl_->run_blocks = std::min<size_t>(impl_->run_blocks, pool.blocks());
  // The engine's device pool is the staging area a page-out fills and a page-in empties: at most
  // the whole serving pool moves in one call.
  impl_->eng = std::make_unique<paging::PagingEngine>(
      shape, paging::PoolSizes{pool.blocks(), static_cast<size_t>(capacity.peer), static_cast<size_t>(capacity.host)},
      paging::make_cpu_backend());
}

PagingEngineKvPager::~PagingEngineKvPager() = default;

paging::PagingEngine& PagingEngineKvPager::engine() { return *impl_->eng; }

PageResult PagingEngineKvPager::page_out(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) {
  if (blocks.empty()) return {0, 0, true, ""};
  auto& eng = *impl_->eng;
  auto& p = impl_->tiers[{seq, tier}];
  // A sequence that spills one block at a time appends to its last run while the run is small:
  // the run comes back to staging and only the new blocks are copied out (the engine's dirty
  // tracking), instead of one engine sequence per block.
  // A full tier is refused before anything moves, so that the sequence's paged runs stay as they were.
  paging::BlockPool& dst = eng.pool(tier);
  if (dst.available() < blocks.size()) {
    if (p.runs.empty()) impl_->tiers.erase({seq, tier});
    return {0, 0, false,
            fmt::format("seq {}: page-out of {} blocks to {}: pool '{}' is full: capacity {} blocks, {} free", seq,
                        blocks.size(), tier_name(tier), dst.name(), dst.capacity(), dst.available())};
  }
  const bool append = !p.runs.empty() && p.runs.back().digests.size() + blocks.size() <= impl_->run_blocks;
  Impl::Run fresh;
  Impl::Run& run = append ? p.runs.back() : fresh;
  if (!append) run.id = impl_->next_id++;
  const size_t first = run.digests.size();
  uint64_t moved = 0;
  try {
    if (append) moved += eng.page_in(run.id).bytes_moved;
    eng.allocate(run.id, blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) impl_->scatter(pool_.block(blocks[i]), run.id, first + i);
    std::vector<uint64_t> digests;
    for (size_t i = 0; i < blocks.size(); ++i) digests.push_back(impl_->digest(run.id, first + i));
    moved += eng.page_out(run.id, tier).bytes_moved;
    run.digests.insert(run.digests.end(), digests.begin(), digests.end());
  } catch (const std::exception& e) {
    // Not reached for a full tier (checked above); a new run is dropped, the tier keeps what it had.
    std::string why = fmt::format("seq {}: page-out of {} blocks to {}: {}", seq, blocks.size(), tier_name(tier), e.what());
    if (!append) {
      if (eng.has(run.id)) eng.free(run.id);
      if (p.runs.empty()) impl_->tiers.erase({seq, tier});
    }
    return {0, moved, false, why};
  }
  p.blocks += blocks.size();
  if (!append) p.runs.push_back(std::move(fresh));
  return {blocks.size(), moved, true, ""};
}

PageResult PagingEngineKvPager::page_in(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) {
  auto it = impl_->tiers.find({seq, tier});
  uint64_t have = it == impl_->tiers.end() ? 0 : it->second.blocks;
  if (blocks.size() > have)
    return {0, 0, false,
            fmt::format("seq {}: page-in of {} blocks from {} holding {}", seq, blocks.size(), tier_name(tier), have)};
  if (blocks.empty()) return {0, 0, true, ""};
  auto& eng = *impl_->eng;
  auto& p = it->second;
  PageResult res{blocks.size(), 0, true, ""};
  size_t done = 0;
  try {
    while (done < blocks.size()) {
      Impl::Run& run = p.runs.front();
      res.real_bytes += eng.page_in(run.id).bytes_moved;
      const size_t n = run.digests.size();
      const size_t take = std::min(n, blocks.size() - done);
      for (size_t i = 0; i < take; ++i) {
        impl_->gather(run.id, i, pool_.block(blocks[done + i]));
        if (impl_->digest(run.id, i) != run.digests[i] && res.ok) {
          res.ok = false;
          res.error = fmt::format("seq {}: block {} paged in from {} differs from what was paged out", seq, done + i,
                                  tier_name(tier));
        }
      }
      if (take < n) {
        // Only the front of this run was asked for: the rest becomes a run of its own.
        Impl::Run rest;
        rest.id = impl_->next_id++;
        eng.allocate(rest.id, n - take);
        for (size_t i = take; i < n; ++i) {
          impl_->gather(run.id, i, impl_->staging.data());
          impl_->scatter(impl_->staging.data(), rest.id, i - take);
          rest.digests.push_back(run.digests[i]);
        }
        eng.page_out(rest.id, tier);
        eng.free(run.id);
        run = std::move(rest);
      } else {
        eng.free(run.id);
        p.runs.erase(p.runs.begin());
      }
      done += take;
      p.blocks -= take;
    }
  } catch (const std::exception& e) {
    return {done, res.real_bytes, false,
            fmt::format("seq {}: page-in of {} blocks from {}: {}", seq, blocks.size(), tier_name(tier), e.what())};
  }
  if (p.blocks == 0) impl_->tiers.erase(it);
  return res;
}

PageResult PagingEngineKvPager::fetch(SeqId seq, Tier tier) {
  auto it = impl_->tiers.find({seq, tier});
  if (it == impl_->tiers.end()) return {0, 0, true, ""};
  auto& eng = *impl_->eng;
  PageResult res{it->second.blocks, 0, true, ""};
  size_t index = 0;
  try {
    for (auto& run : it->second.runs) {
      res.real_bytes += eng.page_in(run.id).bytes_moved;
      for (size_t i = 0; i < run.digests.size(); ++i, ++index) {
        if (impl_->digest(run.id, i) != run.digests[i] && res.ok) {
          res.ok = false;
          res.error = fmt::format("seq {}: block {} fetched from {} differs from what was paged out", seq, index,
                                  tier_name(tier));
        }
      }
      // Nothing was written: the engine's dirty tracking copies no bytes back, the tier copy stays.
      eng.page_out(run.id, tier);
    }
  } catch (const std::exception& e) {
    return {index, res.real_bytes, false, fmt::format("seq {}: fetch from {}: {}", seq, tier_name(tier), e.what())};
  }
  return res;
}

void PagingEngineKvPager::discard(SeqId seq, Tier tier) {
  auto it = impl_->tiers.find({seq, tier});
  if (it == impl_->tiers.end()) return;
  for (auto& run : it->second.runs) impl_->eng->free(run.id);
  impl_->tiers.erase(it);
}

uint64_t PagingEngineKvPager::paged_blocks(SeqId seq, Tier tier) const {
  auto it = impl_->tiers.find({seq, tier});
  return it == impl_->tiers.end() ? 0 : it->second.blocks;
}

// ---------------------------------------------------------------------------------------------

int StaticFabricLinks::live_circuits(int, int, double now_s) const {
  return c_.base_circuits + (extra_ > 0 && now_s >= extra_from_s_ ? extra_ : 0);
}

double StaticFabricLinks::request_extra_circuits(int, int, int n, double now_s) {
  int give = std::min(n, c_.max_extra_circuits - extra_);
  if (give <= 0) return now_s;
  // Circuits already granted keep carrying while the new ones settle; the set becomes live together.
  extra_ += give;
  extra_from_s_ = now_s + c_.reconfig_s;
  return extra_from_s_;
}

double StaticFabricLinks::release(int, int, double now_s) {
  if (extra_ == 0) return now_s;
  extra_ = 0;
  return now_s + c_.reconfig_s;
}

}  // namespace mxtb::host::serve
