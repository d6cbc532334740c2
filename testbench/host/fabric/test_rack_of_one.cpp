// A served rack against itself and against `mxtb sim` (docs/rack.md), through the host's board
// client, both in lockstep, answered by the RTL transactor:
// - a rack of one and `mxtb sim`: the same board, served by the rack's machinery (its window
//   thread, its bounded clock, its serve loop over boards) and by the emulator, answers the same
//   requests with the same values, cycle for cycle: the time at start, the circuits committed
//   through the firmware mailbox, the link states, messages and events after the same time;
// - a rack of two servers on one process and on two: the same requests to both servers (time
//   commands on either, an XPU killed on one) give the same answers.
#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "protocol/fabric_map.h"
#include "testbench/host/fabric/loopback_ports.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace mxtb;
using namespace mxtb::host::fabric;

namespace {

// Everything the host can see of a board, read the same way from each.
struct Seen {
  uint64_t time_ns = 0;
  std::vector<int> states, reasons;
  uint64_t messages = 0;
  uint32_t scoreboard_errors = 0, generation = 0;
  std::vector<EmuEventRecord> events;
};

Seen look(Board& b) {
  Seen s;
  s.time_ns = b.clock().now_ns();
  for (const LinkStatus& l : b.link_status()) {
    s.states.push_back(static_cast<int>(l.state));
    s.reasons.push_back(static_cast<int>(l.reason));
  }
  s.messages = b.messages_delivered();
  s.scoreboard_errors = b.scoreboard_errors();
  s.generation = b.active_generation();
  s.events = b.pop_events();
  return s;
}

void check_same(const Seen& sim, const Seen& rack, const char* when) {
  INFO(when);
  CHECK(rack.time_ns == sim.time_ns);
  CHECK(rack.states == sim.states);
  CHECK(rack.reasons == sim.reasons);
  CHECK(rack.messages == sim.messages);
  CHECK(rack.scoreboard_errors == sim.scoreboard_errors);
  CHECK(rack.generation == sim.generation);
  CHECK(rack.events.size() == sim.events.size());
  CHECK(rack.events == sim.events);
}

// `mxtb sim SIM_ARGS` and `mxtb rack --scenario RACK_FILE --serve`, driven alike through the
// host's board client: everything the host can see, equal at every step.
void rack_of_one_as_sim(const std::vector<std::string>& sim_args, const std::string& rack_file, const std::string& name) {
  const std::string out = std::string(MXTB_BINARY_DIR) + "/" + name;
  std::filesystem::create_directories(out);
  std::vector<std::string> sa = sim_args;
  sa.insert(sa.end(), {"--time-mode", "lockstep"});
  EmulatorProcess sim(MXTB_EXE, sa, out + "/sim.log");
  EmulatorProcess rack(MXTB_EXE, {"--scenario", rack_file, "--serve", "--time-mode", "lockstep", "--out", out + "/rack"}, out + "/rack.log",
                       std::chrono::seconds(120), "rack");
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(5000);
  Client cs(sim.target(), o), cr(rack.target(), o);
  Board bs(cs), br(cr);
  size_t events = 0;
  auto both = [&](const char* when) {
    const Seen s = look(bs), r = look(br);
    check_same(s, r, when);
    events += s.events.size();
    return s;
  };
  both("once listening: the firmware has initialised the controller");

  // The tenant's 2x2 torus on XPUs 0-3, committed through the firmware on both.
  protocol::ServerShape shape;
  const protocol::FabricMap torus = protocol::torus_map(shape, protocol::TorusPlacement{2, 2, {0, 1, 3, 2}});
  CHECK(bs.set_port_map(torus.port_target) == mailbox::FwStatus::Ok);
  CHECK(br.set_port_map(torus.port_target) == mailbox::FwStatus::Ok);
  both("after the commit");
  bs.clock().wait_ns(100'000);
  br.clock().wait_ns(100'000);
  const Seen s = both("100 us later: the lanes trained and carried traffic");
  // The comparison means something only if the board did something.
  int active = 0;
  for (int st : s.states) active += st == static_cast<int>(link::LinkState::Active);
  CHECK(active >= 16);
  CHECK(s.messages > 1000);
  CHECK(events > 16);
}

}  // namespace

TEST_CASE("a rack of one answers as mxtb sim does: the same time, circuits, link states, messages and events") {
  rack_of_one_as_sim({"--preset", "electro_optic", "--seed", "7"}, std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/rack/rack-1x1-bare.json",
                     "rack-of-one");
}

// A single server's failover scenario read by `mxtb rack` is a rack of one: the board `mxtb sim`
// serves for the same scenario (its settle, seed, traffic, extinction), bare.
TEST_CASE("a failover scenario served as a rack of one answers as mxtb sim serving it") {
  const std::string scenario = std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/failover/host-path.json";
  rack_of_one_as_sim({"--scenario", scenario}, scenario, "rack-of-one-failover-scenario");
}

TEST_CASE("a served rack in lockstep answers the same on one process and on two") {
  const std::string out = std::string(MXTB_BINARY_DIR) + "/rack-partition";
  std::filesystem::create_directories(out);
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(10000);
  std::vector<std::vector<Seen>> runs;
  for (const char* processes : {"1", "2"}) {
    const int port = test_ports::free_port_pair();
    EmulatorProcess rack(MXTB_EXE,
                         {"--scenario", std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/rack/rack-2x1.json", "--serve", "--time-mode",
                          "lockstep", "--processes", processes, "--listen", fmt::format("127.0.0.1:{}", port), "--out",
                          out + "/rack-" + processes},
                         out + "/rack-" + processes + ".log", std::chrono::seconds(120), "rack");
    Client c0(fmt::format("udp://127.0.0.1:{}", port), o), c1(fmt::format("udp://127.0.0.1:{}", port + 1), o);
    Board b0(c0), b1(c1);
    std::vector<Seen> seen;
    seen.push_back(look(b0));
    seen.push_back(look(b1));
    b1.clock().wait_ns(20'000);  // a time command to the second process's server
    seen.push_back(look(b0));
    seen.push_back(look(b1));
    b1.arm_fault(emu::FaultKind::KillXpu, 0, 0);
    b0.clock().wait_ns(50'000);  // and to the first's
    seen.push_back(look(b0));
    seen.push_back(look(b1));
    runs.push_back(seen);
  }
  REQUIRE(runs[0].size() == runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) {
    CAPTURE(i);
    check_same(runs[0][i], runs[1][i], "one process against two");
  }
  // The requests did something: the rack's tenant up, time moved, the killed XPU's lanes lost.
  CHECK(runs[0][2].time_ns >= runs[0][0].time_ns + 20'000);
  CHECK(runs[0][4].messages > runs[0][0].messages);
  // Server 0's tenant lanes (XPUs 0-3; the spare's lanes, without circuits, come and go by
  // themselves): those facing the dead XPU across the fibres lose it.
  int active_before = 0, active_after = 0;
  for (size_t l = 0; l < 16; ++l) {
    active_before += runs[0][2].states[l] == static_cast<int>(link::LinkState::Active);
    active_after += runs[0][4].states[l] == static_cast<int>(link::LinkState::Active);
  }
  MESSAGE("server 0's tenant lanes Active: " << active_before << " before the kill, " << active_after << " after");
  CHECK(active_after < active_before);
}
