// The emulated server with its firmware on the plain loop, ready to place a tenant's circuits and
// run collectives on them with real data (sim/collective/collective.h), each timed in emulated
// cycles and checked element for element: what `mxtb collective`'s benchmarks (apps/mxtb/
// bench_collective.h) and the tests of a tenant's job run on.
#pragma once

#include "firmware/ocs_firmware.h"
#include "sim/collective/collective.h"
#include "sim/mesh/photonic_mesh.h"
#include "sim/server/loop_hal.h"
#include "sim/server/server_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim {
// The electrical server the photonic fabric replaces: its fixed wiring, a 2x2 torus on XPUs 0-3
// (the spare unwired), as a port map.
std::vector<int> static_torus_map(const protocol::ServerShape& shape);

struct CollectiveRow {
  CollectiveOp op;
  DataType type;
  uint64_t size = 0, count = 0;
  int ranks = 0, rings = 0;
  uint64_t cycles = 0;
  double time_us = 0, algbw_gbs = 0, busbw_gbs = 0;  // GB/s = 1e9 bytes/s, as nccl-tests
  uint64_t wrong = 0, framing_errors = 0;
  std::string first_error;
  // The link layers of the rings' lanes during this collective.
  uint64_t replays = 0, crc_errors = 0, retrains = 0;
  uint64_t backpressure = 0;  // lane-cycles a ready word waited for its link layer (credits, replays, framing)
  uint64_t lane_words = 0;    // words the lanes carried
  bool completed = false;
  bool exact() const { return completed && !wrong && !framing_errors; }
};

constexpr uint64_t kCollectiveBringUpLimitCycles = 3'000'000;

// A collective's row once it ended or was given up: started at cycle `start`, given up at cycle
// `now` if not done; its rings' link layers' counters from `before` (when it started) to `after`.
CollectiveRow collective_row(const RingCollective& coll, uint64_t start, uint64_t now, double period_ns,
                             const std::vector<LinkReport>& before, const std::vector<LinkReport>& after);
// A lane moves one word a clock at best: past this many cycles a collective is stuck.
uint64_t collective_cycle_limit(const RingCollective& coll);

// The emulated server with its firmware, ready to place circuits and run collectives on them (the
// benchmarks below, and the tests of a job of collectives, sim/collective/tenant_job.h).
class CollectiveServer {
 public:
  CollectiveServer(const protocol::ServerShape& shape, uint64_t seed, ServerEngine engine, SettlePreset settle,
                   const std::string& calibration_file)
      : shape_(shape), sim_(server_config(shape, seed, engine, settle)), hal_(sim_),
        fw_(hal_, firmware_config(shape, sim_, calibration_file)) {
    std::string why;
    if (fw_.init(&why) != mailbox::FwStatus::Ok) throw std::runtime_error("collective: firmware init: " + why);
  }
  ServerSim& sim() { return sim_; }

  // Commits `port_map` through the firmware and waits until every circuit of `xpus` is Active:
  // returns the cycles from the request to the last circuit Active (routing, staging, program,
  // settle, verify, retrain).
  uint64_t place(const std::vector<int>& port_map, const std::vector<int>& xpus) {
    const uint64_t c0 = sim_.cycle();
    std::string why;
    if (auto s = fw_.set_port_map(port_map, &why); s != mailbox::FwStatus::Ok)
      throw std::runtime_error(fmt::format("collective: committing the circuits: {}: {}", mailbox::describe(s), why));
    links_.clear();
    for (int x : xpus)
      for (int l = 0; l < shape_.lanes_per_xpu; ++l) {
        int a = x * shape_.lanes_per_xpu + l;
        if (port_map[static_cast<size_t>(a)] >= 0) links_.push_back(a);
      }
    auto active = [&] {
      return std::all_of(links_.begin(), links_.end(), [&](int l) { return sim_.link_state(l) == link::LinkState::Active; });
    };
    while (!active()) {
      if (sim_.cycle() - c0 > kCollectiveBringUpLimitCycles) throw std::runtime_error("collective: the circuits did not all train");
      sim_.step(256);
    }
    return sim_.cycle() - c0;
  }

  CollectiveRow run(const CollectiveSpec& spec) {
    RingCollective coll(spec, shape_);
    std::vector<LinkReport> before, after;
    for (int l : links_) before.push_back(sim_.link_report(l));
    const uint64_t limit = collective_cycle_limit(coll);
    sim_.set_lane_program(&coll);
    const uint64_t start = sim_.cycle();
    while (!coll.done() && sim_.cycle() - start < limit) sim_.step(std::min<uint64_t>(4096, limit));
    sim_.set_lane_program(nullptr);
    for (int l : links_) after.push_back(sim_.link_report(l));
    return collective_row(coll, start, sim_.cycle(), sim_.period_ns(), before, after);
  }

 private:
  static ServerConfig server_config(const protocol::ServerShape& shape, uint64_t seed, ServerEngine engine, SettlePreset settle) {
    ServerConfig sc;
    sc.name = "collective";
    sc.seed = seed;
    sc.shape = shape;
    sc.mesh.ports = shape.mesh_ports;
    sc.mesh.settle = settle;
    sc.traffic.load = 0;  // the lanes carry the collectives only
    sc.engine = engine;
    return sc;
  }
  static firmware::FirmwareConfig firmware_config(const protocol::ServerShape& shape, const ServerSim& sim,
                                                  const std::string& calibration_file) {
    firmware::FirmwareConfig fc;
    fc.shape = shape;
    fc.calibration = load_calibration(calibration_file).elements;
    fc.settle_cycles = static_cast<uint32_t>(std::max(4.0, std::ceil(5 * sim.mesh().tau_ns() / sim.period_ns())));
    return fc;
  }

  protocol::ServerShape shape_;
  ServerSim sim_;
  LoopHal hal_;
  firmware::OcsFirmware fw_;
  std::vector<int> links_;
};

}  // namespace mxtb::sim
