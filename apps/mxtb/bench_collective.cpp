#include "apps/mxtb/bench_collective.h"

#include "protocol/fabric_map.h"
#include "sim/mesh/photonic_mesh.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mxtb::app {

using namespace sim;

bool CollectiveBenchResult::passed() const {
  return !rows.empty() && std::all_of(rows.begin(), rows.end(), [](const CollectiveRow& r) { return r.exact(); });
}

CollectiveBenchResult run_collective_bench(const CollectiveBenchConfig& cfg) {
  if (static_cast<int>(cfg.port_map.size()) != cfg.shape.mesh_ports)
    throw std::invalid_argument(fmt::format("the port map has {} entries for a {}-port mesh", cfg.port_map.size(),
                                            cfg.shape.mesh_ports));
  if (cfg.sizes.empty()) throw std::invalid_argument("no size to run");
  if (!(cfg.lane_ber >= 0 && cfg.lane_ber < 1e-3))
    throw std::invalid_argument(fmt::format("lane BER {} is outside [0, 1e-3) (above, frames rarely survive)", cfg.lane_ber));
  Algorithm algorithm = cfg.algo == CollectiveBenchConfig::Algo::Chain ? Algorithm::Chain : Algorithm::Ring;
  std::vector<Ring> rings;
  if (algorithm == Algorithm::Ring) {
    try {
      rings = ring_plan(cfg.shape, cfg.port_map, cfg.tenant, cfg.both_directions);
    } catch (const std::invalid_argument&) {
      if (cfg.algo != CollectiveBenchConfig::Algo::Auto) throw;
      algorithm = Algorithm::Chain;
    }
  }
  if (algorithm == Algorithm::Chain) rings = chain_plan(cfg.shape, cfg.port_map, cfg.tenant);
  if (cfg.max_rings > 0 && static_cast<int>(rings.size()) > cfg.max_rings) rings.resize(static_cast<size_t>(cfg.max_rings));
  // Every spec is checked before the server is built: a bad size fails at once, and nothing runs.
  for (CollectiveOp op : cfg.ops)
    for (uint64_t size : cfg.sizes) {
      if (size % element_bytes(cfg.type))
        throw std::invalid_argument(fmt::format("size {} is not a multiple of {}'s {} bytes", size, to_string(cfg.type),
                                                element_bytes(cfg.type)));
      CollectiveSpec s{op, cfg.type, size / element_bytes(cfg.type), cfg.tenant, rings, cfg.seed, cfg.grain_words, algorithm};
      if (std::string why = check_spec(s, cfg.shape); !why.empty())
        throw std::invalid_argument(fmt::format("{} of {} bytes: {}", to_string(op), size, why));
    }

  CollectiveBenchResult res;
  res.config = cfg;
  CollectiveServer server(cfg.shape, cfg.seed, cfg.engine, cfg.settle, cfg.calibration_file);
  res.clock_mhz = server.sim().config().clock_mhz;
  res.lane_gbps = protocol::lane_gbps(res.clock_mhz);
  res.algorithm = algorithm;
  res.tx_lanes_per_rank = static_cast<int>(rings.size()) * (algorithm == Algorithm::Chain && cfg.tenant.size() > 2 ? 2 : 1);
  res.bringup_cycles = server.place(cfg.port_map, cfg.tenant);
  if (cfg.lane_ber > 0)
    for (int x : cfg.tenant)
      for (int l = 0; l < cfg.shape.lanes_per_xpu; ++l)
        if (cfg.port_map[static_cast<size_t>(x * cfg.shape.lanes_per_xpu + l)] >= 0)
          server.sim().set_lane_ber(x * cfg.shape.lanes_per_xpu + l, cfg.lane_ber);
  for (CollectiveOp op : cfg.ops)
    for (uint64_t size : cfg.sizes)
      res.rows.push_back(
          server.run({op, cfg.type, size / element_bytes(cfg.type), cfg.tenant, rings, cfg.seed ^ size, cfg.grain_words, algorithm}));
  return res;
}

bool SteeringBenchResult::passed() const {
  for (const auto& p : presets) {
    if (!p.tenant_phase.exact()) return false;
    for (const auto* rows : {&p.static_rows, &p.steered_rows})
      for (const auto& r : *rows)
        if (!r.exact()) return false;
  }
  return !presets.empty();
}

namespace {

// Where `gain(size)` (time saved by steering, us) crosses zero: interpolated linearly in size
// between measured sizes, else extrapolated from the two largest (times are linear in size there).
// -1 when the gain does not grow with size.
double crossing(const std::vector<uint64_t>& sizes, const std::vector<double>& gain, bool& extrapolated) {
  extrapolated = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (gain[i] <= 0) continue;
    if (i == 0) return static_cast<double>(sizes[0]);
    double s0 = static_cast<double>(sizes[i - 1]), s1 = static_cast<double>(sizes[i]);
    return s0 + (s1 - s0) * (-gain[i - 1]) / (gain[i] - gain[i - 1]);
  }
  if (sizes.size() < 2) return -1;
  size_t a = sizes.size() - 2, b = sizes.size() - 1;
  double slope = (gain[b] - gain[a]) / static_cast<double>(sizes[b] - sizes[a]);
  if (slope <= 0) return -1;
  extrapolated = true;
  return static_cast<double>(sizes[b]) - gain[b] / slope;
}

}  // namespace

SteeringBenchResult run_steering_bench(const SteeringBenchConfig& cfg) {
  if (cfg.sizes.empty()) throw std::invalid_argument("no size to run");
  if (cfg.pair.size() != 2 || cfg.pair[0] == cfg.pair[1])
    throw std::invalid_argument(fmt::format("the hot pair must be two XPUs, not {}", fmt::join(cfg.pair, ",")));
  for (int x : cfg.pair)
    if (std::find(cfg.tenant.begin(), cfg.tenant.end(), x) == cfg.tenant.end())
      throw std::invalid_argument(fmt::format("hot pair XPU {} is not in the tenant {}", x, fmt::join(cfg.tenant, ",")));
  const std::vector<int> torus = static_torus_map(cfg.shape);
  // The pair's lanes all to each other, the tenant's other XPUs' likewise.
  std::vector<int> steered = protocol::ring_map(cfg.shape, cfg.pair).port_target;
  std::vector<int> others;
  for (int x : cfg.tenant)
    if (x != cfg.pair[0] && x != cfg.pair[1]) others.push_back(x);
  if (others.size() >= 2) {
    std::vector<int> rest = protocol::ring_map(cfg.shape, others).port_target;
    for (size_t p = 0; p < steered.size(); ++p)
      if (rest[p] >= 0) steered[p] = rest[p];
  }
  const std::vector<Ring> tenant_rings = ring_plan(cfg.shape, torus, cfg.tenant);
  const std::vector<Ring> static_rings = ring_plan(cfg.shape, torus, cfg.pair);
  const std::vector<Ring> steered_rings = ring_plan(cfg.shape, steered, cfg.pair);
  for (uint64_t size : cfg.sizes) {
    CollectiveSpec s{CollectiveOp::AllReduce, cfg.type, size / element_bytes(cfg.type), cfg.pair, steered_rings, cfg.seed};
    std::string why = size % element_bytes(cfg.type) ? fmt::format("not a multiple of {}'s {} bytes", to_string(cfg.type),
                                                                    element_bytes(cfg.type))
                                                     : check_spec(s, cfg.shape);
    if (!why.empty()) throw std::invalid_argument(fmt::format("size {}: {}", size, why));
  }

  SteeringBenchResult res;
  res.config = cfg;
  for (SettlePreset preset : cfg.presets) {
    CollectiveServer server(cfg.shape, cfg.seed, cfg.engine, preset, cfg.calibration_file);
    SteeringPreset p;
    p.preset = preset;
    server.place(torus, cfg.tenant);
    // The job's all-reduce phase that precedes, on the torus: the same for both, run and checked.
    const uint64_t per_rank = std::max<uint64_t>(cfg.sizes.front() / element_bytes(cfg.type) / cfg.tenant.size(), 64);
    p.tenant_phase = server.run({CollectiveOp::AllReduce, cfg.type, per_rank * cfg.tenant.size(), cfg.tenant, tenant_rings, cfg.seed});
    for (uint64_t size : cfg.sizes)
      p.static_rows.push_back(server.run({CollectiveOp::AllReduce, cfg.type, size / element_bytes(cfg.type), cfg.pair,
                                          static_rings, cfg.seed ^ size}));
    const double us_per_cycle = server.sim().period_ns() / 1000;
    p.to_pair_us = static_cast<double>(server.place(steered, cfg.tenant)) * us_per_cycle;
    for (uint64_t size : cfg.sizes)
      p.steered_rows.push_back(server.run({CollectiveOp::AllReduce, cfg.type, size / element_bytes(cfg.type), cfg.pair,
                                           steered_rings, cfg.seed ^ size}));
    p.back_us = static_cast<double>(server.place(torus, cfg.tenant)) * us_per_cycle;
    std::vector<double> once, round;
    for (size_t i = 0; i < cfg.sizes.size(); ++i) {
      double saved = p.static_rows[i].time_us - p.steered_rows[i].time_us;
      once.push_back(saved - p.to_pair_us);
      round.push_back(saved - p.to_pair_us - p.back_us);
    }
    p.break_even_bytes = crossing(cfg.sizes, once, p.extrapolated);
    p.round_trip_break_even_bytes = crossing(cfg.sizes, round, p.round_trip_extrapolated);
    res.presets.push_back(std::move(p));
  }
  return res;
}

nlohmann::json to_json(const SteeringBenchResult& r) {
  nlohmann::json presets = nlohmann::json::array();
  for (const auto& p : r.presets) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < p.static_rows.size(); ++i)
      rows.push_back({{"size", p.static_rows[i].size},
                      {"static_us", p.static_rows[i].time_us},
                      {"steered_us", p.steered_rows[i].time_us},
                      {"steered_with_reconfiguration_us", p.steered_rows[i].time_us + p.to_pair_us},
                      {"wrong", p.static_rows[i].wrong + p.steered_rows[i].wrong}});
    presets.push_back({{"preset", to_string(p.preset)},
                       {"tau_ns", preset_tau_ns(p.preset)},
                       {"tenant_phase", {{"size", p.tenant_phase.size}, {"time_us", p.tenant_phase.time_us},
                                         {"wrong", p.tenant_phase.wrong}}},
                       {"reconfigure_to_pair_us", p.to_pair_us},
                       {"reconfigure_back_us", p.back_us},
                       {"break_even_bytes", p.break_even_bytes},
                       {"break_even_extrapolated", p.extrapolated},
                       {"round_trip_break_even_bytes", p.round_trip_break_even_bytes},
                       {"round_trip_break_even_extrapolated", p.round_trip_extrapolated},
                       {"rows", rows}});
  }
  return {{"tenant", r.config.tenant}, {"pair", r.config.pair}, {"passed", r.passed()}, {"presets", presets}};
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
          {"algorithm", to_string(r.algorithm)},
          {"lane_ber", r.config.lane_ber},
          {"grain_words", r.config.grain_words},
          {"bringup_cycles", r.bringup_cycles},
          {"seed", r.config.seed},
          {"passed", r.passed()},
          {"rows", rows}};
}

EpochModel fit_epoch(double b1, double t1, double b2, double t2) {
  if (b1 == b2) throw std::invalid_argument(fmt::format("fit_epoch: two points at the same batch {}", b1));
  EpochModel m;
  m.comm_s = (t1 - t2) / (1 / b1 - 1 / b2);
  m.compute_s = t1 - m.comm_s / b1;
  return m;
}

}  // namespace mxtb::app
