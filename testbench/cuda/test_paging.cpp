// The paging engine's CPU path: pool accounting, layouts, descriptors, dirty tracking, round trips,
// errors, the crossover choice, and paged attention before and after paging.
#include "pattern.h"

#include "cuda/paged_attention.h"
#include "cuda/paging.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

using namespace mxtb::paging;
using mxtb::paging::test::chunk_image;
using mxtb::paging::test::chunk_seed;
using mxtb::paging::test::fill_chunk;

namespace {

const ModelShape kShape{3, 2, 16, 4, DType::F16};  // chunk 256 B, block 1536 B

BlockPool make_pool(const char* name, Layout l, size_t blocks, const ModelShape& s = kShape) {
  return BlockPool(name, s, l, blocks, make_host_memory(blocks * s.block_bytes()));
}

void fill_seq(PagingEngine& e, SeqId seq, uint64_t salt = 0) {
  for (size_t i = 0; i < e.block_table(seq).size(); ++i)
    for (int l = 0; l < e.shape().layers; ++l)
      for (Kv kv : {Kv::K, Kv::V}) fill_chunk(e.chunk(seq, i, l, kv), e.shape(), chunk_seed(seq, i, l, kv, salt));
}

// Counts chunks that differ from the pattern (0: bit-exact).
size_t check_seq(PagingEngine& e, SeqId seq, uint64_t salt = 0) {
  size_t bad = 0;
  for (size_t i = 0; i < e.block_table(seq).size(); ++i)
    for (int l = 0; l < e.shape().layers; ++l)
      for (Kv kv : {Kv::K, Kv::V}) {
        auto want = chunk_image(e.shape(), chunk_seed(seq, i, l, kv, salt));
        if (std::memcmp(e.chunk(seq, i, l, kv), want.data(), want.size()) != 0) ++bad;
      }
  return bad;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("shape sizes and validation") {
  CHECK(kShape.chunk_bytes() == 4 * 2 * 16 * 2);
  CHECK(kShape.block_bytes() == kShape.chunk_bytes() * 2 * 3);
  ModelShape bad = kShape;
  bad.head_size = 0;
  CHECK(error_of([&] { bad.validate(); }).find("head_size must be positive, got 0") != std::string::npos);
}

TEST_CASE("layouts: offsets tile the pool exactly, block-major keeps a block contiguous") {
  const size_t blocks = 5, c = kShape.chunk_bytes();
  for (Layout l : {Layout::LayerMajor, Layout::BlockMajor}) {
    std::set<size_t> offs;
    for (int b = 0; b < static_cast<int>(blocks); ++b)
      for (int layer = 0; layer < kShape.layers; ++layer)
        for (Kv kv : {Kv::K, Kv::V}) {
          size_t o = chunk_offset(kShape, l, blocks, b, layer, kv);
          CHECK(o % c == 0);
          CHECK(o + c <= blocks * kShape.block_bytes());
          offs.insert(o);
        }
    CHECK(offs.size() == blocks * 2 * static_cast<size_t>(kShape.layers));
  }
  // The formulas in docs/paging.md.
  CHECK(chunk_offset(kShape, Layout::LayerMajor, blocks, 3, 2, Kv::V) == ((2 * 2 + 1) * blocks + 3) * c);
  CHECK(chunk_offset(kShape, Layout::BlockMajor, blocks, 3, 2, Kv::V) == (3 * 2 * 3 + 2 * 2 + 1) * c);
  CHECK(chunk_offset(kShape, Layout::BlockMajor, blocks, 4, 0, Kv::K) == 4 * kShape.block_bytes());
}

TEST_CASE("pool accounting: lowest ids first, free returns them, full pool names itself") {
  BlockPool p = make_pool("remote", Layout::BlockMajor, 8);
  CHECK(p.capacity() == 8);
  auto a = p.allocate(3);
  CHECK(a == std::vector<int>{0, 1, 2});
  auto b = p.allocate(2);
  CHECK(b == std::vector<int>{3, 4});
  CHECK(p.used() == 5);
  CHECK(p.available() == 3);
  p.free({1, 0});
  CHECK(p.used() == 3);
  CHECK(p.allocate(1) == std::vector<int>{0});
  std::string e = error_of([&] { p.allocate(5); });
  CHECK(e == "pool 'remote' is full: capacity 8 blocks, 4 in use, 4 free, request for 5");
  CHECK(p.used() == 4);  // a failed request takes nothing
  CHECK_THROWS_AS(p.allocate(5), PoolFullError);
  CHECK(error_of([&] { p.free({1}); }).find("free of block 1, which is not in use") != std::string::npos);
  CHECK(error_of([&] { p.free({2, 2}); }).find("free of block 2") != std::string::npos);
  CHECK(p.in_use(2));  // the bad free changed nothing
  CHECK(error_of([&] { p.free({99}); }).find("block 99") != std::string::npos);
}

TEST_CASE("pool memory must hold its blocks") {
  CHECK(error_of([] { BlockPool("device", kShape, Layout::LayerMajor, 4, make_host_memory(100)); })
            .find("pool 'device': memory of 100 bytes is smaller than 4 blocks") != std::string::npos);
}

TEST_CASE("descriptors: layer-major to block-major, one contiguous run per block") {
  BlockPool dev = make_pool("device", Layout::LayerMajor, 6), rem = make_pool("remote", Layout::BlockMajor, 6);
  dev.allocate(6);
  rem.allocate(6);
  CopyPlan p = build_plan(dev, {4, 1}, rem, {2, 3});
  const size_t c = kShape.chunk_bytes();
  REQUIRE(p.descs.size() == 2 * 2 * 3);  // nothing merges: the source chunks are apart
  CHECK(p.bytes() == 2 * kShape.block_bytes());
  // In the destination's order: block 2's chunks fill [2*block, 3*block) in order, then block 3's.
  for (size_t k = 0; k < p.descs.size(); ++k) {
    CHECK(p.descs[k].dst == 2 * kShape.block_bytes() + k * c);
    CHECK(p.descs[k].bytes == c);
  }
  CHECK(p.descs[0].src == dev.offset(4, 0, Kv::K));
  CHECK(p.descs[1].src == dev.offset(4, 0, Kv::V));
  CHECK(p.descs[6].src == dev.offset(1, 0, Kv::K));
  CHECK(p.descs[5].layer == 2);
}

TEST_CASE("descriptors: contiguous runs merge, by_layer keeps layers apart") {
  BlockPool rem = make_pool("remote", Layout::BlockMajor, 8), host = make_pool("host", Layout::BlockMajor, 8);
  rem.allocate(8);
  host.allocate(8);
  CopyPlan p = build_plan(rem, {2, 3, 4, 7}, host, {0, 1, 2, 5});
  REQUIRE(p.descs.size() == 2);  // blocks 2-4 → 0-2 one run, 7 → 5 another
  CHECK(p.descs[0].bytes == 3 * kShape.block_bytes());
  CHECK(p.descs[1].src == 7 * kShape.block_bytes());
  BlockPool dev = make_pool("device", Layout::LayerMajor, 8);
  dev.allocate(8);
  // Device blocks 4, 5 are adjacent in every layer, but remote blocks 2, 3 are a whole block apart
  // per chunk, so nothing merges; by_layer orders the table layer by layer.
  CopyPlan q = build_plan(rem, {2, 3}, dev, {4, 5}, true);
  CHECK(q.descs.size() == 2 * 3 * 2);
  for (size_t k = 0; k < q.descs.size(); ++k) CHECK(q.descs[k].layer == static_cast<int>(k / 4));
  // Device to device (same layout): consecutive blocks merge within each layer and K/V.
  BlockPool dev2 = make_pool("device2", Layout::LayerMajor, 8);
  dev2.allocate(8);
  CopyPlan r = build_plan(dev, {0, 1, 2}, dev2, {5, 6, 7});
  CHECK(r.descs.size() == 3 * 2);
  for (const auto& d : r.descs) CHECK(d.bytes == 3 * kShape.chunk_bytes());
}

TEST_CASE("descriptors: bad inputs are named") {
  BlockPool dev = make_pool("device", Layout::LayerMajor, 4), rem = make_pool("remote", Layout::BlockMajor, 4);
  dev.allocate(2);
  rem.allocate(2);
  CHECK(error_of([&] { build_plan(dev, {0, 1}, rem, {0}); }) == "build_plan: 2 source blocks for 1 destination blocks");
  CHECK(error_of([&] { build_plan(dev, {3}, rem, {0}); }) == "build_plan: block 3 of pool 'device' is not allocated");
  ModelShape other = kShape;
  other.layers = 2;
  BlockPool o = make_pool("other", Layout::BlockMajor, 4, other);
  o.allocate(1);
  CHECK(error_of([&] { build_plan(dev, {0}, o, {0}); }).find("hold different model shapes") != std::string::npos);
}

TEST_CASE("round trips are bit-exact for random block sets, shapes and dtypes") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 12; ++trial) {
    ModelShape s{1 + static_cast<int>(rng() % 4), 1 + static_cast<int>(rng() % 3), 8 * (1 + static_cast<int>(rng() % 8)),
                 1 + static_cast<int>(rng() % 8), static_cast<DType>(rng() % 3)};
    CAPTURE(trial);
    PagingEngine e(s, {40, 40, 40}, make_cpu_backend());
    // Interleaved sequences and frees leave the free lists scattered, so tables are not runs.
    std::vector<SeqId> seqs;
    for (SeqId q = 1; q <= 6; ++q) {
      e.allocate(q, 1 + rng() % 5);
      seqs.push_back(q);
    }
    e.free(2);
    e.free(5);
    e.allocate(3, 2);
    e.allocate(7, 4);
    seqs = {1, 3, 4, 6, 7};
    for (SeqId q : seqs) fill_seq(e, q);
    for (SeqId q : seqs) e.page_out(q, rng() % 2 ? Tier::Remote : Tier::Host);
    CHECK(e.pool(Tier::Device).used() == 0);
    // Scribble over the whole device pool so nothing stale can pass for data.
    std::memset(e.pool(Tier::Device).data(), 0xEE, e.pool(Tier::Device).memory().size());
    std::shuffle(seqs.begin(), seqs.end(), rng);
    for (SeqId q : seqs) {
      PageResult r = e.page_in(q);
      CHECK(r.bytes_moved == e.block_table(q).size() * s.block_bytes());
      CHECK(check_seq(e, q) == 0);
    }
  }
}

TEST_CASE("K and V are distinct and a swapped or shifted chunk is caught") {
  PagingEngine e(kShape, {8, 8, 8}, make_cpu_backend());
  e.allocate(1, 3);
  fill_seq(e, 1);
  CHECK(std::memcmp(e.chunk(1, 0, 0, Kv::K), e.chunk(1, 0, 0, Kv::V), kShape.chunk_bytes()) != 0);
  std::vector<std::byte> k(e.chunk(1, 1, 2, Kv::K), e.chunk(1, 1, 2, Kv::K) + kShape.chunk_bytes());
  std::memcpy(e.chunk(1, 1, 2, Kv::K), e.chunk(1, 1, 2, Kv::V), kShape.chunk_bytes());
  CHECK(check_seq(e, 1) == 1);
  std::memcpy(e.chunk(1, 1, 2, Kv::K), k.data(), k.size());
  CHECK(check_seq(e, 1) == 0);
}

TEST_CASE("dirty tracking: only changed and new blocks page out again") {
  PagingEngine e(kShape, {16, 16, 16}, make_cpu_backend());
  e.allocate(9, 5);
  fill_seq(e, 9);
  PageResult first = e.page_out(9, Tier::Remote);
  CHECK(first.blocks_copied == 5);
  CHECK(first.blocks_skipped == 0);
  CHECK(first.bytes_moved == 5 * kShape.block_bytes());
  CHECK(first.descriptors == 5 * 2 * 3);
  CHECK(!e.resident(9));
  CHECK(e.pool(Tier::Remote).used() == 5);

  PageResult in = e.page_in(9);
  CHECK(in.blocks_copied == 5);
  CHECK(e.pool(Tier::Remote).used() == 5);  // the copy stays, clean
  PageResult clean = e.page_out(9, Tier::Remote);
  CHECK(clean.blocks_copied == 0);
  CHECK(clean.blocks_skipped == 5);
  CHECK(clean.bytes_moved == 0);

  e.page_in(9);
  fill_chunk(e.chunk(9, 1, 0, Kv::V), kShape, 777);
  e.mark_dirty(9, 1);
  fill_chunk(e.chunk(9, 3, 2, Kv::K), kShape, 778);
  e.mark_dirty(9, 3);
  e.allocate(9, 2);  // two new blocks: dirty by birth
  for (size_t i = 5; i < 7; ++i)
    for (int l = 0; l < 3; ++l)
      for (Kv kv : {Kv::K, Kv::V}) fill_chunk(e.chunk(9, i, l, kv), kShape, chunk_seed(9, i, l, kv));
  PageResult dirty = e.page_out(9, Tier::Remote);
  CHECK(dirty.blocks_copied == 4);
  CHECK(dirty.blocks_skipped == 3);
  CHECK(dirty.bytes_moved == 4 * kShape.block_bytes());
  CHECK(e.pool(Tier::Remote).used() == 7);
  e.page_in(9);
  auto want = chunk_image(kShape, 777);
  CHECK(std::memcmp(e.chunk(9, 1, 0, Kv::V), want.data(), want.size()) == 0);
  want = chunk_image(kShape, 778);
  CHECK(std::memcmp(e.chunk(9, 3, 2, Kv::K), want.data(), want.size()) == 0);
  CHECK(std::memcmp(e.chunk(9, 6, 1, Kv::V), chunk_image(kShape, chunk_seed(9, 6, 1, Kv::V)).data(), want.size()) == 0);

  // Another tier: the old copy is dropped and everything moves.
  PageResult other = e.page_out(9, Tier::Host);
  CHECK(other.blocks_copied == 7);
  CHECK(e.pool(Tier::Remote).used() == 0);
  CHECK(e.pool(Tier::Host).used() == 7);
  e.free(9);
  CHECK(e.pool(Tier::Host).used() == 0);
  CHECK(e.pool(Tier::Device).used() == 0);
  CHECK_FALSE(e.has(9));
}

TEST_CASE("engine errors name the pool, the sequence and the request") {
  PagingEngine e(kShape, {6, 4, 2}, make_cpu_backend());
  e.allocate(1, 4);
  CHECK(error_of([&] { e.allocate(2, 3); }) == "pool 'device' is full: capacity 6 blocks, 4 in use, 2 free, request for 3");
  CHECK_FALSE(e.has(2));  // a refused allocation creates nothing
  fill_seq(e, 1);
  CHECK(error_of([&] { e.page_out(1, Tier::Host); }) == "pool 'host' is full: capacity 2 blocks, 0 in use, 2 free, request for 4");
  CHECK(e.resident(1));  // still on the device, data intact
  CHECK(e.pool(Tier::Device).used() == 4);
  CHECK(check_seq(e, 1) == 0);
  CHECK(error_of([&] { e.page_out(1, Tier::Device); }).find("must be remote or host") != std::string::npos);
  CHECK(error_of([&] { e.page_in(1); }) == "page_in: sequence 1 is not paged out");
  CHECK(error_of([&] { e.page_in(42); }) == "page_in: no sequence 42");
  CHECK(error_of([&] { e.mark_dirty(1, 4); }) == "mark_dirty: sequence 1 has 4 resident blocks, no index 4");
  e.page_out(1, Tier::Remote);
  CHECK(error_of([&] { e.page_out(1, Tier::Remote); }) == "page_out: sequence 1 is already paged out");
  CHECK(error_of([&] { e.allocate(1, 1); }).find("is paged out to remote; page it in first") != std::string::npos);
  CHECK(error_of([&] { e.block_table(1); }) == "block_table: sequence 1 is paged out");
  // Page-in needs device room: another sequence took it.
  e.allocate(3, 4);
  CHECK(error_of([&] { e.allocate(4, 3); }).find("pool 'device' is full") != std::string::npos);
  e.allocate(4, 2);
  CHECK(error_of([&] { e.page_in(1); }) == "pool 'device' is full: capacity 6 blocks, 6 in use, 0 free, request for 4");
  e.free(3);
  e.page_in(1);
  CHECK(check_seq(e, 1) == 0);
}

TEST_CASE("page-in layer by layer calls back once per layer, in order") {
  PagingEngine e(kShape, {8, 8, 8}, make_cpu_backend());
  e.allocate(1, 3);
  fill_seq(e, 1);
  e.page_out(1, Tier::Host);
  std::memset(e.pool(Tier::Device).data(), 0, e.pool(Tier::Device).memory().size());
  std::vector<int> layers;
  PageResult r = e.page_in(1, [&](int l) {
    layers.push_back(l);
    // The new table is readable here; layer l has arrived (the CPU backend is synchronous), later
    // layers not yet.
    for (size_t i = 0; i < 3; ++i)
      for (int m = 0; m < 3; ++m)
        for (Kv kv : {Kv::K, Kv::V}) {
          auto want = chunk_image(kShape, chunk_seed(1, i, m, kv));
          bool same = std::memcmp(e.chunk(1, i, m, kv), want.data(), want.size()) == 0;
          CHECK(same == (m <= l));
        }
  });
  CHECK(r.descriptors == 3 * 3 * 2);
  CHECK(layers == std::vector<int>{0, 1, 2});
  CHECK(check_seq(e, 1) == 0);
}

TEST_CASE("crossover: the nearest measured cell decides") {
  Crossover x;
  CHECK(x.choose(4096, 16) == 0);
  x.add(4096, 16, 2);
  x.add(4096, 4096, 1);
  x.add(1 << 20, 16, 0);
  CHECK(x.choose(4096, 8) == 2);
  CHECK(x.choose(8192, 2048) == 1);
  CHECK(x.choose(1 << 19, 16) == 0);
}

namespace {
class CountingBackend : public CopyBackend {
 public:
  explicit CountingBackend(std::string n) : name_(std::move(n)), cpu_(make_cpu_backend()) {}
  std::string name() const override { return name_; }
  void copy(const CopyPlan& p) override {
    ++calls;
    cpu_->copy(p);
  }
  void wait() override {}
  int calls = 0;

 private:
  std::string name_;
  std::unique_ptr<CopyBackend> cpu_;
};
}  // namespace

TEST_CASE("auto backend runs each plan on the crossover's choice; measure_crossover fills the table") {
  std::vector<std::unique_ptr<CopyBackend>> bs;
  bs.push_back(std::make_unique<CountingBackend>("small"));
  bs.push_back(std::make_unique<CountingBackend>("large"));
  auto* small = static_cast<CountingBackend*>(bs[0].get());
  auto* large = static_cast<CountingBackend*>(bs[1].get());
  Crossover x;
  x.add(256, 64, 0);
  x.add(1 << 16, 64, 1);
  auto a = std::make_unique<AutoBackend>(std::move(bs), x);
  AutoBackend* ap = a.get();
  PagingEngine e(kShape, {8, 8, 8}, std::move(a));
  e.allocate(1, 2);
  fill_seq(e, 1);
  e.page_out(1, Tier::Remote);  // 256-byte descriptors
  CHECK(ap->last_choice() == "small");
  CHECK(small->calls == 1);
  CHECK(large->calls == 0);
  e.page_in(1);
  CHECK(check_seq(e, 1) == 0);

  auto src = make_host_memory(1 << 16), dst = make_host_memory(1 << 16);
  auto cpu = make_cpu_backend();
  Crossover m = measure_crossover({cpu.get()}, *src, *dst, {1024, 4096}, {4, 16, 64}, 1);
  CHECK_FALSE(m.empty());
  CHECK(m.choose(4096, 16) == 0);
}

TEST_CASE("f16 and bf16 conversions") {
  for (float f : {0.0f, 1.0f, -2.5f, 0.333251953125f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f})
    CHECK(half_to_float(float_to_half(f)) == f);
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(1.0f + 1.0f / 4096) == 0x3C00);  // ties to even
  CHECK(bf16_to_float(float_to_bf16(1.5f)) == 1.5f);
  CHECK(float_to_bf16(-2.0f) == 0xC000);
}

TEST_CASE("paged attention: CPU reference against a direct computation, and identical after paging") {
  ModelShape s{2, 2, 32, 4, DType::F16};
  PagingEngine e(s, {24, 24, 24}, make_cpu_backend());
  e.allocate(1, 3);
  e.allocate(2, 2);
  e.allocate(1, 1);  // sequence 1's table is not a run
  fill_seq(e, 1);
  fill_seq(e, 2);
  AttentionBatch b;
  b.q_heads = 4;  // two query heads per KV head
  b.context_lens = {14, 5};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < 2 * 4 * 32; ++i) b.q.push_back(u(rng));
  auto tables = [&] { return std::vector<std::vector<int>>{e.block_table(1), e.block_table(2)}; };
  b.tables = tables();
  BlockPool& dev = e.pool(Tier::Device);
  std::vector<std::vector<float>> before;
  for (int l = 0; l < 2; ++l) before.push_back(paged_attention_cpu(s, dev.data(), dev.capacity(), l, b));

  // Direct: sequence 2, query head 3 (KV head 1), layer 1, from the pattern itself.
  {
    std::vector<float> sc;
    float mx = -1e30f;
    for (int t = 0; t < 5; ++t) {
      auto k = chunk_image(s, chunk_seed(2, static_cast<size_t>(t / 4), 1, Kv::K));
      float dot = 0;
      for (int d = 0; d < 32; ++d)
        dot += b.q[(1 * 4 + 3) * 32 + static_cast<size_t>(d)] * load_elem(k.data() + (((t % 4) * 2 + 1) * 32 + d) * 2, s.dtype);
      sc.push_back(dot / std::sqrt(32.0f));
      mx = std::max(mx, sc.back());
    }
    float sum = 0;
    for (float& x : sc) sum += (x = std::exp(x - mx));
    for (int d = 0; d < 32; ++d) {
      float o = 0;
      for (int t = 0; t < 5; ++t) {
        auto v = chunk_image(s, chunk_seed(2, static_cast<size_t>(t / 4), 1, Kv::V));
        o += sc[static_cast<size_t>(t)] / sum * load_elem(v.data() + (((t % 4) * 2 + 1) * 32 + d) * 2, s.dtype);
      }
      CHECK(before[1][(1 * 4 + 3) * 32 + static_cast<size_t>(d)] == doctest::Approx(o).epsilon(1e-5));
    }
  }

  e.page_out(1, Tier::Remote);
  e.page_out(2, Tier::Host);
  e.allocate(3, 5);  // the freed blocks go elsewhere, so the sequences come back at new ids
  fill_seq(e, 3);
  e.page_in(2);
  e.page_in(1);
  CHECK(tables() != b.tables);
  b.tables = tables();
  for (int l = 0; l < 2; ++l) {
    auto after = paged_attention_cpu(s, dev.data(), dev.capacity(), l, b);
    CHECK(std::memcmp(after.data(), before[static_cast<size_t>(l)].data(), after.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("paged attention: bad batches are named") {
  AttentionBatch b;
  b.q_heads = 3;
  b.tables = {{0}};
  b.context_lens = {4};
  b.q.resize(3 * kShape.head_size);
  CHECK(error_of([&] { b.validate(kShape); }) == "attention: q_heads 3 is not a positive multiple of kv_heads 2");
  b.q_heads = 2;
  CHECK(error_of([&] { b.validate(kShape); }) == "attention: query has 48 values, want 32");
  b.q.resize(32);
  b.context_lens = {5};
  CHECK(error_of([&] { b.validate(kShape); }) == "attention: sequence 0 context 5 tokens does not fit its 1 blocks");
}
