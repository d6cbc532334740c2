// The firmware against the verilated controller when the controller refuses a commit, as the
// register map documents: staging and COMMIT answer SLVERR while a commit or the safe sweep runs,
// and COMMIT while safe. The host watchdog may expire at any moment (a failover staging its
// backup on a loaded machine did, regress seed 9990): the firmware must answer Safe, not die with
// an uncaught bus error that takes the emulator down. A commit it did not start is waited out.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "firmware/ocs_firmware.h"
#include "apps/mxtb/bench_server.h"
#include "sim/server/loop_hal.h"

#include <doctest/doctest.h>
#include <mxtb/ocs_regs.h>

#include <string>
#include <vector>

using namespace mxtb;
using namespace mxtb::sim;
using namespace mxtb::app;  // the benchmarks' bodies (apps/mxtb/bench_*.h)
namespace reg = mxtb::ocs::reg;
using mailbox::FwStatus;

namespace {

struct Bench {
  ServerConfig cfg;
  ServerSim sim;
  LoopHal hal;
  firmware::OcsFirmware fw;

  static ServerConfig config() {
    ServerConfig c;
    c.shape.xpus = 5;
    c.seed = 7;
    return c;
  }
  static firmware::FirmwareConfig fw_config(const ServerConfig& c) {
    firmware::FirmwareConfig fc;
    fc.shape = c.shape;
    fc.calibration = load_calibration(std::string(MXTB_SOURCE_DIR) + "/traces/calibration/mesh32.json").elements;
    fc.settle_cycles = 2000;
    return fc;
  }
  Bench() : cfg(config()), sim(cfg), hal(sim), fw(hal, fw_config(cfg)) {
    std::string why;
    REQUIRE(fw.init(&why) == FwStatus::Ok);
  }
  uint32_t status() { return hal.read32(reg::status::kOffset); }
  void run(uint64_t cycles) {
    const uint64_t until = sim.cycle() + cycles;
    while (sim.cycle() < until) sim.step(until - sim.cycle());
  }
};

}  // namespace

TEST_CASE("a commit refused because the watchdog expired answers Safe, and the firmware lives on") {
  Bench b;
  std::string why;
  REQUIRE(b.fw.set_port_map(bench_port_map(b.cfg.shape, {0, 1, 2, 3}), &why) == FwStatus::Ok);
  REQUIRE(b.fw.active_generation() != 0);
  b.hal.write32(reg::watchdog_timeout::kOffset, 500);
  b.run(5000);  // no kick: the watchdog expires and the controller sweeps to its safe state
  REQUIRE((b.status() & reg::status::kSafeMask) != 0);

  FwStatus s = FwStatus::Ok;
  CHECK_NOTHROW(s = b.fw.set_port_map(bench_port_map(b.cfg.shape, {0, 1, 3, 2}), &why));
  CHECK(s == FwStatus::Safe);
  CHECK(why.find("safe state") != std::string::npos);
  CHECK(b.fw.active_generation() == 0);  // the expiry's events were taken: nothing is believed active

  // Once the host clears the safe state, the same firmware commits again.
  b.hal.write32(reg::watchdog_timeout::kOffset, 0);
  b.hal.write32(reg::safe_clear::kOffset, reg::safe_clear::kClearMask);
  b.run(100);
  REQUIRE((b.status() & reg::status::kSafeMask) == 0);
  CHECK(b.fw.set_port_map(bench_port_map(b.cfg.shape, {0, 1, 3, 2}), &why) == FwStatus::Ok);
  CHECK(b.fw.active_generation() != 0);
}

TEST_CASE("a commit that finds the controller busy with another waits it out and commits") {
  Bench b;
  std::string why;
  REQUIRE(b.fw.set_port_map(bench_port_map(b.cfg.shape, {0, 1, 2, 3}), &why) == FwStatus::Ok);
  const uint32_t gen = b.fw.active_generation();
  // Someone else (a host writing the registers itself) commits the staged tables again as a new
  // generation with a long settle: the controller stays busy past the firmware's routing time
  // (route_cost_ns, 20 us), so its first staging write is refused.
  b.hal.write32(reg::settle_cycles::kOffset, 20000);
  b.hal.write32(reg::commit::kOffset, (gen + 100) & 0xFFFF);
  REQUIRE((b.status() & reg::status::kBusyMask) != 0);

  FwStatus s = FwStatus::Rejected;
  CHECK_NOTHROW(s = b.fw.set_port_map(bench_port_map(b.cfg.shape, {0, 1, 3, 2}), &why));
  CHECK(s == FwStatus::Ok);
  CHECK(b.sim.cycle() > 20000);  // it waited the other commit out
  CHECK((b.status() & reg::status::kBusyMask) == 0);
  const uint32_t active = (b.status() & reg::status::kActiveGenMask) >> reg::status::kActiveGenShift;
  CHECK(active == b.fw.active_generation());
  CHECK(active != ((gen + 100) & 0xFFFF));  // the firmware's map is the one active now
}

// StageMap and CommitStaged, the halves of SetPortMap a rack-wide placement uses (stage on every
// board, then commit on each): staging changes nothing active, the commit lands what was staged,
// and a commit with nothing staged (none yet, already committed, replaced by a backup or a refused
// map) is refused as NotStaged, committing nothing.
TEST_CASE("stage_map stages without committing; commit_staged commits exactly what was staged, once") {
  Bench b;
  std::string why;
  auto active = [&] {
    std::vector<int> m;
    for (int p = 0; p < b.cfg.shape.mesh_ports; ++p) {
      const uint32_t v = b.hal.read32(reg::active_map::addr(static_cast<uint32_t>(p)));
      m.push_back(v & reg::active_map::kValidMask ? static_cast<int>(v & reg::active_map::kTargetMask) : -1);
    }
    return m;
  };
  const std::vector<int> first = bench_port_map(b.cfg.shape, {0, 1, 2, 3});
  const std::vector<int> second = bench_port_map(b.cfg.shape, {0, 1, 3, 2});
  REQUIRE(b.fw.set_port_map(first, &why) == FwStatus::Ok);
  const uint32_t gen = b.fw.active_generation();

  CHECK(b.fw.commit_staged(&why) == FwStatus::NotStaged);  // the placement committed what it staged
  CHECK(b.fw.stage_map(second, &why) == FwStatus::Ok);
  b.run(2000);
  CHECK(active() == first);  // staged only
  CHECK(b.fw.active_generation() == gen);
  CHECK(b.fw.commit_staged(&why) == FwStatus::Ok);
  CHECK(active() == second);
  CHECK(b.fw.active_generation() == gen + 1);
  CHECK(b.fw.commit_staged(&why) == FwStatus::NotStaged);  // once
  CHECK(b.fw.active_generation() == gen + 1);

  // A backup armed after staging replaces what was staged; staging disarms a backup.
  REQUIRE(b.fw.stage_map(first, &why) == FwStatus::Ok);
  REQUIRE(b.fw.arm_backup(2, 4, bench_port_map(b.cfg.shape, {0, 1, 4, 3}), &why) == FwStatus::Ok);
  CHECK(b.fw.commit_staged(&why) == FwStatus::NotStaged);
  CHECK(active() == second);
  REQUIRE(b.fw.armed_xpu() == 2);
  REQUIRE(b.fw.stage_map(first, &why) == FwStatus::Ok);
  CHECK_FALSE(b.fw.armed_xpu().has_value());

  // A map that does not route is refused and leaves nothing to commit.
  std::vector<int> twice = first;
  twice[1] = twice[0];  // two inputs onto one output
  CHECK(b.fw.stage_map(twice, &why) == FwStatus::BadMap);
  CHECK(b.fw.commit_staged(&why) == FwStatus::NotStaged);
  CHECK(active() == second);
}
