// A rack of one against `mxtb sim` (docs/rack.md, "A rack of one"): the same board, served by the
// rack's machinery (its window thread, its bounded clock, its serve loop over boards) and by the
// emulator, must answer the same requests with the same values, cycle for cycle: the same time at
// start, the same circuits committed through the firmware mailbox, the same link states, messages
// and events after the same simulated time. Both in lockstep, both answered by the RTL transactor.
#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "protocol/fabric_map.h"

#include <doctest/doctest.h>

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

}  // namespace

TEST_CASE("a rack of one answers as mxtb sim does: the same time, circuits, link states, messages and events") {
  const std::string out = std::string(MXTB_BINARY_DIR) + "/rack-of-one";
  std::filesystem::create_directories(out);
  EmulatorProcess sim(MXTB_EXE, {"--preset", "electro_optic", "--seed", "7", "--time-mode", "lockstep"}, out + "/sim.log");
  EmulatorProcess rack(MXTB_EXE,
                       {"--scenario", std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/rack/rack-1x1-bare.json", "--serve",
                        "--time-mode", "lockstep", "--out", out + "/rack"},
                       out + "/rack.log", std::chrono::seconds(120), "rack");
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
