#include "paging.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>

namespace mxtb::paging {

namespace {
std::string str(size_t v) { return std::to_string(v); }
}  // namespace

size_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }
const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

size_t ModelShape::chunk_bytes() const {
  return static_cast<size_t>(tokens_per_block) * static_cast<size_t>(kv_heads) *
         static_cast<size_t>(head_size) * dtype_bytes(dtype);
}

void ModelShape::validate() const {
  auto positive = [](const char* field, int v) {
    if (v <= 0) throw std::invalid_argument(std::string("model shape: ") + field + " must be positive, got " + std::to_string(v));
  };
  positive("layers", layers);
  positive("kv_heads", kv_heads);
  positive("head_size", head_size);
  positive("tokens_per_block", tokens_per_block);
}

const char* layout_name(Layout l) { return l == Layout::LayerMajor ? "layer-major" : "block-major"; }

size_t chunk_offset(const ModelShape& s, Layout l, size_t pool_blocks, int block, int layer, Kv kv) {
  size_t c = s.chunk_bytes();
  size_t lk = static_cast<size_t>(layer) * 2 + static_cast<size_t>(kv);
  if (l == Layout::LayerMajor) return (lk * pool_blocks + static_cast<size_t>(block)) * c;
  return (static_cast<size_t>(block) * 2 * static_cast<size_t>(s.layers) + lk) * c;
}

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::Device: return "device";
    case Tier::Remote: return "remote";
    case Tier::Host: return "host";
  }
  return "?";
}
Layout tier_layout(Tier t) { return t == Tier::Device ? Layout::LayerMajor : Layout::BlockMajor; }

namespace {
class HostMemory : public Memory {
 public:
  explicit HostMemory(size_t bytes) : size_(bytes) {
    // aligned_alloc wants a size that is a multiple of the alignment.
    size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    data_.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
    if (!data_) throw std::bad_alloc();
    std::memset(data_.get(), 0, rounded);
  }
  std::byte* data() override { return data_.get(); }
  size_t size() const override { return size_; }
  MemoryKind kind() const override { return MemoryKind::Host; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  size_t size_;
  std::unique_ptr<std::byte, Free> data_;
};
}  // namespace

std::unique_ptr<Memory> make_host_memory(size_t bytes) { return std::make_unique<HostMemory>(bytes); }

BlockPool::BlockPool(std::string name, const ModelShape& shape, Layout layout, size_t blocks,
                     std::unique_ptr<Memory> memory)
    : name_(std::move(name)), shape_(shape), layout_(layout), capacity_(blocks), memory_(std::move(memory)),
      used_(blocks, false) {
  shape_.validate();
  if (blocks > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument("pool '" + name_ + "': " + str(blocks) + " blocks is more than a block id holds");
  size_t need = blocks * shape_.block_bytes();
  if (!memory_ || memory_->size() < need)
    throw std::invalid_argument("pool '" + name_ + "': memory of " + str(memory_ ? memory_->size() : 0) +
                                " bytes is smaller than " + str(blocks) + " blocks of " +
                                str(shape_.block_bytes()) + " bytes");
  free_.resize(blocks);
  for (size_t i = 0; i < blocks; ++i) free_[i] = static_cast<int>(blocks - 1 - i);
}

bool BlockPool::in_use(int block) const {
  return block >= 0 && static_cast<size_t>(block) < capacity_ && used_[static_cast<size_t>(block)];
}

std::vector<int> BlockPool::allocate(size_t n) {
  if (n > free_.size())
    throw PoolFullError("pool '" + name_ + "' is full: capacity " + str(capacity_) + " blocks, " + str(used()) +
                        " in use, " + str(free_.size()) + " free, request for " + str(n));
  std::vector<int> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(free_.back());
    free_.pop_back();
    used_[static_cast<size_t>(out.back())] = true;
  }
  return out;
}

void BlockPool::free(const std::vector<int>& blocks) {
  // Check all first, so a bad list frees nothing.
  std::vector<int> sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (!in_use(sorted[i]) || (i && sorted[i] == sorted[i - 1]))
      throw std::invalid_argument("pool '" + name_ + "': free of block " + std::to_string(sorted[i]) +
                                  ", which is not in use (capacity " + str(capacity_) + ")");
  }
  for (int b : sorted) used_[static_cast<size_t>(b)] = false;
  free_.insert(free_.end(), sorted.begin(), sorted.end());
  std::sort(free_.begin(), free_.end(), std::greater<int>());
}

size_t CopyPlan::bytes() const {
  size_t n = 0;
  for (const auto& d : descs) n += d.bytes;
  return n;
}

CopyPlan build_plan(BlockPool& src, const std::vector<int>& src_blocks, BlockPool& dst,
                    const std::vector<int>& dst_blocks, bool by_layer) {
  if (src_blocks.size() != dst_blocks.size())
    throw std::invalid_argument("build_plan: " + str(src_blocks.size()) + " source blocks for " +
                                str(dst_blocks.size()) + " destination blocks");
  const ModelShape& s = src.shape();
  if (s.chunk_bytes() != dst.shape().chunk_bytes() || s.layers != dst.shape().layers)
    throw std::invalid_argument("build_plan: pools '" + src.name() + "' and '" + dst.name() + "' hold different model shapes");
  for (size_t i = 0; i < src_blocks.size(); ++i) {
    if (!src.in_use(src_blocks[i]))
      throw std::invalid_argument("build_plan: block " + std::to_string(src_blocks[i]) + " of pool '" + src.name() + "' is not allocated");
    if (!dst.in_use(dst_blocks[i]))
      throw std::invalid_argument("build_plan: block " + std::to_string(dst_blocks[i]) + " of pool '" + dst.name() + "' is not allocated");
  }
  CopyPlan plan;
  plan.src_base = src.data();
  plan.dst_base = dst.data();
  size_t c = s.chunk_bytes();
  auto emit = [&](size_t i, int layer, Kv kv) {
    uint64_t so = src.offset(src_blocks[i], layer, kv), d = dst.offset(dst_blocks[i], layer, kv);
    if (!plan.descs.empty()) {
      CopyDesc& last = plan.descs.back();
      if (last.src + last.bytes == so && last.dst + last.bytes == d && (!by_layer || last.layer == layer)) {
        last.bytes += c;
        return;
      }
    }
    plan.descs.push_back({so, d, c, layer});
  };
  // Walk in the destination's order so writes are sequential and merges happen where the source
  // is contiguous too; page-in by layer walks layer by layer whatever the layout.
  if (by_layer || dst.layout() == Layout::LayerMajor) {
    for (int l = 0; l < s.layers; ++l)
      for (Kv kv : {Kv::K, Kv::V})
        for (size_t i = 0; i < src_blocks.size(); ++i) emit(i, l, kv);
  } else {
    for (size_t i = 0; i < src_blocks.size(); ++i)
      for (int l = 0; l < s.layers; ++l)
        for (Kv kv : {Kv::K, Kv::V}) emit(i, l, kv);
  }
  return plan;
}

namespace {
class CpuBackend : public CopyBackend {
 public:
  std::string name() const override { return "cpu"; }
  void copy(const CopyPlan& plan) override {
    for (const auto& d : plan.descs) std::memcpy(plan.dst_base + d.dst, plan.src_base + d.src, d.bytes);
  }
  void wait() override {}
};
}  // namespace

std::unique_ptr<CopyBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

int Crossover::choose(size_t bytes, size_t count) const {
  int best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  auto lg = [](size_t v) { return std::log2(static_cast<double>(std::max<size_t>(v, 1))); };
  for (const auto& c : cells_) {
    double db = lg(bytes) - lg(c.bytes), dc = lg(count) - lg(c.count);
    double d = db * db + dc * dc;
    if (d < best_d) {
      best_d = d;
      best = c.best;
    }
  }
  return best;
}

Crossover measure_crossover(const std::vector<CopyBackend*>& backends, Memory& src, Memory& dst,
                            const std::vector<size_t>& sizes, const std::vector<size_t>& counts, int reps) {
  Crossover x;
  for (size_t size : sizes) {
    for (size_t count : counts) {
      if (size * count > src.size() || size * count > dst.size()) continue;
      CopyPlan plan;
      plan.src_base = src.data();
      plan.dst_base = dst.data();
      // A scattered source (a stride that visits every slot once) against a packed destination.
      size_t stride = count > 2 ? count / 2 + 1 : 1;
      while (std::gcd(stride, count) != 1) ++stride;
      for (size_t i = 0; i < count; ++i) plan.descs.push_back({(i * stride % count) * size, i * size, size, 0});
      double best_t = std::numeric_limits<double>::infinity();
      int best = 0;
      for (size_t b = 0; b < backends.size(); ++b) {
        backends[b]->copy(plan);  // warm-up
        backends[b]->wait();
        for (int r = 0; r < reps; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          backends[b]->copy(plan);
          backends[b]->wait();
          double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (t < best_t) {
            best_t = t;
            best = static_cast<int>(b);
          }
        }
      }
      x.add(size, count, best);
    }
  }
  return x;
}

AutoBackend::AutoBackend(std::vector<std::unique_ptr<CopyBackend>> backends, Crossover crossover)
    : backends_(std::move(backends)), crossover_(std::move(crossover)) {
  if (backends_.empty()) throw std::invalid_argument("AutoBackend: no backends");
}

void AutoBackend::copy(const CopyPlan& plan) {
  if (plan.descs.empty()) return;
  size_t mean = plan.bytes() / plan.descs.size();
  int i = crossover_.choose(mean, plan.descs.size());
  if (i < 0 || static_cast<size_t>(i) >= backends_.size()) i = 0;
  last_ = backends_[static_cast<size_t>(i)]->name();
  backends_[static_cast<size_t>(i)]->copy(plan);
}

void AutoBackend::wait() {
  for (auto& b : backends_) b->wait();
}

MemoryFactory host_memory_factory() {
  return [](Tier, size_t bytes) { return make_host_memory(bytes); };
}

PagingEngine::PagingEngine(const ModelShape& shape, const PoolSizes& sizes, std::unique_ptr<CopyBackend> backend,
                           MemoryFactory memory)
    : shape_(shape), backend_(std::move(backend)) {
  shape_.validate();
  if (!backend_) throw std::invalid_argument("PagingEngine: no copy backend");
  for (auto [tier, n] : {std::pair{Tier::Device, sizes.device_blocks}, std::pair{Tier::Remote, sizes.remote_blocks},
                         std::pair{Tier::Host, sizes.host_blocks}}) {
    pools_[tier] = std::make_unique<BlockPool>(tier_name(tier), shape_, tier_layout(tier), n,
                                               memory(tier, std::max<size_t>(n * shape_.block_bytes(), 64)));
  }
}

BlockPool& PagingEngine::pool(Tier t) { return *pools_.at(t); }

PagingEngine::Seq& PagingEngine::get(SeqId seq, const char* what) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) throw std::invalid_argument(std::string(what) + ": no sequence " + std::to_string(seq));
  return it->second;
}
const PagingEngine::Seq& PagingEngine::get(SeqId seq, const char* what) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) throw std::invalid_argument(std::string(what) + ": no sequence " + std::to_string(seq));
  return it->second;
}

const std::vector<int>& PagingEngine::allocate(SeqId seq, size_t blocks) {
  auto it = seqs_.find(seq);
  if (it != seqs_.end() && !resident(seq))
    throw std::invalid_argument("allocate: sequence " + std::to_string(seq) + " is paged out to " +
                                tier_name(it->second.copy_tier) + "; page it in first");
  std::vector<int> got = pool(Tier::Device).allocate(blocks);  // throws before anything changes
  Seq& s = seqs_[seq];
  s.device.insert(s.device.end(), got.begin(), got.end());
  s.dirty.resize(s.device.size(), true);
  return s.device;
}

bool PagingEngine::resident(SeqId seq) const {
  const Seq& s = get(seq, "resident");
  return !s.out;
}

const std::vector<int>& PagingEngine::block_table(SeqId seq) const {
  if (!resident(seq)) throw std::invalid_argument("block_table: sequence " + std::to_string(seq) + " is paged out");
  return get(seq, "block_table").device;
}

void PagingEngine::mark_dirty(SeqId seq, size_t index) {
  Seq& s = get(seq, "mark_dirty");
  if (index >= s.device.size())
    throw std::invalid_argument("mark_dirty: sequence " + std::to_string(seq) + " has " + str(s.device.size()) +
                                " resident blocks, no index " + str(index));
  s.dirty[index] = true;
}

PageResult PagingEngine::page_out(SeqId seq, Tier to) {
  if (to == Tier::Device) throw std::invalid_argument("page_out: the target tier must be remote or host, not device");
  Seq& s = get(seq, "page_out");
  if (!resident(seq)) throw std::invalid_argument("page_out: sequence " + std::to_string(seq) + " is already paged out");
  BlockPool& dst = pool(to);
  bool reuse = s.has_copy && s.copy_tier == to;
  size_t keep = reuse ? std::min(s.copy.size(), s.device.size()) : 0;
  size_t need = s.device.size() - keep;
  std::vector<int> extra = dst.allocate(need);  // throws before anything changes
  std::vector<int> copy(s.copy.begin(), s.copy.begin() + static_cast<std::ptrdiff_t>(keep));
  copy.insert(copy.end(), extra.begin(), extra.end());
  std::vector<int> from, into;
  PageResult r;
  for (size_t i = 0; i < s.device.size(); ++i) {
    if (i < keep && !s.dirty[i]) {
      ++r.blocks_skipped;
      continue;
    }
    from.push_back(s.device[i]);
    into.push_back(copy[i]);
  }
  CopyPlan plan = build_plan(pool(Tier::Device), from, dst, into);
  backend_->copy(plan);
  backend_->wait();  // the device blocks are reused as soon as they are freed
  r.blocks_copied = from.size();
  r.bytes_moved = plan.bytes();
  r.descriptors = plan.descs.size();
  // Copies no longer current: the old tier's, or the tail of a longer one.
  if (s.has_copy && !reuse) pool(s.copy_tier).free(s.copy);
  if (reuse && s.copy.size() > keep) dst.free(std::vector<int>(s.copy.begin() + static_cast<std::ptrdiff_t>(keep), s.copy.end()));
  pool(Tier::Device).free(s.device);
  s.device.clear();
  s.copy = std::move(copy);
  s.copy_tier = to;
  s.has_copy = true;
  s.out = true;
  s.dirty.assign(s.copy.size(), false);
  return r;
}

PageResult PagingEngine::page_in(SeqId seq, const std::function<void(int)>& on_layer) {
  Seq& s = get(seq, "page_in");
  if (resident(seq)) throw std::invalid_argument("page_in: sequence " + std::to_string(seq) + " is not paged out");
  std::vector<int> got = pool(Tier::Device).allocate(s.copy.size());
  CopyPlan plan = build_plan(pool(s.copy_tier), s.copy, pool(Tier::Device), got, static_cast<bool>(on_layer));
  PageResult r;
  r.bytes_moved = plan.bytes();
  r.blocks_copied = s.copy.size();
  r.descriptors = plan.descs.size();
  // The new table is in place before the copies start, so on_layer can already read it.
  s.device = got;
  s.out = false;
  s.dirty.assign(s.device.size(), false);
  try {
    if (on_layer) {
      size_t i = 0;
      for (int l = 0; l < shape_.layers; ++l) {
        CopyPlan part{plan.src_base, plan.dst_base, {}};
        while (i < plan.descs.size() && plan.descs[i].layer == l) part.descs.push_back(plan.descs[i++]);
        backend_->copy(part);
        on_layer(l);
      }
    } else {
      backend_->copy(plan);
    }
    backend_->wait();
  } catch (...) {
    backend_->wait();
    s.device.clear();
    s.out = true;
    pool(Tier::Device).free(got);
    throw;
  }
  return r;
}

void PagingEngine::free(SeqId seq) {
  Seq& s = get(seq, "free");
  if (!s.device.empty()) pool(Tier::Device).free(s.device);
  if (s.has_copy) pool(s.copy_tier).free(s.copy);
  seqs_.erase(seq);
}

std::byte* PagingEngine::chunk(SeqId seq, size_t index, int layer, Kv kv) {
  BlockPool& dev = pool(Tier::Device);
  if (!dev.memory().host_accessible())
    throw std::invalid_argument("chunk: the device pool is not host memory; copy it out first");
  const std::vector<int>& t = block_table(seq);
  if (index >= t.size() || layer < 0 || layer >= shape_.layers)
    throw std::invalid_argument("chunk: sequence " + std::to_string(seq) + " has no block " + str(index) +
                                " layer " + std::to_string(layer));
  return dev.data() + dev.offset(t[index], layer, kv);
}

}  // namespace mxtb::paging
