// The fast engine must be the reference engine's simulation, clock for clock, on any number of
// threads: the same link transitions, the same controller event log as the firmware reads it,
// the same traffic counters, the same IPbus replies from the board top's UDP port in the same
// clocks, through a bring-up, injected faults and a reconfiguration of the thermo-optic mesh
// (elements moving: re-traced light, garbled outputs, photodiode reads).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "firmware/ocs_firmware.h"
#include "server_datagrams.h"
#include "apps/mxtb/bench_server.h"
#include "sim/server/loop_hal.h"

#include <mxtb/emu_regs.h>
#include <mxtb/ocs_regs.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

using namespace mxtb;
using namespace mxtb::sim;
using namespace mxtb::app;  // the benchmarks' bodies (apps/mxtb/bench_*.h)

namespace {

struct Outcome {
  std::vector<std::string> lines;  // one per transition, link report, event: a mismatch names itself
  uint64_t windows = 0, rollbacks = 0;
};

// Brings the server up with every lane carrying a circuit, injects faults under traffic, then
// re-places the tenant. Everything observable goes into the outcome.
Outcome run(ServerEngine engine, int threads, uint64_t seed, bool traced = false, int xpus = 5) {
  ServerConfig cfg;
  cfg.shape.xpus = xpus;
  cfg.seed = seed;
  cfg.engine = engine;
  cfg.threads = threads;
  cfg.trace_capable = traced;
  ServerSim sim(cfg);
  LoopHal hal(sim);
  firmware::FirmwareConfig fc;
  fc.shape = cfg.shape;
  fc.calibration = load_calibration(std::string(MXTB_SOURCE_DIR) + "/traces/calibration/mesh32.json").elements;
  fc.settle_cycles = 2000;  // shorter than the thermo-optic mesh needs: verify sees elements still moving
  firmware::OcsFirmware fw(hal, fc);
  std::string why;
  REQUIRE(fw.init(&why) == mailbox::FwStatus::Ok);
  fw.set_port_map(bench_port_map(cfg.shape, {0, 1, 2, 3}), &why);
  auto run_to = [&](uint64_t cycle) {
    while (sim.cycle() < cycle) sim.step(cycle - sim.cycle());
  };
  Outcome out;
  // A host's packets into the top's UDP port: the controller's clock and event log, the block
  // RAM, and the emulator's block: its ID answered within the clock, its time 500 clocks late
  // (the fast engine speculates meanwhile).
  sim.set_emulator_responder([](const EmuAccess& a) -> std::optional<std::pair<bool, uint32_t>> {
    if (!a.write && a.offset == emu::reg::id::kOffset) return std::pair<bool, uint32_t>{true, 0xC0DE0000u};
    return std::nullopt;
  });
  uint32_t packet = 0;
  auto host = [&] {
    using namespace mxtb::sim::test;
    const uint32_t n = ++packet;
    std::vector<uint32_t> req{control_header(),
                              tx_header(kRead, 2, 1), ocs::reg::time_lo::kOffset / 4,
                              tx_header(kNonIncRead, 4, 2), ocs::reg::event_count::kOffset / 4,
                              tx_header(kRmwSum, 1, 3), 0x20000 + n % 8, n,
                              tx_header(kNonIncRead, 3, 4), 0x10000 + emu::reg::id::kOffset / 4,
                              tx_header(kRead, 1, 5), 0x10000 + emu::reg::time_ns_lo::kOffset / 4};
    EmulatorBlock late;
    late.delay_cycles = 500;
    DatagramOutcome o = run_datagram(sim, to_bytes(req), late);
    std::string line = fmt::format("datagram {} at {} took {} kind {} fault {}:", n, sim.cycle(), o.cycles, o.kind, o.fault);
    if (o.reply)
      for (uint32_t w : to_words(*o.reply)) line += fmt::format(" {:08x}", w);
    out.lines.push_back(line);
  };
  const uint64_t t0 = sim.cycle();
  host();
  run_to(t0 + 9000);
  host();
  // Faults at odd clocks, so that a window boundary that slipped would show.
  sim.set_lane_ber(3, 2e-4);
  run_to(t0 + 10003);
  sim.dark_lane(7, 301);
  host();
  run_to(t0 + 11007);
  sim.swap_lanes(9, 10);
  run_to(t0 + 12011);
  sim.swap_lanes(9, 10);
  sim.set_lane_ber(3, 0);
  if (traced) sim.start_waveform(fmt::format("{}/server-engines-{}.fst", MXTB_BINARY_DIR, seed));
  run_to(t0 + 12500);
  if (traced) sim.stop_waveform();
  sim.kill_xpu(4);
  fw.set_port_map(bench_port_map(cfg.shape, {0, 1, 3, 2}), &why);
  host();
  run_to(sim.cycle() + 6000);
  host();

  out.lines.push_back(fmt::format("cycle {} dac {} pd {} messages {} errors {}", sim.cycle(), sim.dac_writes(), sim.pd_reads(),
                                  sim.messages_delivered(), sim.scoreboard_errors()));
  for (const auto& t : sim.transitions())
    out.lines.push_back(fmt::format("transition {} link {} {}->{} {}", t.cycle, t.link, static_cast<int>(t.from),
                                    static_cast<int>(t.to), static_cast<int>(t.reason)));
  for (int i = 0; i < sim.links(); ++i) {
    LinkReport r = sim.link_report(i);
    out.lines.push_back(fmt::format("link {} state {} reason {} peer {}.{} tx {} rx {} crc {} replays {} retrains {} sent {} "
                                    "delivered {} errors {} skipped {} resyncs {}",
                                    i, static_cast<int>(r.state), static_cast<int>(r.reason), r.peer.xpu, r.peer.lane,
                                    r.frames_tx, r.frames_rx, r.crc_errors, r.replays, r.retrains, r.messages_sent,
                                    r.messages_delivered, r.scoreboard_errors, r.skipped_words, r.resyncs));
  }
  for (const auto& e : fw.events()) out.lines.push_back(fmt::format("event {} {:#x}", e.cycle, e.info));
  ServerProfile p = sim.profile();
  out.windows = p.windows;
  out.rollbacks = p.rollbacks;
  return out;
}

void check_same(const Outcome& a, const Outcome& b) {
  REQUIRE(a.lines.size() > 100);  // a run that did something
  for (size_t i = 0; i < std::min(a.lines.size(), b.lines.size()); ++i) {
    INFO("line " << i);
    REQUIRE(a.lines[i] == b.lines[i]);
  }
  CHECK(a.lines.size() == b.lines.size());
}

}  // namespace

TEST_CASE("the fast engine simulates what the reference engine does, clock for clock") {
  for (uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    Outcome ref = run(ServerEngine::Reference, 1, seed);
    Outcome fast = run(ServerEngine::Fast, 1, seed);
    check_same(ref, fast);
  }
}

TEST_CASE("the fast engine gives the same run on 1, 2, 4 and 8 threads") {
  for (uint64_t seed : {1, 4}) {
    INFO("seed " << seed);
    Outcome one = run(ServerEngine::Fast, 1, seed);
    for (int threads : {2, 4, 8}) {
      INFO("threads " << threads);
      Outcome many = run(ServerEngine::Fast, threads, seed);
      check_same(one, many);
      CHECK(many.windows > 0);
      CHECK(many.rollbacks > 0);  // the speculation really was undone somewhere
    }
  }
}

TEST_CASE("with waveform-capable models and a waveform window, the fast engine still matches") {
  Outcome ref = run(ServerEngine::Reference, 1, 5);
  Outcome fast = run(ServerEngine::Fast, 1, 5, true);
  check_same(ref, fast);
}

TEST_CASE("the widest server (8 XPUs, 32 links) runs the same on 1 and 3 threads") {
  Outcome one = run(ServerEngine::Fast, 1, 6, false, 8);
  Outcome three = run(ServerEngine::Fast, 3, 6, false, 8);
  check_same(one, three);
  CHECK(three.rollbacks > 0);
}

TEST_CASE("bad engine settings are refused") {
  ServerConfig cfg;
  cfg.threads = 0;
  CHECK_THROWS_WITH_AS(ServerSim{cfg}, "server: threads must be in [1, 64], got 0", std::invalid_argument);
  cfg.threads = 2;
  cfg.engine = ServerEngine::Reference;
  CHECK_THROWS_WITH_AS(ServerSim{cfg}, "server: the reference engine runs on one thread", std::invalid_argument);
  CHECK(server_engine_from_string("fast") == ServerEngine::Fast);
  CHECK(server_engine_from_string("reference") == ServerEngine::Reference);
  CHECK_FALSE(server_engine_from_string("quick"));
  ServerConfig wide;
  wide.shape.xpus = 8;
  wide.engine = ServerEngine::Reference;
  CHECK_THROWS_WITH_AS(ServerSim{wide}, "server: the 32-link controller runs on the fast engine, without waveforms",
                       std::invalid_argument);
  ServerConfig odd;
  odd.shape.xpus = 6;
  CHECK_THROWS_WITH_AS(ServerSim{odd},
                       "server: 6 XPUs x 4 lanes on a 32-port mesh: the verilated controller is built for 20 or 32 links on 32 ports",
                       std::invalid_argument);
  CHECK(server_partition_bounds(20, 1) == std::vector<int>{0, 20});
  auto b = server_partition_bounds(20, 4);
  REQUIRE(b.size() == 5);
  CHECK(b.front() == 0);
  CHECK(b.back() == 20);
  CHECK(b[1] - b[0] < b[2] - b[1]);  // thread 0 also runs the controller and the mesh
  CHECK_THROWS_AS(server_partition_bounds(4, 5), std::invalid_argument);
}
