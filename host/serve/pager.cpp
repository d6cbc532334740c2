// The seams' stand-ins: host-memory tiers for KvPager, constants for FabricLinks.
#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "host/serve/serve.h"

namespace mxtb::host::serve {

const char* tier_name(Tier t) { return t == Tier::kHost ? "host" : "peer"; }

Policy policy_by_name(const std::string& name) {
  if (name == "fcfs") return Policy::kFcfs;
  if (name == "recompute") return Policy::kRecompute;
  if (name == "aqua-host") return Policy::kAquaHost;
  if (name == "aqua-fabric") return Policy::kAquaFabric;
  throw InputError(fmt::format("unknown policy '{}': expected fcfs, recompute, aqua-host or aqua-fabric", name));
}

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kFcfs: return "fcfs";
    case Policy::kRecompute: return "recompute";
    case Policy::kAquaHost: return "aqua-host";
    case Policy::kAquaFabric: return "aqua-fabric";
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
uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
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

struct HostMemoryKvPager::Impl {
  struct Paged {
    std::vector<uint8_t> bytes;     // blocks back to back, in the sequence's token order
    std::vector<uint64_t> digests;  // FNV-1a of each block as it left the device
  };
  std::map<std::pair<SeqId, Tier>, Paged> tiers;
  std::vector<uint8_t> staging;
};

HostMemoryKvPager::HostMemoryKvPager(DeviceKvPool& pool) : pool_(pool), impl_(std::make_unique<Impl>()) {}
HostMemoryKvPager::~HostMemoryKvPager() = default;

PageResult HostMemoryKvPager::page_out(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) {
  auto& p = impl_->tiers[{seq, tier}];
  const size_t bb = pool_.block_bytes();
  size_t at = p.bytes.size();
  p.bytes.resize(at + blocks.size() * bb);
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::memcpy(p.bytes.data() + at + i * bb, pool_.block(blocks[i]), bb);
    p.digests.push_back(fnv1a(pool_.block(blocks[i]), bb));
  }
  return {blocks.size(), blocks.size() * bb, true, ""};
}

PageResult HostMemoryKvPager::page_in(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) {
  auto it = impl_->tiers.find({seq, tier});
  size_t have = it == impl_->tiers.end() ? 0 : it->second.digests.size();
  if (blocks.size() > have)
    return {0, 0, false,
            fmt::format("seq {}: page-in of {} blocks from {} holding {}", seq, blocks.size(), tier_name(tier), have)};
  auto& p = it->second;
  const size_t bb = pool_.block_bytes();
  PageResult r{blocks.size(), blocks.size() * bb, true, ""};
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::memcpy(pool_.block(blocks[i]), p.bytes.data() + i * bb, bb);
    if (fnv1a(pool_.block(blocks[i]), bb) != p.digests[i] && r.ok) {
      r.ok = false;
      r.error = fmt::format("seq {}: block {} paged in from {} differs from what was paged out", seq, i, tier_name(tier));
    }
  }
  p.bytes.erase(p.bytes.begin(), p.bytes.begin() + static_cast<std::ptrdiff_t>(blocks.size() * bb));
  p.digests.erase(p.digests.begin(), p.digests.begin() + static_cast<std::ptrdiff_t>(blocks.size()));
  if (p.digests.empty()) impl_->tiers.erase(it);
  return r;
}

PageResult HostMemoryKvPager::fetch(SeqId seq, Tier tier) {
  auto it = impl_->tiers.find({seq, tier});
  if (it == impl_->tiers.end()) return {0, 0, true, ""};
  auto& p = it->second;
  const size_t bb = pool_.block_bytes();
  impl_->staging.resize(p.bytes.size());
  std::memcpy(impl_->staging.data(), p.bytes.data(), p.bytes.size());
  PageResult r{p.digests.size(), p.bytes.size(), true, ""};
  for (size_t i = 0; i < p.digests.size(); ++i)
    if (fnv1a(impl_->staging.data() + i * bb, bb) != p.digests[i]) {
      r.ok = false;
      r.error = fmt::format("seq {}: block {} fetched from {} differs from what was paged out", seq, i, tier_name(tier));
      break;
    }
  return r;
}

void HostMemoryKvPager::discard(SeqId seq, Tier tier) { impl_->tiers.erase({seq, tier}); }

uint64_t HostMemoryKvPager::paged_blocks(SeqId seq, Tier tier) const {
  auto it = impl_->tiers.find({seq, tier});
  return it == impl_->tiers.end() ? 0 : it->second.digests.size();
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
  ++reconfigs_;
  return extra_from_s_;
}

void StaticFabricLinks::release(int, int, double) {
  if (extra_ == 0) return;
  extra_ = 0;
  ++reconfigs_;
}

}  // namespace mxtb::host::serve
