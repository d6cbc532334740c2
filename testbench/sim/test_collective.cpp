// Collectives on the emulated server (sim/collective/collective.h, apps/mxtb/bench_collective.h): the ring plan
// from a circuit map, the checks on a spec, the algorithm over a perfect wire (where a corrupted,
// lost or extra word must show), and the real thing: every op and type over the RTL links of a
// tenant the firmware placed, element-exact, identical on both engines.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "apps/mxtb/bench_collective.h"
#include "apps/mxtb/bench_server.h"

#include <doctest/doctest.h>

#include <deque>
#include <functional>
#include <string>

using namespace mxtb;
using namespace mxtb::sim;
using namespace mxtb::app;  // the benchmarks' bodies (apps/mxtb/bench_*.h)

namespace {

protocol::ServerShape shape5() { return protocol::ServerShape{}; }

// The 2x2 torus on XPUs 0-3, ring order 0 -> 1 -> 3 -> 2 (positions (0,0), (1,0), (1,1), (0,1)).
std::vector<int> torus_map() { return bench_port_map(shape5(), {0, 1, 2, 3}); }
const std::vector<int> kRing4{0, 1, 3, 2};

CollectiveSpec spec(CollectiveOp op, DataType t, uint64_t count) {
  CollectiveSpec s;
  s.op = op;
  s.type = t;
  s.count = count;
  s.ranks = kRing4;
  s.rings = ring_plan(shape5(), torus_map(), kRing4);
  s.seed = 7;
  return s;
}

const std::string kCalibration = std::string(MXTB_SOURCE_DIR) + "/traces/calibration/mesh32.json";

// The 4-XPU tenant on the torus, as the benches place it.
CollectiveBenchConfig bench_config() {
  CollectiveBenchConfig cfg;
  cfg.port_map = torus_map();
  cfg.tenant = kRing4;
  cfg.calibration_file = kCalibration;
  return cfg;
}

// Every hop as a wire of `delay` clocks; `tamper` may change, drop (return false) or keep a word.
struct Wire {
  uint64_t cycle = 0;
  uint64_t run(RingCollective& c, const std::function<bool(int, uint64_t&, uint64_t)>& tamper, uint64_t limit = 1'000'000,
               uint64_t delay = 3) {
    struct InFlight {
      uint64_t at;
      int rx;
      uint64_t data;
      bool last;
    };
    std::deque<InFlight> wire;
    std::vector<int> rx_of(static_cast<size_t>(shape5().links()), -1);
    for (const Ring& r : c.spec().rings)
      for (const RingHop& h : r.hops) {
        rx_of[static_cast<size_t>(h.tx_link)] = h.rx_link;
        if (c.spec().algorithm == Algorithm::Chain) rx_of[static_cast<size_t>(h.rx_link)] = h.tx_link;  // the broadcast back
      }
    uint64_t n = 0;
    for (; !c.done() && n < limit; ++n, ++cycle) {
      while (!wire.empty() && wire.front().at <= cycle) {
        c.deliver(wire.front().rx, wire.front().data, wire.front().last, cycle);
        wire.pop_front();
      }
      for (int l = 0; l < shape5().links(); ++l) {
        if (rx_of[static_cast<size_t>(l)] < 0) continue;
        RingCollective::Drive d = c.drive(l);
        if (!d.valid) continue;
        c.fire(l);
        uint64_t data = d.data;
        if (tamper(l, data, c.words_sent())) wire.push_back({cycle + delay, rx_of[static_cast<size_t>(l)], data, d.last});
      }
    }
    return n;
  }
};

}  // namespace

TEST_CASE("ring_plan: the 2x2 torus gives four rings, every tenant lane sending once and receiving once") {
  std::vector<Ring> rings = ring_plan(shape5(), torus_map(), kRing4);
  REQUIRE(rings.size() == 4);  // two circuits per hop, both directions
  std::vector<int> tx(20, 0), rx(20, 0);
  for (const Ring& r : rings) {
    REQUIRE(r.hops.size() == 4);
    for (size_t p = 0; p < r.hops.size(); ++p) {
      CHECK(r.hops[p].tx_link / 4 == r.order[p]);
      CHECK(r.hops[p].rx_link / 4 == r.order[(p + 1) % 4]);
      ++tx[static_cast<size_t>(r.hops[p].tx_link)];
      ++rx[static_cast<size_t>(r.hops[p].rx_link)];
    }
  }
  for (int l = 0; l < 16; ++l) {
    CHECK_MESSAGE(tx[static_cast<size_t>(l)] == 1, "link ", l);
    CHECK_MESSAGE(rx[static_cast<size_t>(l)] == 1, "link ", l);
  }
  CHECK(std::string(check_spec(spec(CollectiveOp::AllReduce, DataType::F32, 1024), shape5())).empty());
  // Two XPUs: one ring per circuit between them, each circuit used both ways.
  CHECK(ring_plan(shape5(), torus_map(), {0, 1}).size() == 2);
  // XPU 4 has no circuit to the tenant.
  CHECK_THROWS_WITH_AS(ring_plan(shape5(), torus_map(), {0, 1, 4}), "no circuit from XPU 1 to XPU 4: the ring cannot be formed",
                       std::invalid_argument);
}

TEST_CASE("check_spec names what is wrong") {
  CHECK(check_spec(spec(CollectiveOp::AllReduce, DataType::F32, 1022), shape5()) ==
        "count 1022 is not a positive multiple of the 4 ranks");
  CHECK(check_spec(spec(CollectiveOp::AllReduce, DataType::F32, 24), shape5()) ==
        "count 24 gives 3 lane words per rank's chunk, fewer than the 4 rings");
  CollectiveSpec s = spec(CollectiveOp::AllReduce, DataType::F32, 1024);
  s.ranks = {0, 1, 3, 3};
  CHECK(check_spec(s, shape5()) == "XPU 3 is two ranks");
  s = spec(CollectiveOp::AllReduce, DataType::F32, 1024);
  s.rings.push_back(s.rings.front());
  CHECK(check_spec(s, shape5()).find("already carries another ring") != std::string::npos);
  CHECK_THROWS_AS(RingCollective(s, shape5()), std::invalid_argument);
}

TEST_CASE("over a perfect wire every op and type is exact, and the data dependencies pipeline") {
  for (auto op : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather, CollectiveOp::AllToAll})
    for (auto t : {DataType::F32, DataType::BF16})
      for (uint64_t count : {1024ull, 1028ull, 20000ull}) {  // 1028: a chunk's last word half full (fp32)
        CAPTURE(to_string(op));
        CAPTURE(to_string(t));
        CAPTURE(count);
        RingCollective c(spec(op, t, count), shape5());
        Wire w;
        w.run(c, [](int, uint64_t&, uint64_t) { return true; });
        REQUIRE(c.done());
        CHECK(c.wrong() == 0);
        CHECK(c.framing_errors() == 0);
        // Each rank sends steps x chunk: 2(n-1) steps for all-reduce, n-1 for reduce-scatter and
        // all-gather; all-to-all forwards n(n-1)/2 blocks.
        const uint64_t blocks = op == CollectiveOp::AllReduce ? 6 : op == CollectiveOp::AllToAll ? 6 : 3;
        CHECK(c.payload_bytes_per_rank() == blocks * count / 4 * element_bytes(t));
      }
}

TEST_CASE("over a perfect wire a corrupted, lost or extra word is caught") {
  const uint64_t count = 4096;
  SUBCASE("one word's bits flipped: exactly the elements downstream of it are wrong") {
    RingCollective c(spec(CollectiveOp::AllReduce, DataType::F32, count), shape5());
    Wire w;
    bool done = false;
    w.run(c, [&](int, uint64_t& data, uint64_t sent) {
      if (!done && sent == 100) {  // a reduce-scatter word: its sum goes wrong on every rank
        data ^= 1ull << 20;
        done = true;
      }
      return true;
    });
    REQUIRE(c.done());
    CHECK(c.wrong() == 4);  // one element (the low half of the word), on all four ranks
    CHECK(c.framing_errors() == 0);
  }
  SUBCASE("a word lost: the collective never completes") {
    RingCollective c(spec(CollectiveOp::AllGather, DataType::BF16, count), shape5());
    Wire w;
    w.run(c, [&](int, uint64_t&, uint64_t sent) { return sent != 50; }, 200000);
    CHECK(!c.done());
  }
  SUBCASE("all-to-all: a word corrupted on its way is wrong at its destination only") {
    RingCollective c(spec(CollectiveOp::AllToAll, DataType::F32, count), shape5());
    Wire w;
    bool done = false;
    uint64_t corrupted_link = 0;
    w.run(c, [&](int link, uint64_t& data, uint64_t) {
      // A word well into the exchange, both of its elements: whether it is delivered on this hop or
      // forwarded, it lands in one block of one rank.
      if (!done && c.words_sent() > 1536) {
        data ^= (1ull << 5) | (1ull << 40);
        done = true;
        corrupted_link = static_cast<uint64_t>(link);
      }
      return true;
    });
    REQUIRE(done);
    REQUIRE(c.done());
    CHECK(c.wrong() == 2);  // two elements of one block, at one rank
    CHECK(c.framing_errors() == 0);
    CAPTURE(corrupted_link);
  }
  SUBCASE("a word on a lane that carries no ring") {
    RingCollective c(spec(CollectiveOp::AllReduce, DataType::F32, count), shape5());
    c.deliver(17, 0, false, 0);
    CHECK(c.framing_errors() == 1);
    CHECK(c.first_error() == "link 17 received a word but carries no ring");
  }
}

TEST_CASE("collectives over the RTL links of a tenant the firmware placed: exact, and the engines agree") {
  CollectiveBenchConfig cfg = bench_config();
  cfg.ops = {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather, CollectiveOp::AllToAll};
  cfg.sizes = {4096, 65536};
  for (auto t : {DataType::F32, DataType::BF16}) {
    cfg.type = t;
    CollectiveBenchResult r = run_collective_bench(cfg);
    REQUIRE(r.rows.size() == 8);
    CHECK(r.tx_lanes_per_rank == 4);
    for (const auto& row : r.rows) {
      CAPTURE(to_string(row.op));
      CAPTURE(row.size);
      CHECK(row.completed);
      CHECK(row.wrong == 0);
      CHECK(row.framing_errors == 0);
      CHECK(row.retrains == 0);
      CHECK(row.busbw_gbs > 0);
      // Each rank sends on 4 lanes of 10 Gb/s: 5 GB/s is the bound no collective can pass.
      CHECK(row.busbw_gbs < 5.0);
    }
    CHECK(r.passed());
    if (t == DataType::F32) {
      // The reference engine runs the same cycles.
      CollectiveBenchConfig ref = cfg;
      ref.engine = ServerEngine::Reference;
      ref.ops = {CollectiveOp::AllReduce};
      ref.sizes = {4096};
      CollectiveBenchResult rr = run_collective_bench(ref);
      REQUIRE(rr.rows.size() == 1);
      CHECK(rr.rows[0].cycles == r.rows[0].cycles);
      CHECK(rr.rows[0].wrong == 0);
    }
  }
}

TEST_CASE("a bad size is refused before anything runs, naming it") {
  CollectiveBenchConfig cfg = bench_config();
  cfg.sizes = {4098};
  CHECK_THROWS_WITH_AS(run_collective_bench(cfg), "size 4098 is not a multiple of float's 4 bytes", std::invalid_argument);
  cfg.sizes = {4104};
  CHECK_THROWS_WITH_AS(run_collective_bench(cfg), "all_reduce of 4104 bytes: count 1026 is not a positive multiple of the 4 ranks",
                       std::invalid_argument);
}

TEST_CASE("steering a hot pair between phases: exact on both maps, the reconfiguration measured, a break-even found") {
  SteeringBenchConfig cfg;
  cfg.calibration_file = kCalibration;
  cfg.sizes = {65536, 262144};
  cfg.presets = {SettlePreset::ElectroOptic};
  SteeringBenchResult r = run_steering_bench(cfg);
  REQUIRE(r.presets.size() == 1);
  const SteeringPreset& p = r.presets[0];
  CHECK(r.passed());
  CHECK(p.tenant_phase.completed);
  CHECK(p.tenant_phase.ranks == 4);
  REQUIRE(p.static_rows.size() == 2);
  REQUIRE(p.steered_rows.size() == 2);
  CHECK(p.static_rows[0].rings == 2);   // the torus gives the pair two circuits
  CHECK(p.steered_rows[0].rings == 4);  // steered: all four
  // Twice the lanes: close to half the time once the size hides the pipeline's fill.
  CHECK(p.steered_rows[1].time_us * 1.8 < p.static_rows[1].time_us);
  // The reconfiguration (routing's modelled 20 us, staging, program, settle, verify, retrain) costs
  // more than the small size saves and less than the large one does.
  CHECK(p.to_pair_us > 20);
  CHECK(p.back_us > 20);
  CHECK(p.break_even_bytes > 65536);
  CHECK(p.break_even_bytes < 262144);
  CHECK(!p.extrapolated);
  CHECK(p.round_trip_break_even_bytes > p.break_even_bytes);

  cfg.pair = {0, 4};
  CHECK_THROWS_WITH_AS(run_steering_bench(cfg), "hot pair XPU 4 is not in the tenant 0,1,3,2", std::invalid_argument);
  cfg.pair = {0, 1};
  cfg.sizes = {65540};
  CHECK_THROWS_WITH_AS(run_steering_bench(cfg), "size 65540: count 16385 is not a positive multiple of the 2 ranks",
                       std::invalid_argument);
}

TEST_CASE("bit errors on every lane: the link layer replays, the collective is slower and still exact") {
  CollectiveBenchConfig cfg = bench_config();
  cfg.sizes = {65536};
  CollectiveBenchResult clean = run_collective_bench(cfg);
  cfg.lane_ber = 1e-5;
  CollectiveBenchResult noisy = run_collective_bench(cfg);
  REQUIRE(clean.rows.size() == 1);
  REQUIRE(noisy.rows.size() == 1);
  CHECK(clean.rows[0].replays == 0);
  CHECK(clean.rows[0].crc_errors == 0);
  CHECK(noisy.rows[0].crc_errors > 0);
  CHECK(noisy.rows[0].replays > 0);
  CHECK(noisy.rows[0].completed);
  CHECK(noisy.rows[0].wrong == 0);
  CHECK(noisy.rows[0].time_us > clean.rows[0].time_us);
  cfg.lane_ber = 0.01;
  CHECK_THROWS_WITH_AS(run_collective_bench(cfg), "lane BER 0.01 is outside [0, 1e-3) (above, frames rarely survive)",
                       std::invalid_argument);
}

TEST_CASE("a coarser pipeline grain waits for whole grains: slower when a step's message is short, same result") {
  CollectiveBenchConfig cfg = bench_config();
  cfg.sizes = {4096};
  CollectiveBenchResult fine = run_collective_bench(cfg);
  cfg.grain_words = 64;  // a 4 KiB all-reduce's step message on a ring is 32 words: every step waits for all of it
  CollectiveBenchResult coarse = run_collective_bench(cfg);
  CHECK(fine.passed());
  CHECK(coarse.passed());
  CHECK(coarse.rows[0].cycles > fine.rows[0].cycles + 6 * 8);  // six steps, each waiting at least a frame's latency
  cfg.grain_words = 0;
  CHECK_THROWS_WITH_AS(run_collective_bench(cfg), "all_reduce of 4096 bytes: a pipeline grain of 0 words", std::invalid_argument);
}

TEST_CASE("a chain where the circuits close no ring: three XPUs of the 2x2 torus") {
  const std::vector<int> line{0, 1, 3};  // 3 -> 0 is the torus's diagonal: no circuit
  CHECK_THROWS_AS(ring_plan(shape5(), torus_map(), line), std::invalid_argument);
  std::vector<Ring> streams = chain_plan(shape5(), torus_map(), line);
  REQUIRE(streams.size() == 2);  // two circuits per hop
  CHECK(streams[0].order == line);
  CHECK(streams[1].order == std::vector<int>{3, 1, 0});
  // Every lane of the line's circuits sends once and receives once (reduce one way, broadcast back).
  std::vector<int> tx(20, 0), rx(20, 0);
  for (const Ring& r : streams)
    for (const RingHop& h : r.hops) {
      ++tx[static_cast<size_t>(h.tx_link)], ++rx[static_cast<size_t>(h.rx_link)];
      ++tx[static_cast<size_t>(h.rx_link)], ++rx[static_cast<size_t>(h.tx_link)];
    }
  int used = 0;
  for (int l = 0; l < 20; ++l) {
    CHECK(tx[static_cast<size_t>(l)] == rx[static_cast<size_t>(l)]);
    CHECK(tx[static_cast<size_t>(l)] <= 1);
    used += tx[static_cast<size_t>(l)];
  }
  CHECK(used == 8);  // XPU 0's and 3's two lanes to 1, XPU 1's four
  CHECK_THROWS_WITH_AS(chain_plan(shape5(), torus_map(), {0, 3}), "no circuit from XPU 0 to XPU 3: the chain cannot be formed",
                       std::invalid_argument);

  auto chain_spec = [&](DataType t, uint64_t count) {
    CollectiveSpec c;
    c.type = t;
    c.count = count;
    c.ranks = line;
    c.rings = streams;
    c.seed = 3;
    c.algorithm = Algorithm::Chain;
    return c;
  };
  for (auto t : {DataType::F32, DataType::BF16})
    for (uint64_t count : {999ull, 3000ull}) {
      CAPTURE(count);
      RingCollective c(chain_spec(t, count), shape5());
      Wire w;
      w.run(c, [](int, uint64_t&, uint64_t) { return true; });
      REQUIRE(c.done());
      CHECK(c.wrong() == 0);
      CHECK(c.framing_errors() == 0);
    }
  // A word of the reduce corrupted: its sum is wrong on every rank, nothing else.
  RingCollective c(chain_spec(DataType::F32, 3000), shape5());
  Wire w;
  w.run(c, [](int, uint64_t& data, uint64_t sent) {
    if (sent == 10) data ^= 1ull << 52;  // the high element's bits
    return true;
  });
  REQUIRE(c.done());
  CHECK(c.wrong() == 3);
  CollectiveSpec bad = chain_spec(DataType::F32, 3000);
  bad.op = CollectiveOp::AllGather;
  CHECK(check_spec(bad, shape5()) == "the chain runs all_reduce only, not all_gather");

  // Over the RTL links: the torus's chain against the steered ring, exact, the chain at its limit.
  CollectiveBenchConfig cfg = bench_config();
  cfg.tenant = line;
  cfg.sizes = {65532};
  CollectiveBenchResult torus = run_collective_bench(cfg);  // auto: no ring, so the chain
  CHECK(torus.algorithm == Algorithm::Chain);
  CHECK(torus.passed());
  cfg.port_map = protocol::ring_map(shape5(), line).port_target;
  CollectiveBenchResult steered = run_collective_bench(cfg);
  CHECK(steered.algorithm == Algorithm::Ring);
  CHECK(steered.passed());
  CHECK(steered.rows[0].busbw_gbs > 1.4 * torus.rows[0].busbw_gbs);
}

TEST_CASE("finetuning epochs: compute + comm / batch through two points, and the prototype's third batch predicted") {
  using mxtb::app::fit_epoch;
  // Exact on the model's own curve, whichever two batches.
  const mxtb::app::EpochModel m = fit_epoch(2, 3.0 + 100.0 / 2, 8, 3.0 + 100.0 / 8);
  CHECK(m.compute_s == doctest::Approx(3.0));
  CHECK(m.comm_s == doctest::Approx(100.0));
  CHECK(m.at(4) == doctest::Approx(28.0));
  CHECK_THROWS_AS(fit_epoch(4, 1, 4, 2), std::invalid_argument);
  // The prototype's Table 1: fitted at batch 2 and 4, batch 8 comes out near its measurement
  // (the model leaves out overlap and per-step overheads, so not exactly).
  const mxtb::app::FinetuneTable t;
  const auto base = fit_epoch(t.batch[0], t.baseline_s[0], t.batch[1], t.baseline_s[1]);
  const auto mlux = fit_epoch(t.batch[0], t.morphlux_s[0], t.batch[1], t.morphlux_s[1]);
  CHECK(base.at(t.batch[2]) == doctest::Approx(t.baseline_s[2]).epsilon(0.02));
  CHECK(mlux.at(t.batch[2]) == doctest::Approx(t.morphlux_s[2]).epsilon(0.06));
  CHECK(base.compute_s > 0);
  CHECK(mlux.compute_s > 0);
  // Its communication term shrank by less than its NCCL all-reduce's 1.79x.
  CHECK(base.comm_s / mlux.comm_s > 1.4);
  CHECK(base.comm_s / mlux.comm_s < t.allreduce_ratio);
}
