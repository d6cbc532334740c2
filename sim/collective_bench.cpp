#include "sim/collective_bench.h"

#include "firmware/ocs_firmware.h"
#include "sim/photonic_mesh.h"
#include "sim/server_bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mxtb::sim {

bool CollectiveBenchResult::passed() const {
  for (const auto& r : rows)
    if (!r.completed || r.wrong || r.framing_errors) return false;
  return !rows.empty();
}

namespace {

constexpr uint64_t kBringUpLimitCycles = 3'000'000;

std::vector<int> circuit_links(const CollectiveBenchConfig& c) {
  std::vector<int> links;
  for (int x : c.tenant)
    for (int l = 0; l < c.shape.lanes_per_xpu; ++l) {
      int a = x * c.shape.lanes_per_xpu + l;
      if (c.port_map[static_cast<size_t>(a)] >= 0) links.push_back(a);
    }
  return links;
}

}  // namespace

CollectiveBenchResult run_collective_bench(const CollectiveBenchConfig& cfg) {
  if (static_cast<int>(cfg.port_map.size()) != cfg.shape.mesh_ports)
    throw std::invalid_argument(fmt::format("the port map has {} entries for a {}-port mesh", cfg.port_map.size(),
                                            cfg.shape.mesh_ports));
  if (cfg.sizes.empty()) throw std::invalid_argument("no size to run");
  std::vector<Ring> rings = ring_plan(cfg.shape, cfg.port_map, cfg.tenant, cfg.both_directions);
  if (cfg.max_rings > 0 && static_cast<int>(rings.size()) > cfg.max_rings) rings.resize(static_cast<size_t>(cfg.max_rings));
  // Every spec is checked before the server is built: a bad size fails at once, and nothing runs.
  for (CollectiveOp op : cfg.ops)
    for (uint64_t size : cfg.sizes) {
      if (size % element_bytes(cfg.type))
        throw std::invalid_argument(fmt::format("size {} is not a multiple of {}'s {} bytes", size, to_string(cfg.type),
                                                element_bytes(cfg.type)));
      CollectiveSpec s{op, cfg.type, size / element_bytes(cfg.type), cfg.tenant, rings, cfg.seed};
      if (std::string why = check_spec(s, cfg.shape); !why.empty())
        throw std::invalid_argument(fmt::format("{} of {} bytes: {}", to_string(op), size, why));
    }

  CollectiveBenchResult res;
  res.config = cfg;
  ServerConfig sc;
  sc.name = "collective";
  sc.seed = cfg.seed;
  sc.shape = cfg.shape;
  sc.mesh.ports = cfg.shape.mesh_ports;
  sc.mesh.settle = cfg.settle;
  sc.traffic.load = 0;  // the lanes carry the collectives only
  sc.engine = cfg.engine;
  ServerSim sim(sc);
  res.clock_mhz = sc.clock_mhz;
  res.lane_gbps = 64 * sc.clock_mhz / 1000;
  res.tx_lanes_per_rank = static_cast<int>(rings.size());
  LoopHal hal(sim);
  firmware::FirmwareConfig fc;
  fc.shape = cfg.shape;
  MeshCalibration cal = load_calibration(cfg.calibration_file);
  fc.calibration = cal.elements;
  fc.settle_cycles = static_cast<uint32_t>(std::max(4.0, std::ceil(5 * sim.mesh().tau_ns() / sim.period_ns())));
  firmware::OcsFirmware fw(hal, fc);
  std::string why;
  if (fw.init(&why) != mailbox::FwStatus::Ok) throw std::runtime_error("collective: firmware init: " + why);
  const uint64_t c0 = sim.cycle();
  if (auto s = fw.set_port_map(cfg.port_map, &why); s != mailbox::FwStatus::Ok)
    throw std::runtime_error(fmt::format("collective: committing the tenant's circuits: {}: {}", mailbox::describe(s), why));
  const std::vector<int> links = circuit_links(cfg);
  auto tenant_active = [&] {
    return std::all_of(links.begin(), links.end(), [&](int l) { return sim.link_state(l) == link::LinkState::Active; });
  };
  while (!tenant_active()) {
    if (sim.cycle() - c0 > kBringUpLimitCycles) throw std::runtime_error("collective: the tenant's circuits did not all train");
    sim.step(1000);
  }
  res.bringup_cycles = sim.cycle() - c0;

  for (CollectiveOp op : cfg.ops)
    for (uint64_t size : cfg.sizes) {
      CollectiveSpec spec{op, cfg.type, size / element_bytes(cfg.type), cfg.tenant, rings, cfg.seed ^ size};
      RingCollective coll(spec, cfg.shape);
      CollectiveRow row;
      row.op = op;
      row.type = cfg.type;
      row.size = size;
      row.count = spec.count;
      row.ranks = static_cast<int>(cfg.tenant.size());
      row.rings = static_cast<int>(rings.size());
      std::vector<LinkReport> before;
      for (int l : links) before.push_back(sim.link_report(l));
      // A lane moves one word a clock at best: far beyond that, something is stuck.
      const uint64_t words_per_lane = coll.payload_bytes_per_rank() / 8 / rings.size() + 1;
      const uint64_t limit = 50 * words_per_lane + 200'000;
      sim.set_collective(&coll);
      const uint64_t start = sim.cycle();
      while (!coll.done() && sim.cycle() - start < limit) sim.step(std::min<uint64_t>(4096, limit));
      sim.set_collective(nullptr);
      row.completed = coll.done();
      row.cycles = (row.completed ? coll.end_cycle() + 1 : sim.cycle()) - start;
      row.time_us = static_cast<double>(row.cycles) * sim.period_ns() / 1000;
      row.algbw_gbs = static_cast<double>(size) / (row.time_us * 1e3);
      row.busbw_gbs = row.algbw_gbs * busbw_factor(op, row.ranks);
      row.wrong = row.completed ? coll.wrong() : spec.count * cfg.tenant.size();
      row.framing_errors = coll.framing_errors();
      row.first_error = row.completed ? coll.first_error() : fmt::format("not done after {} cycles", row.cycles);
      row.backpressure = coll.backpressure();
      row.lane_words = coll.words_sent();
      for (size_t i = 0; i < links.size(); ++i) {
        LinkReport now = sim.link_report(links[i]);
        row.replays += now.replays - before[i].replays;
        row.crc_errors += now.crc_errors - before[i].crc_errors;
        row.retrains += now.retrains - before[i].retrains;
      }
      res.rows.push_back(row);
    }
  return res;
}

nlohmann::json to_json(const CollectiveBenchResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows)
    rows.push_back({{"op", to_string(x.op)},
                    {"type", to_string(x.type)},
                    {"size", x.size},
                    {"count", x.count},
                    {"ranks", x.ranks},
                    {"rings", x.rings},
                    {"cycles", x.cycles},
                    {"time_us", x.time_us},
                    {"algbw_gbs", x.algbw_gbs},
                    {"busbw_gbs", x.busbw_gbs},
                    {"wrong", x.wrong},
                    {"framing_errors", x.framing_errors},
                    {"first_error", x.first_error},
                    {"replays", x.replays},
                    {"crc_errors", x.crc_errors},
                    {"retrains", x.retrains},
                    {"backpressure_lane_cycles", x.backpressure},
                    {"lane_words", x.lane_words},
                    {"completed", x.completed}});
  return {{"tenant", r.config.tenant},
          {"clock_mhz", r.clock_mhz},
          {"lane_gbps", r.lane_gbps},
          {"tx_lanes_per_rank", r.tx_lanes_per_rank},
          {"bringup_cycles", r.bringup_cycles},
          {"seed", r.config.seed},
          {"passed", r.passed()},
          {"rows", rows}};
}

}  // namespace mxtb::sim
