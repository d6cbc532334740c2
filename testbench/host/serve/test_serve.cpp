// Unit tests of host/serve: the cost model, the trace loader's errors, the pager over the paging
// engine, the constant fabric and the scheduler's invariants (which the engine checks every step
// and reports as violations).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "cuda/paging.h"
#include "host/serve/fabric_ipbus.h"
#include "host/serve/serve.h"

using namespace mxtb::host::serve;

namespace {

std::string data(const std::string& f) { return std::string(MXTB_SERVE_TEST_DATA) + "/" + f; }

std::string write_tmp(const std::string& name, const std::string& text) {
  std::string p = (std::filesystem::temp_directory_path() / ("mxtb_serve_test_" + name)).string();
  std::ofstream(p) << text;
  return p;
}

// A small pool (0.25 GiB = 128 blocks = 2,048 tokens) under a burst, so that every preemptive
// policy must preempt and page.
ServeConfig small_config() {
  ServeConfig c;
  c.kv_pool_gib = 0.25;
  c.max_wait_s = 0.5;
  c.slice_steps = 4;
  return c;
}

std::vector<Request> small_burst() {
  std::vector<Request> r;
  for (uint64_t i = 0; i < 60; ++i)
    r.push_back({i, 0.001 * static_cast<double>(i), 100 + (i * 37) % 400, 5 + (i * 13) % 60});
  r.push_back({60, 2.0, 300, 20});  // a late one, after the burst
  return r;
}

void require_clean(const RunResult& r, const std::vector<Request>& reqs) {
  INFO(r.policy);
  for (const auto& v : r.violations) MESSAGE(v);
  CHECK(r.violations.empty());
  REQUIRE(r.seqs.size() == reqs.size());
  uint64_t tokens = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    CHECK(r.seqs[i].finish_s >= reqs[i].arrival_s);
    CHECK(r.seqs[i].generated == reqs[i].output_tokens);
    tokens += reqs[i].output_tokens;
  }
  CHECK(r.output_tokens == tokens);
  CHECK(r.max_blocks_used <= r.pool_blocks);
}

// The stated bound (docs/serve.md): aged after max_wait_s (at the next iteration, at most one
// slice later), then back on the device within (aged ahead of it + 1) slices.
void check_wait_bound(const RunResult& r, const ServeConfig& cfg) {
  for (const auto& s : r.seqs) {
    double bound = cfg.max_wait_s + static_cast<double>(s.max_promoted_ahead + 2) * r.starvation_bound_slice_s;
    INFO("request ", s.id, " waited ", s.longest_wait_s, " s");
    CHECK(s.longest_wait_s <= bound);
  }
}

// Corrupts one byte of the first block after every page-in: the engine's own check of the
// resumed sequence's bytes must notice, although the pager's digest matched.
class CorruptingPager : public KvPager {
 public:
  CorruptingPager(DeviceKvPool& pool, TierBlocks caps) : pool_(pool), inner_(pool, caps) {}
  PageResult page_out(SeqId s, const std::vector<BlockId>& b, Tier t) override { return inner_.page_out(s, b, t); }
  PageResult page_in(SeqId s, const std::vector<BlockId>& b, Tier t) override {
    auto r = inner_.page_in(s, b, t);
    if (!b.empty()) pool_.block(b[0])[3] ^= 0x40;
    return r;
  }
  PageResult fetch(SeqId s, Tier t) override { return inner_.fetch(s, t); }
  void discard(SeqId s, Tier t) override { inner_.discard(s, t); }
  uint64_t paged_blocks(SeqId s, Tier t) const override { return inner_.paged_blocks(s, t); }

 private:
  DeviceKvPool& pool_;
  PagingEngineKvPager inner_;
};

}  // namespace

TEST_CASE("cost model: Llama-3-8B shapes, prefill grows with tokens, decode is memory-bound") {
  CostModel c(model_by_name("llama3-8b"), device_by_name("h100"));
  CHECK(c.model().kv_bytes_per_token() == 2u * 32 * 8 * 128 * 2);  // 128 KiB
  double prev = 0;
  for (uint64_t n : {16, 128, 512, 2048, 8192, 32768}) {
    double t = c.prefill_s({{0, n}});
    CHECK(t > prev);
    prev = t;
  }
  // Long prefills are compute-bound: about 2 × params FLOPs per token at half of peak.
  double flops = 2 * c.model().compute_params * 8192 + c.attention_flops(8192, 4096);
  CHECK(c.prefill_s({{0, 8192}}) == doctest::Approx(c.compute_s(flops)));
  // Decode reads every weight once per step: for batches up to 64, memory decides.
  for (uint64_t b : {1, 8, 64}) {
    uint64_t ctx = b * 2048;
    double mem = c.memory_s(c.model().weight_bytes() + static_cast<double>(ctx) * 131072.0);
    CHECK(c.decode_s(b, ctx) == doctest::Approx(mem));
    CHECK(c.compute_s(2 * c.model().compute_params * static_cast<double>(b)) < mem);
  }
  // One token alone: the weights over achieved HBM bandwidth, about 6 ms on an H100.
  CHECK(c.decode_s(1, 1) == doctest::Approx(16.06e9 / (3.35e12 * 0.8)).epsilon(0.01));
  // H200's faster HBM speeds decode, not long prefill.
  CostModel h200(model_by_name("llama3-8b"), device_by_name("h200"));
  CHECK(h200.decode_s(8, 8 * 2048) < c.decode_s(8, 8 * 2048));
  CHECK(h200.prefill_s({{0, 8192}}) == doctest::Approx(c.prefill_s({{0, 8192}})));
}

TEST_CASE("unknown model, device and policy are named in the error") {
  CHECK_THROWS_WITH_AS(model_by_name("gpt5"), doctest::Contains("unknown model 'gpt5'"), InputError);
  CHECK_THROWS_WITH_AS(device_by_name("tpu9"), doctest::Contains("unknown device 'tpu9'"), InputError);
  CHECK_THROWS_WITH_AS(policy_by_name("lifo"), doctest::Contains("unknown policy 'lifo'"), InputError);
  for (auto p : {Policy::Fcfs, Policy::Recompute, Policy::AquaHost, Policy::AquaFabric})
    CHECK(policy_by_name(policy_name(p)) == p);
}

TEST_CASE("trace loader: the Azure code trace, scaling, and bad input") {
  auto reqs = load_azure_trace(std::string(MXTB_SOURCE_DIR) + "/traces/azure/AzureLLMInferenceTrace_code.csv", 1);
  REQUIRE(reqs.size() == 8819);
  CHECK(reqs[0].arrival_s == 0);
  CHECK(reqs[0].prompt_tokens == 4808);
  CHECK(reqs[0].output_tokens == 10);
  CHECK(reqs.back().arrival_s == doctest::Approx(57 * 60).epsilon(0.02));
  auto fast = load_azure_trace(std::string(MXTB_SOURCE_DIR) + "/traces/azure/AzureLLMInferenceTrace_code.csv", 4);
  CHECK(fast.back().arrival_s == doctest::Approx(reqs.back().arrival_s / 4));

  CHECK_THROWS_WITH_AS(load_azure_trace("no/such/trace.csv", 1), doctest::Contains("cannot open trace file 'no/such/trace.csv'"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_azure_trace(data("bad_row.csv"), 1), doctest::Contains("bad_row.csv:3: expected 3 fields, got 2"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_azure_trace(data("bad_number.csv"), 1),
                       doctest::Contains("bad_number.csv:3: ContextTokens '31x0' is not a positive integer"), InputError);
  auto p = write_tmp("header.csv", "time,in,out\n2023-11-16 18:17:03.9,1,1\n");
  CHECK_THROWS_WITH_AS(load_azure_trace(p, 1), doctest::Contains(":1: expected header TIMESTAMP,ContextTokens,GeneratedTokens"),
                       InputError);
  p = write_tmp("stamp.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16T18:17,1,1\n");
  CHECK_THROWS_WITH_AS(load_azure_trace(p, 1), doctest::Contains(":2: bad TIMESTAMP '2023-11-16T18:17'"), InputError);
  // The 2024 release's stamps carry a zone ("+00:00"); an offset is taken off, so rows keep their order.
  p = write_tmp("zoned.csv",
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,2162,5\n2024-05-10T00:00:01Z,10,2\n"
                "2024-05-10 02:00:00.5+02:00,7,3\n2024-05-09 23:00:02-0100,8,4\n2024-05-10 01:00:03+01,9,1\n");
  auto zoned = load_azure_trace(p, 1);
  REQUIRE(zoned.size() == 5);
  CHECK(zoned[0].prompt_tokens == 2162);
  CHECK(zoned[1].prompt_tokens == 7);  // 02:00:00.5 at +02:00, sorted before the 00:00:01Z row
  CHECK(zoned[1].arrival_s == doctest::Approx(0.5 - 0.00993));
  CHECK(zoned[2].prompt_tokens == 10);
  CHECK(zoned[2].arrival_s == doctest::Approx(1 - 0.00993));
  CHECK(zoned[3].prompt_tokens == 8);
  CHECK(zoned[3].arrival_s == doctest::Approx(2 - 0.00993));
  CHECK(zoned[4].arrival_s == doctest::Approx(3 - 0.00993));
  for (const char* bad : {"2024-05-10 00:00:00+0", "2024-05-10 00:00:00+24:00", "2024-05-10 00:00:00 UTC", "2024-05-10 00:00:00.",
                          "2024-05-10 00:00:1e1", "2024-05-10 0:00:00"}) {
    p = write_tmp("bad_stamp.csv", std::string("TIMESTAMP,ContextTokens,GeneratedTokens\n") + bad + ",1,1\n");
    const std::string want = std::string(":2: bad TIMESTAMP '") + bad + "'";
    CHECK_THROWS_WITH_AS(load_azure_trace(p, 1), doctest::Contains(want.c_str()), InputError);
  }
  p = write_tmp("zero.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,12,0\n");
  CHECK_THROWS_WITH_AS(load_azure_trace(p, 1), doctest::Contains(":2: GeneratedTokens '0' is not a positive integer"),
                       InputError);
  p = write_tmp("empty.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n");
  CHECK_THROWS_WITH_AS(load_azure_trace(p, 1), doctest::Contains("has no requests"), InputError);
  CHECK_THROWS_WITH_AS(load_azure_trace(p, 0), doctest::Contains("scale 0 must be positive"), InputError);
}

TEST_CASE("synthetic burst is deterministic per seed") {
  auto a = synthetic_burst(7, 1), b = synthetic_burst(7, 1), c = synthetic_burst(8, 1);
  REQUIRE(a.size() == b.size());
  CHECK(a.size() > 200);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].arrival_s == b[i].arrival_s);
    CHECK(a[i].prompt_tokens == b[i].prompt_tokens);
  }
  CHECK((a.size() != c.size() || a[5].prompt_tokens != c[5].prompt_tokens));
}

// Writes tokens 0..n-1 of `seq` into pool blocks from `first` on.
void fill(DeviceKvPool& pool, SeqId seq, uint64_t n, BlockId first = 0) {
  for (uint64_t t = 0; t < n; ++t)
    pool.write_token(static_cast<BlockId>(first + t / pool.block_tokens()), static_cast<uint32_t>(t % pool.block_tokens()),
                     seq, t);
}

TEST_CASE("PagingEngineKvPager: bytes come back exactly through both tiers, into other blocks") {
  for (Tier tier : {Tier::Remote, Tier::Host}) {
    INFO(tier_name(tier));
    DeviceKvPool pool(8, 16, 64);
    PagingEngineKvPager pager(pool, {16, 16});
    fill(pool, 9, 40);
    auto r = pager.page_out(9, {0, 1, 2}, tier);
    CHECK(r.ok);
    CHECK(r.real_bytes == 3 * 16 * 64);  // through the engine's descriptors, all of it
    Tier other = tier == Tier::Remote ? Tier::Host : Tier::Remote;
    CHECK(pager.paged_blocks(9, tier) == 3);
    CHECK(pager.paged_blocks(9, other) == 0);
    auto et = tier == Tier::Remote ? mxtb::paging::Tier::Remote : mxtb::paging::Tier::Host;
    CHECK(pager.engine().pool(et).used() == 3);
    CHECK(pager.engine().pool(mxtb::paging::Tier::Device).used() == 0);  // staging given back
    for (BlockId b = 0; b < 3; ++b) std::memset(pool.block(b), 0, pool.block_bytes());
    auto f = pager.fetch(9, tier);
    CHECK(f.ok);
    CHECK(f.blocks == 3);
    CHECK(pager.engine().pool(et).used() == 3);  // fetch keeps the copy in the tier
    r = pager.page_in(9, {5, 6, 7}, tier);
    CHECK(r.ok);
    for (uint64_t t = 0; t < 40; ++t) CHECK(pool.token_matches(static_cast<BlockId>(5 + t / 16), t % 16, 9, t));
    CHECK_FALSE(pool.token_matches(5, 0, 10, 0));  // another sequence's token differs
    CHECK(pager.paged_blocks(9, tier) == 0);
    CHECK(pager.engine().pool(et).used() == 0);
    auto bad = pager.page_in(9, {0}, tier);
    CHECK_FALSE(bad.ok);
    CHECK(bad.error.find("holding 0") != std::string::npos);
  }
}

TEST_CASE("PagingEngineKvPager: appended page-outs (a spilling sequence) and a partial page-in") {
  DeviceKvPool pool(8, 16, 64);
  PagingEngineKvPager pager(pool, {16, 0});
  fill(pool, 3, 16 * 4);
  for (BlockId b = 0; b < 4; ++b) CHECK(pager.page_out(3, {b}, Tier::Remote).ok);  // one run per block
  CHECK(pager.paged_blocks(3, Tier::Remote) == 4);
  CHECK(pager.fetch(3, Tier::Remote).ok);
  auto r = pager.page_in(3, {7, 6}, Tier::Remote);  // the first two of four
  CHECK(r.ok);
  for (uint64_t t = 0; t < 32; ++t) CHECK(pool.token_matches(t < 16 ? 7 : 6, t % 16, 3, t));
  CHECK(pager.paged_blocks(3, Tier::Remote) == 2);
  r = pager.page_in(3, {5, 4}, Tier::Remote);
  CHECK(r.ok);
  for (uint64_t t = 32; t < 64; ++t) CHECK(pool.token_matches(t < 48 ? 5 : 4, t % 16, 3, t));
  pager.discard(3, Tier::Remote);
  CHECK(pager.engine().pool(mxtb::paging::Tier::Remote).used() == 0);
}

TEST_CASE("PagingEngineKvPager: a corrupted byte in the tier is caught on page-in and fetch") {
  DeviceKvPool pool(4, 16, 64);
  PagingEngineKvPager pager(pool, {4, 0});
  fill(pool, 1, 32);
  REQUIRE(pager.page_out(1, {0, 1}, Tier::Remote).ok);
  // The tier pool is block-major: block 0's bytes are the first ones.
  pager.engine().pool(mxtb::paging::Tier::Remote).data()[5] ^= std::byte{0x10};
  auto f = pager.fetch(1, Tier::Remote);
  CHECK_FALSE(f.ok);
  CHECK(f.error.find("seq 1: block 0 fetched from remote differs") != std::string::npos);
  auto r = pager.page_in(1, {2, 3}, Tier::Remote);
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("seq 1: block 0 paged in from remote differs") != std::string::npos);
}

TEST_CASE("PagingEngineKvPager: a full tier is reported and changes nothing") {
  DeviceKvPool pool(8, 16, 64);
  PagingEngineKvPager pager(pool, {2, 0});
  fill(pool, 4, 48);
  auto r = pager.page_out(4, {0, 1, 2}, Tier::Remote);
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("seq 4: page-out of 3 blocks to remote") != std::string::npos);
  CHECK(r.error.find("is full") != std::string::npos);
  CHECK(pager.paged_blocks(4, Tier::Remote) == 0);
  CHECK(pager.engine().pool(mxtb::paging::Tier::Device).used() == 0);
  CHECK(pager.page_out(4, {0, 1}, Tier::Remote).ok);  // what fits still goes
  CHECK_FALSE(pager.page_out(4, {2}, Tier::Host).ok);  // no host tier in this run
  DeviceKvPool odd(1, 16, 12);  // 12 B a token is no whole number of fp16 K/V elements per layer
  CHECK_THROWS_AS(static_cast<void>(PagingEngineKvPager(odd, TierBlocks{})), InputError);
}

TEST_CASE("StaticFabricLinks: extra circuits carry after the reconfiguration delay") {
  FabricConfig c;
  StaticFabricLinks f(c);
  CHECK(f.live_circuits(0, 1, 0) == 4);
  double at = f.request_extra_circuits(0, 1, 100, 1.0);
  CHECK(at == doctest::Approx(1.0 + 60e-6));
  CHECK(f.live_circuits(0, 1, 1.0 + 30e-6) == 4);
  CHECK(f.live_circuits(0, 1, at) == 16);  // capped at the XPU's other 12 lanes
  CHECK(f.request_extra_circuits(0, 1, 1, 2.0) == 2.0);  // none left
  CHECK(f.release(0, 1, 3.0) == doctest::Approx(3.0 + 60e-6));
  CHECK(f.live_circuits(0, 1, 3.0) == 4);
  CHECK(f.release(0, 1, 4.0) == 4.0);  // nothing held: no reconfiguration
}

TEST_CASE("EmulatorFabricLinks' maps: the base placement and extra circuits") {
  mxtb::protocol::ServerShape s;
  auto base = EmulatorFabricLinks::base_map(s);
  auto between = [&](const std::vector<int>& m, int a, int b) {
    int n = 0;
    for (int l = 0; l < 4; ++l) n += m[static_cast<size_t>(a * 4 + l)] >= 0 && m[static_cast<size_t>(a * 4 + l)] / 4 == b;
    return n;
  };
  auto symmetric = [&](const std::vector<int>& m) {
    for (size_t p = 0; p < m.size(); ++p)
      if (m[p] >= 0 && m[static_cast<size_t>(m[p])] != static_cast<int>(p)) return false;
    return true;
  };
  CHECK(symmetric(base));
  CHECK(between(base, 0, 1) == 1);
  CHECK(between(base, 1, 0) == 1);
  CHECK(between(base, 0, 3) == 2);
  CHECK(between(base, 1, 2) == 2);
  for (int x = 0; x < 4; ++x)
    for (int l = 0; l < 4; ++l) CHECK(base[static_cast<size_t>(x * 4 + l)] >= 0);  // every lane of 0-3 used
  int added = 0;
  auto more = EmulatorFabricLinks::with_extra(s, base, 0, 1, 2, &added);
  CHECK(added == 2);
  CHECK(symmetric(more));
  CHECK(between(more, 0, 1) == 3);
  auto all = EmulatorFabricLinks::with_extra(s, base, 0, 1, 10, &added);
  CHECK(added == 3);  // XPU 0 has 4 lanes
  CHECK(symmetric(all));
  CHECK(between(all, 0, 1) == 4);
  CHECK(between(all, 2, 3) >= 1);  // the lanes left behind keep circuits between them
}

TEST_CASE("scheduler invariants hold under a burst for every policy") {
  // Checked every step by the engine: KV never overcommitted, books balance, a promoted sequence
  // waits at most (promoted ahead + 1) slices; at the end every request has all its tokens;
  // on every page-in every token's bytes are compared with what the sequence must hold.
  auto reqs = small_burst();
  ServeConfig cfg = small_config();
  for (auto p : {Policy::Fcfs, Policy::Vllm03, Policy::Recompute, Policy::AquaHost, Policy::AquaFabric,
                 Policy::Aqua}) {
    RunResult r = simulate(reqs, p, cfg);
    require_clean(r, reqs);
    if (p == Policy::Fcfs) {
      CHECK(r.preemptions == 0);
    } else {
      CHECK(r.preemptions > 0);
    }
    if (p == Policy::AquaHost || p == Policy::AquaFabric || p == Policy::Aqua) {
      CHECK(r.page_ins > 0);
      CHECK(r.page_ins == r.page_outs);
      CHECK(r.real_bytes_paged > 0);
      CHECK(r.paging_s > 0);
    }
    if (p == Policy::Vllm03) CHECK(r.page_outs == 0);  // vLLM 0.3.2 preempts a single sequence by recompute
    // The slice policies' aging bound; Aqua's CFS scheduler has no aging (least served first).
    if (p != Policy::Fcfs && p != Policy::Vllm03 && p != Policy::Aqua) check_wait_bound(r, cfg);
  }
}

TEST_CASE("aqua-fabric pages faster than aqua-host and takes circuits during the burst") {
  auto reqs = small_burst();
  ServeConfig cfg = small_config();
  RunResult host = simulate(reqs, Policy::AquaHost, cfg);
  RunResult fab = simulate(reqs, Policy::AquaFabric, cfg);
  CHECK(fab.reconfigurations >= 2);  // asked for circuits, gave them back
  CHECK(fab.extra_circuit_s > 0);
  CHECK(host.reconfigurations == 0);
  CHECK(fab.paging_s < host.paging_s);
}

TEST_CASE("a resumed sequence with a wrong byte is caught") {
  auto reqs = small_burst();
  RunResult r = simulate(reqs, Policy::AquaFabric, small_config(),
                         [](DeviceKvPool& p, TierBlocks c) { return std::make_unique<CorruptingPager>(p, c); });
  REQUIRE_FALSE(r.violations.empty());
  CHECK(r.violations[0].find("resumed with wrong KV bytes") != std::string::npos);
}

TEST_CASE("no starvation under sustained overload beyond the stated bound") {
  // Arrivals keep coming faster than the pool drains for 3 s; aging must still bring every old
  // sequence back within the bound (the engine records a violation otherwise).
  std::vector<Request> reqs;
  for (uint64_t i = 0; i < 400; ++i)
    reqs.push_back({i, 0.0075 * static_cast<double>(i), 200 + (i * 53) % 600, 30 + (i * 7) % 90});
  ServeConfig cfg = small_config();
  for (auto p : {Policy::Recompute, Policy::AquaFabric}) {
    RunResult r = simulate(reqs, p, cfg);
    require_clean(r, reqs);
    check_wait_bound(r, cfg);
    double longest = 0;
    for (const auto& s : r.seqs) longest = std::max(longest, s.longest_wait_s);
    MESSAGE(std::string(policy_name(p)), ": longest wait ", longest, " s, slice bound ", r.starvation_bound_slice_s, " s");
  }
}

TEST_CASE("a prompt longer than the pool: fcfs rejects it, the others stream or recompute it") {
  ServeConfig cfg;
  cfg.kv_pool_gib = 0.5;  // 4,096 tokens
  std::vector<Request> reqs{{0, 0, 10000, 40}};
  RunResult f = simulate(reqs, Policy::Fcfs, cfg);
  REQUIRE(f.seqs[0].rejected);
  CHECK(f.seqs[0].reject_reason.find("needs 628 KV blocks, the pool has 256") != std::string::npos);
  double tput[3];
  int i = 0;
  for (auto p : {Policy::Recompute, Policy::AquaHost, Policy::AquaFabric}) {
    RunResult r = simulate(reqs, p, cfg);
    require_clean(r, reqs);
    if (p != Policy::Recompute) CHECK(r.fetches > 0);
    tput[i++] = r.throughput();
  }
  CHECK(tput[2] > tput[1]);  // the fabric streams faster than PCIe
  CHECK(tput[1] > tput[0]);  // streaming beats recomputing the spilled prefix every step
}

TEST_CASE("runs are deterministic") {
  auto reqs = small_burst();
  RunResult a = simulate(reqs, Policy::AquaFabric, small_config());
  RunResult b = simulate(reqs, Policy::AquaFabric, small_config());
  CHECK(a.makespan_s == b.makespan_s);
  CHECK(a.ttft_s == b.ttft_s);
  CHECK(a.preemptions == b.preemptions);
}

TEST_CASE("percentile is nearest-rank") {
  CHECK(percentile({}, 99) == 0);
  CHECK(percentile({3, 1, 2}, 50) == 2);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  CHECK(percentile(v, 99) == 99);
  CHECK(percentile(v, 100) == 100);
}

TEST_CASE("chat lengths: ShareGPT's published means after vLLM's pruning, deterministic per seed") {
  ChatLengths c;
  CHECK(ChatLengths::truncated_mean(c.mu_prompt, ChatLengths::kSigma, ChatLengths::kMin, ChatLengths::kMaxPrompt) ==
        doctest::Approx(161.31).epsilon(1e-4));
  CHECK(ChatLengths::truncated_mean(c.mu_output, ChatLengths::kSigma, ChatLengths::kMin, ChatLengths::kMaxOutput) ==
        doctest::Approx(337.99).epsilon(1e-4));
  // The truncated mean of a wide window is the plain log-normal mean.
  CHECK(ChatLengths::truncated_mean(1.0, 0.5, 1e-9, 1e12) == doctest::Approx(std::exp(1.0 + 0.125)).epsilon(1e-6));
  auto a = chat_lengths(7), b = chat_lengths(7), other = chat_lengths(8);
  double sp = 0, so = 0;
  bool differs = false;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    auto x = a(), y = b(), z = other();
    REQUIRE(x == y);
    differs |= x != z;
    CHECK(x.first >= ChatLengths::kMin);
    CHECK(x.first <= ChatLengths::kMaxPrompt);
    CHECK(x.second >= ChatLengths::kMin);
    CHECK(x.second <= ChatLengths::kMaxOutput);
    sp += static_cast<double>(x.first);
    so += static_cast<double>(x.second);
  }
  CHECK(differs);
  CHECK(sp / n == doctest::Approx(161.31).epsilon(0.03));
  CHECK(so / n == doctest::Approx(337.99).epsilon(0.03));
  auto bg = chat_background(3, 10.0, 60.0);
  CHECK(bg.size() > 450);
  CHECK(bg.size() < 750);
  for (size_t i = 1; i < bg.size(); ++i) CHECK(bg[i].arrival_s >= bg[i - 1].arrival_s);
  CHECK_THROWS_AS(chat_background(3, 0, 60), InputError);
}

TEST_CASE("bursts on top of a load: counts, window, marks, order, lengths from the load") {
  std::vector<Request> base;
  for (uint64_t i = 0; i < 100; ++i) base.push_back({i, static_cast<double>(i), 1000 + i, 10 + i});
  BurstSpec spec{50, 2, 1.0};
  auto out = add_bursts(base, spec, lengths_from(base, 5), 5);
  REQUIRE(out.size() == 200);
  size_t marked = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].id == i);
    if (i) CHECK(out[i].arrival_s >= out[i - 1].arrival_s);
    if (!out[i].in_burst) continue;
    ++marked;
    // Bursts at 1/3 and 2/3 of the 99 s span, each within its 1 s window.
    bool first = out[i].arrival_s >= 33.0 && out[i].arrival_s < 34.0;
    bool second = out[i].arrival_s >= 66.0 && out[i].arrival_s < 67.0;
    CHECK((first || second));
    CHECK(out[i].prompt_tokens >= 1000);
    CHECK(out[i].prompt_tokens < 1100);
    CHECK(out[i].output_tokens == out[i].prompt_tokens - 990);  // a row of the load, drawn whole
  }
  CHECK(marked == 100);
  CHECK(add_bursts(base, BurstSpec{0, 1, 1.0}, lengths_from(base, 5), 5).size() == 100);
  CHECK_THROWS_AS(lengths_from({}, 1), InputError);
  // The synthetic burst marks its 200 burst requests.
  auto sb = synthetic_burst(1, 1);
  CHECK(std::count_if(sb.begin(), sb.end(), [](const Request& r) { return r.in_burst; }) == 200);
}

TEST_CASE("vllm-0.3: prompt blocks at admission, growth, the newest preempted by recompute") {
  ServeConfig cfg = small_config();  // 128 blocks of 16 tokens, watermark 1 block
  // Two prompts whose prompt + output do not both fit (fcfs runs them one after the other), whose
  // prompts do (vLLM 0.3.2 admits both and preempts the newer when they outgrow the pool).
  std::vector<Request> reqs{{0, 0.0, 900, 300}, {1, 0.001, 900, 300}};
  RunResult f = simulate(reqs, Policy::Fcfs, cfg);
  RunResult v = simulate(reqs, Policy::Vllm03, cfg);
  require_clean(f, reqs);
  require_clean(v, reqs);
  CHECK(v.seqs[1].first_token_s < f.seqs[1].first_token_s);
  CHECK(v.preemptions >= 1);
  CHECK(v.seqs[1].preemptions >= 1);  // the newest leaves
  CHECK(v.seqs[0].preemptions == 0);
  CHECK(v.page_outs == 0);
  // A prompt over the prompt limit, and one that can never leave the watermark free, are ignored.
  std::vector<Request> big{{0, 0.0, 9000, 10}, {1, 0.0, 2040, 10}, {2, 0.1, 100, 10}};
  ServeConfig wide = cfg;
  wide.kv_pool_gib = 4;
  RunResult r = simulate(big, Policy::Vllm03, wide);
  CHECK(r.seqs[0].rejected);
  CHECK(r.seqs[0].reject_reason.find("exceeds the prompt limit of 8192") != std::string::npos);
  RunResult w = simulate({{0, 0.0, 2040, 10}}, Policy::Vllm03, cfg);
  CHECK(w.seqs[0].rejected);
  CHECK(w.seqs[0].reject_reason.find("1 kept free") != std::string::npos);
  // Padding: 100 and 600 tokens pad by 500 > 256 and prefill in two steps; 500 and 600 in one.
  RunResult apart = simulate({{0, 0.0, 100, 1}, {1, 0.0, 600, 1}}, Policy::Vllm03, wide);
  RunResult together = simulate({{0, 0.0, 500, 1}, {1, 0.0, 600, 1}}, Policy::Vllm03, wide);
  CHECK(apart.steps == 2);
  CHECK(together.steps == 1);
}

TEST_CASE("aqua: an arrival preempts running sequences to the tiers and is prefilled first") {
  ServeConfig cfg = small_config();
  // A long generation holds most of the pool when a short request arrives.
  std::vector<Request> reqs{{0, 0.0, 1800, 200}, {1, 0.5, 200, 20}};
  RunResult v = simulate(reqs, Policy::Vllm03, cfg);
  RunResult a = simulate(reqs, Policy::Aqua, cfg);
  require_clean(v, reqs);
  require_clean(a, reqs);
  const double v_ttft = v.seqs[1].first_token_s - 0.5, a_ttft = a.seqs[1].first_token_s - 0.5;
  MESSAGE("TTFT of the late request: vllm-0.3 ", v_ttft, " s, aqua ", a_ttft, " s");
  CHECK(a_ttft < v_ttft / 4);
  CHECK(a.page_outs >= 1);
  CHECK(a.seqs[0].preemptions >= 1);
  CHECK(a.fallback_drops == 0);
}

TEST_CASE("aqua: tiers peer, then host DRAM, then recompute") {
  auto reqs = small_burst();
  ServeConfig cfg = small_config();
  cfg.peer_tier_gib = 0.05;  // a few sequences' worth
  RunResult r = simulate(reqs, Policy::Aqua, cfg);
  require_clean(r, reqs);
  CHECK(r.host_page_outs > 0);
  CHECK(r.fallback_drops == 0);
  cfg.host_tier_gib = 0.02;
  RunResult full = simulate(reqs, Policy::Aqua, cfg);
  require_clean(full, reqs);
  CHECK(full.fallback_drops > 0);  // both tiers full: recompute, and the run still completes
  // aqua-fabric shares the chain: host DRAM before recompute.
  ServeConfig f = small_config();
  f.peer_tier_gib = 0.05;
  RunResult fab = simulate(reqs, Policy::AquaFabric, f);
  require_clean(fab, reqs);
  CHECK(fab.host_page_outs > 0);
}

TEST_CASE("aqua: the paging budget bounds optional preemptions") {
  auto reqs = small_burst();
  ServeConfig cfg = small_config();
  RunResult free_run = simulate(reqs, Policy::Aqua, cfg);
  cfg.paging_budget = 0;
  cfg.paging_credit_cap_s = 0;
  RunResult none = simulate(reqs, Policy::Aqua, cfg);
  require_clean(free_run, reqs);
  require_clean(none, reqs);
  CHECK(none.budget_deferrals > 0);
  CHECK(none.page_outs < free_run.page_outs);
  // Re-picking every iteration pages more than every 50.
  ServeConfig often = small_config(), rarely = small_config();
  often.repick_steps = 1;
  rarely.repick_steps = 50;
  RunResult o = simulate(reqs, Policy::Aqua, often), r = simulate(reqs, Policy::Aqua, rarely);
  require_clean(o, reqs);
  require_clean(r, reqs);
  CHECK(o.page_ins > r.page_ins);
}

TEST_CASE("aqua under sustained overload: no thrashing, throughput beside vllm-0.3's") {
  // Arrivals faster than the pool drains for 3 s (the same load as the starvation test).
  std::vector<Request> reqs;
  for (uint64_t i = 0; i < 400; ++i)
    reqs.push_back({i, 0.0075 * static_cast<double>(i), 200 + (i * 53) % 600, 30 + (i * 7) % 90});
  ServeConfig cfg = small_config();
  RunResult v = simulate(reqs, Policy::Vllm03, cfg);
  RunResult a = simulate(reqs, Policy::Aqua, cfg);
  require_clean(v, reqs);
  require_clean(a, reqs);
  MESSAGE("vllm-0.3 ", v.throughput(), " tok/s, aqua ", a.throughput(), " tok/s, paging share ", a.paging_share());
  CHECK(a.throughput() >= 0.9 * v.throughput());
  CHECK(a.fallback_drops == 0);
}
