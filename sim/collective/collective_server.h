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
    CollectiveRow row;
    row.op = spec.op;
    row.type = spec.type;
    row.size = spec.count * element_bytes(spec.type);
    row.count = spec.count;
    row.ranks = static_cast<int>(spec.ranks.size());
    row.rings = static_cast<int>(spec.rings.size());
    std::vector<LinkReport> before;
    for (int l : links_) before.push_back(sim_.link_report(l));
    // A lane moves one word a clock at best: far beyond that, something is stuck.
    const uint64_t words_per_lane = coll.payload_bytes_per_rank() / 8 / spec.rings.size() + 1;
    const uint64_t limit = 50 * words_per_lane + 200'000;
    sim_.set_lane_program(&coll);
    const uint64_t start = sim_.cycle();
    while (!coll.done() && sim_.cycle() - start < limit) sim_.step(std::min<uint64_t>(4096, limit));
    sim_.set_lane_program(nullptr);
    row.completed = coll.done();
    row.cycles = (row.completed ? coll.end_cycle() + 1 : sim_.cycle()) - start;
    row.time_us = static_cast<double>(row.cycles) * sim_.period_ns() / 1000;
    row.algbw_gbs = static_cast<double>(row.size) / (row.time_us * 1e3);
    row.busbw_gbs = row.algbw_gbs * busbw_factor(spec.op, row.ranks);
    row.wrong = row.completed ? coll.wrong() : spec.count * spec.ranks.size();
    row.framing_errors = coll.framing_errors();
    row.first_error = row.completed ? coll.first_error() : fmt::format("not done after {} cycles", row.cycles);
    row.backpressure = coll.backpressure();
    row.lane_words = coll.words_sent();
    for (size_t i = 0; i < links_.size(); ++i) {
      LinkReport now = sim_.link_report(links_[i]);
      row.replays += now.replays - before[i].replays;
      row.crc_errors += now.crc_errors - before[i].crc_errors;
      row.retrains += now.retrains - before[i].retrains;
    }
    return row;
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
