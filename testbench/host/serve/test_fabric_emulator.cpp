// EmulatorFabricLinks against the emulated server (`mxtb sim` as a child on loopback): the base
// placement, extra circuits between the serving pair, giving them back, and the measured delays.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "host/fabric/board.h"
#include "protocol/board_map.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "host/serve/fabric_ipbus.h"

using namespace mxtb::host::serve;

TEST_CASE("EmulatorFabricLinks: live circuits follow the committed maps; delays are measured") {
  mxtb::host::fabric::EmulatorProcess emu(MXTB_EXE, {"--preset", "thermo_optic", "--time-mode", "lockstep", "--seed", "5"});
  mxtb::host::fabric::ClientOptions opts;
  opts.describe = mxtb::protocol::describe;
  mxtb::host::fabric::Client client(emu.target(), opts);
  mxtb::host::fabric::Board board(client);
  EmulatorFabricLinks f(board);

  double placed = f.place_base();
  CHECK(placed > 0);
  CHECK(f.port_map() == EmulatorFabricLinks::base_map({}));
  // What the controller holds is the base map: one circuit 0-1 (4 modeled lanes), two 0-3.
  CHECK(f.emulated_circuits(0, 1) == 1);
  CHECK(f.emulated_circuits(1, 0) == 1);
  CHECK(f.emulated_circuits(0, 3) == 2);
  CHECK(f.emulated_circuits(2, 3) == 1);
  CHECK(f.live_circuits(0, 1, 0.0) == 4);

  // Three more lanes each (12 modeled circuits): live from now + the measured delay.
  const uint64_t t0 = board.clock().now_ns();
  double live_from = f.request_extra_circuits(0, 1, 12, 10.0);
  const uint64_t t1 = board.clock().now_ns();
  double d = live_from - 10.0;
  CHECK(d > 0);
  CHECK(d <= static_cast<double>(t1 - t0) * 1e-9 + 1e-12);  // no longer than the emulator took
  MESSAGE("extra circuits: ", d * 1e6, " us of emulator time (thermo-optic)");
  CHECK(f.emulated_circuits(0, 1) == 4);
  CHECK(f.emulated_circuits(0, 3) == 0);
  CHECK(f.live_circuits(0, 1, 10.0) == 4);          // not yet, in the serving run's time
  CHECK(f.live_circuits(0, 1, live_from) == 16);    // all four lanes
  CHECK(f.request_extra_circuits(0, 1, 4, 11.0) == 11.0);  // no lane left: nothing moves

  // Giving them back restores the base map, again measured.
  double back = f.release(0, 1, 20.0);
  CHECK(back > 20.0);
  CHECK(f.port_map() == EmulatorFabricLinks::base_map({}));
  CHECK(f.emulated_circuits(0, 1) == 1);
  CHECK(f.emulated_circuits(0, 3) == 2);
  CHECK(f.live_circuits(0, 1, 30.0) == 4);
  CHECK(f.release(0, 1, 40.0) == 40.0);  // nothing held
  REQUIRE(f.measured_delays_s().size() == 3);
  for (double x : f.measured_delays_s()) CHECK(x > 0);

  // Partial request: one emulated circuit for up to 4 modeled lanes.
  double one = f.request_extra_circuits(0, 1, 3, 50.0);
  CHECK(one > 50.0);
  CHECK(f.emulated_circuits(0, 1) == 2);
  CHECK(f.live_circuits(0, 1, one) == 8);
  CHECK(f.release(0, 1, 60.0) > 60.0);
  CHECK(f.emulated_circuits(0, 1) == 1);
}
