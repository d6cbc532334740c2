// The paging engine's public interface: KV block pools in memory tiers, block tables per sequence,
// copy descriptors, dirty tracking and copy backends. Plain C++: it builds and runs without CUDA,
// where the CPU backend (memcpy) moves the bytes between host-memory stand-ins for every tier.
// The CUDA backends (cuda/paging_cuda.h) implement the same CopyBackend. See docs/paging.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::paging {

enum class DType { F32, F16, BF16 };
size_t dtype_bytes(DType t);
const char* dtype_name(DType t);

// One model's KV cache geometry. A block holds `tokens_per_block` tokens of every layer, K and V.
struct ModelShape {
  int layers = 1;
  int kv_heads = 1;
  int head_size = 64;
  int tokens_per_block = 16;
  DType dtype = DType::F16;

  // Bytes of one (layer, K or V, block): tokens × heads × head size × element.
  size_t chunk_bytes() const;
  // Bytes of one block across all layers, K and V.
  size_t block_bytes() const { return chunk_bytes() * 2 * static_cast<size_t>(layers); }
  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

enum class Kv { K = 0, V = 1 };

// Where a pool's bytes sit relative to each other.
//   LayerMajor (the device pool, what attention reads): offset = ((layer*2 + kv)*blocks + block) * chunk
//   BlockMajor (remote and host tiers): offset = (block*layers*2 + layer*2 + kv) * chunk, so one
//     block's layers lie together and a block pages as one contiguous run.
enum class Layout { LayerMajor, BlockMajor };
const char* layout_name(Layout l);
size_t chunk_offset(const ModelShape& s, Layout l, size_t pool_blocks, int block, int layer, Kv kv);

enum class Tier { Device, Remote, Host };
const char* tier_name(Tier t);
Layout tier_layout(Tier t);

// Raw storage of one pool. Host memory on the CPU path; device, peer or pinned memory on a GPU.
enum class MemoryKind { Host, Pinned, Device };
class Memory {
 public:
  virtual ~Memory() = default;
  virtual std::byte* data() = 0;
  virtual size_t size() const = 0;
  virtual MemoryKind kind() const = 0;
  virtual int device() const { return -1; }
  // True when the CPU may read and write data() directly.
  bool host_accessible() const { return kind() != MemoryKind::Device; }
};
// 64-byte aligned host memory, zero-filled.
std::unique_ptr<Memory> make_host_memory(size_t bytes);

// Thrown when a pool cannot satisfy an allocation; the message names the pool, its capacity and the request.
struct PoolFullError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A fixed number of KV blocks in one tier, with allocation accounting. Blocks are handed out
// lowest-id first so runs stay contiguous where they can.
class BlockPool {
 public:
  BlockPool(std::string name, const ModelShape& shape, Layout layout, size_t blocks,
            std::unique_ptr<Memory> memory);
  const std::string& name() const { return name_; }
  const ModelShape& shape() const { return shape_; }
  Layout layout() const { return layout_; }
  size_t capacity() const { return capacity_; }
  size_t used() const { return capacity_ - free_.size(); }
  size_t available() const { return free_.size(); }
  bool in_use(int block) const;

  std::vector<int> allocate(size_t n);  // PoolFullError when fewer than n are free; takes nothing then
  void free(const std::vector<int>& blocks);  // std::invalid_argument on a block not in use

  size_t offset(int block, int layer, Kv kv) const { return chunk_offset(shape_, layout_, capacity_, block, layer, kv); }
  Memory& memory() { return *memory_; }
  std::byte* data() { return memory_->data(); }

 private:
  std::string name_;
  ModelShape shape_;
  Layout layout_;
  size_t capacity_;
  std::unique_ptr<Memory> memory_;
  std::vector<int> free_;  // kept sorted descending, so back() is the lowest free id
  std::vector<bool> used_;
};

// One contiguous copy: bytes from src_base+src to dst_base+dst. Offsets and sizes are multiples of
// 16 whenever the chunk size is, which the gather kernel's 16-byte vectors rely on.
struct CopyDesc {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t bytes = 0;
  int layer = 0;  // the layer whose bytes these are (after merging: the first); groups page-in by layer
};
struct CopyPlan {
  std::byte* src_base = nullptr;
  std::byte* dst_base = nullptr;
  std::vector<CopyDesc> descs;
  size_t bytes() const;
};
// Descriptors that copy block src_blocks[i] of `src` to dst_blocks[i] of `dst`, all layers, K and V,
// ordered by layer then block. Adjacent descriptors that are contiguous in both pools are merged
// unless `by_layer` (which keeps layers apart for layer-by-layer page-in).
CopyPlan build_plan(BlockPool& src, const std::vector<int>& src_blocks, BlockPool& dst,
                    const std::vector<int>& dst_blocks, bool by_layer = false);

// A way of executing a CopyPlan. copy() enqueues and may return before the bytes have moved;
// wait() returns when everything enqueued has completed. No host sync per descriptor.
class CopyBackend {
 public:
  virtual ~CopyBackend() = default;
  virtual std::string name() const = 0;
  virtual void copy(const CopyPlan& plan) = 0;
  virtual void wait() = 0;
};
// The oracle and the CI path: one memcpy per descriptor on the calling thread.
std::unique_ptr<CopyBackend> make_cpu_backend();

// Which backend is fastest for a plan of `count` descriptors of about `bytes` each, from a table of
// measured cells; the nearest cell on a log scale decides.
class Crossover {
 public:
  void add(size_t bytes, size_t count, int best_backend) { cells_.push_back({bytes, count, best_backend}); }
  int choose(size_t bytes, size_t count) const;  // 0 when the table is empty
  bool empty() const { return cells_.empty(); }
 private:
  struct Cell { size_t bytes, count; int best; };
  std::vector<Cell> cells_;
};
// Times each backend (best of `reps`) on src→dst copies of every (size, count) cell that fits in
// both memories and records the fastest in a Crossover.
Crossover measure_crossover(const std::vector<CopyBackend*>& backends, Memory& src, Memory& dst,
                            const std::vector<size_t>& sizes, const std::vector<size_t>& counts, int reps = 3);
// Runs each plan on the backend that the crossover picks for its mean descriptor size and count.
class AutoBackend : public CopyBackend {
 public:
  AutoBackend(std::vector<std::unique_ptr<CopyBackend>> backends, Crossover crossover);
  std::string name() const override { return "auto"; }
  void copy(const CopyPlan& plan) override;
  void wait() override;
  const std::string& last_choice() const { return last_; }
 private:
  std::vector<std::unique_ptr<CopyBackend>> backends_;
  Crossover crossover_;
  std::string last_;
};

// What a page-out or page-in did.
struct PageResult {
  size_t bytes_moved = 0;
  size_t blocks_copied = 0;
  size_t blocks_skipped = 0;  // clean blocks whose copy in the tier was already current
  size_t descriptors = 0;
};

struct PoolSizes {
  size_t device_blocks = 0;
  size_t remote_blocks = 0;
  size_t host_blocks = 0;
};
// Makes each tier's memory; the default gives host memory for all three (the CPU path).
using MemoryFactory = std::function<std::unique_ptr<Memory>(Tier, size_t bytes)>;
MemoryFactory host_memory_factory();

using SeqId = uint64_t;

// Pools for one model in three tiers, sequences' block tables, and paging between tiers.
// A sequence lives in the device pool, or is paged out to Remote or Host. Paging in keeps the tier
// copy; blocks written afterwards (mark_dirty, or new blocks) are the only ones the next page-out to
// the same tier copies.
class PagingEngine {
 public:
  PagingEngine(const ModelShape& shape, const PoolSizes& sizes, std::unique_ptr<CopyBackend> backend,
               MemoryFactory memory = host_memory_factory());

  const ModelShape& shape() const { return shape_; }
  BlockPool& pool(Tier t);
  CopyBackend& backend() { return *backend_; }

  // Adds device blocks to a sequence (creating it); new blocks are dirty. PoolFullError when the
  // device pool is short.
  const std::vector<int>& allocate(SeqId seq, size_t blocks);
  // Device block table of a resident sequence.
  const std::vector<int>& block_table(SeqId seq) const;
  bool resident(SeqId seq) const;
  bool has(SeqId seq) const { return seqs_.count(seq) != 0; }
  // Records that the caller wrote block `index` (position in the block table) since the last page.
  void mark_dirty(SeqId seq, size_t index);
  // Moves a resident sequence to `to` (Remote or Host) and frees its device blocks; only dirty
  // blocks are copied when the tier still holds a copy from the last page-in.
  PageResult page_out(SeqId seq, Tier to);
  // Brings a paged-out sequence back into new device blocks. `on_layer` (optional) is called once
  // per layer after that layer's copies are enqueued, in layer order, so a GPU caller can record an
  // event and start using layer i while later layers are still in flight; block_table(seq) already
  // gives the new table inside it. Returns when every copy has completed.
  PageResult page_in(SeqId seq, const std::function<void(int layer)>& on_layer = {});
  // Releases the sequence's blocks in every tier.
  void free(SeqId seq);
  // Host pointer to one (block index, layer, K/V) chunk of a resident sequence; the device pool must
  // be host memory (the CPU path).
  std::byte* chunk(SeqId seq, size_t index, int layer, Kv kv);

 private:
  struct Seq {
    std::vector<int> device;  // empty when paged out
    std::vector<bool> dirty;  // per block index, relative to the tier copy
    bool out = false;  // paged out: no device blocks, the tier copy is the data
    bool has_copy = false;
    Tier copy_tier = Tier::Remote;
    std::vector<int> copy;  // blocks in copy_tier
  };
  Seq& get(SeqId seq, const char* what);
  const Seq& get(SeqId seq, const char* what) const;
  ModelShape shape_;
  std::unique_ptr<CopyBackend> backend_;
  std::map<Tier, std::unique_ptr<BlockPool>> pools_;
  std::map<SeqId, Seq> seqs_;
};

}  // namespace mxtb::paging
